#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/core/dof_kind.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/peer_control.hpp"
#include "common/records/recorder.hpp"
#include "common/transport/link.hpp"
#include "experiment.pb.h"
#include "node_physical/site/physical_substructure.hpp"
#include "results.pb.h"
#include "smith_predictor/parts/frame_smith.hpp"
#include "smith_predictor/parts/modified_smith.hpp"

namespace rths {

struct PhysicalNodeStats {
  PacketCounters packets;
  std::uint64_t steps = 0;
  std::uint64_t held_steps = 0;          // steps with no new command (last one held or extrapolated)
  std::uint64_t extrapolated_steps = 0;  // of those, steps whose target was extrapolated
  std::uint64_t commands_used = 0;
};

// A physical site (docs/architecture.md §3, physical step): receives targets, runs its actuator channels, and
// returns the Smith part-2 model error with the measurements. Knows nothing of the structure.
class PhysicalNode {
 public:
  struct Setup {
    std::string name;
    std::uint32_t site_id = 0;
    double rate_hz = 1024.0;
    std::size_t max_rows = 0;
    // What to do in a step without a new command (docs/architecture.md §3 physical step 1), and for how many
    // steps at most a target is extrapolated before it is held.
    config::HoldPolicy hold = config::HOLD;
    std::int64_t max_extrapolated_steps = 0;
    // The motion part 2 feeds its model: the target (default) or the measured displacement.
    config::Part2Input part2_input = config::TARGET;
    // What each channel moves (config channel_kinds): the units of its columns. Empty: translations.
    std::vector<DofKind> channel_kinds;
  };

  // part2 holds one model per channel for the modified Smith predictor, or is empty when the
  // numerical side compensates without it (classic Smith, none): the error sent is then zero.
  // frame_part2, when given, is the site's one model of all channels instead (part2 then empty).
  // keys are the session's (the handshake's, or virtual_session_keys() in virtual time).
  PhysicalNode(Setup setup, const SessionKeys& keys, Link& link, const Clock& clock,
               std::unique_ptr<PhysicalSubstructure> substructure,
               std::vector<std::unique_ptr<ModifiedSmithPart2>> part2,
               std::unique_ptr<FrameSmithPart2> frame_part2 = nullptr);

  void step(std::int64_t j);

  [[nodiscard]] const Recorder& recorder() const { return recorder_; }
  [[nodiscard]] const PhysicalSubstructure& substructure() const { return *substructure_; }
  [[nodiscard]] const PhysicalNodeStats& stats() const { return stats_; }
  [[nodiscard]] const std::string& name() const { return setup_.name; }
  // Stop/abort received from the numerical node, and its reason.
  [[nodiscard]] PeerControl peer_control() const { return peer_control_; }
  [[nodiscard]] const std::string& peer_reason() const { return peer_reason_; }
  // Arrival of the last sign of life, a new authentic packet (for the peer-loss timeout); -1 before any.
  [[nodiscard]] std::int64_t last_valid_receive_ns() const { return last_valid_receive_ns_; }
  // The site must stop for a reason of its own: its interlock tripped (trip() says what) or its
  // plant driver failed (stop_reason() says why, in both cases).
  [[nodiscard]] bool tripped() const { return substructure_->stopped(); }
  [[nodiscard]] const InterlockTrip& trip() const { return substructure_->interlock().trip(); }
  [[nodiscard]] std::string stop_reason() const { return substructure_->stop_reason(); }
  // Tells the numerical node this site is stopping (safe stop, limit breach, signal).
  void send_abort(const std::string& reason);

 private:
  bool drain();

  Setup setup_;
  Link& link_;
  const Clock& clock_;
  std::unique_ptr<PhysicalSubstructure> substructure_;
  std::vector<std::unique_ptr<ModifiedSmithPart2>> part2_;
  std::unique_ptr<FrameSmithPart2> frame_part2_;
  PacketCodec codec_;
  Recorder recorder_;
  PhysicalNodeStats stats_;
  double dt_s_;

  bool have_command_ = false;
  std::int64_t held_run_ = 0;  // consecutive steps without a new command
  std::uint64_t command_step_ = 0;
  std::int64_t command_sent_ns_ = 0;
  std::int64_t command_received_ns_ = 0;
  std::int64_t last_valid_receive_ns_ = -1;
  PeerControl peer_control_ = PeerControl::kNone;
  std::string peer_reason_;
  std::vector<InterfaceMotion> targets_;
  std::vector<Measurement> measured_;
  std::vector<double> errors_;
  std::vector<double> part2_displacement_;  // the frame model's input and measured forces, per channel
  std::vector<double> part2_force_;
  std::vector<double> row_;
  std::array<std::byte, kMaxDatagramBytes> rx_{};
};

// A site's node parts that come from its config: the part-2 models (modified Smith only, one per
// channel; none where the site has a frame prediction model), the frame model's part 2 (modified
// Smith with compensation.frame_prediction only, else null) and the node setup (hold, part-2 input).
std::vector<std::unique_ptr<ModifiedSmithPart2>> make_part2(const config::Site& site);
std::unique_ptr<FrameSmithPart2> make_frame_part2(const config::Site& site);
PhysicalNode::Setup make_site_setup(const config::Experiment& experiment, const config::Site& site,
                                    std::uint32_t site_id, std::size_t max_rows);

// J1-J3 of every channel from the node's record (target against measured).
std::vector<TrackingMetrics> site_tracking(const PhysicalNode& node, double rate_hz);

// A multi-axial site's actuators as its summary reports them (SiteSummary.actuators): per actuator
// the stroke's J1-J3 from the node's record, the site controller's report and the plant's. Empty
// when the channels are the actuators. After the run.
google::protobuf::RepeatedPtrField<results::Channel> site_actuators(const PhysicalNode& node, double rate_hz);

}  // namespace rths
