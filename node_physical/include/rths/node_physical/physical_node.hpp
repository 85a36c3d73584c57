#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rths/common/link.hpp"
#include "rths/common/packet_codec.hpp"
#include "rths/common/recorder.hpp"
#include "rths/node_physical/physical_substructure.hpp"
#include "rths/smith_predictor/modified_smith.hpp"

namespace rths {

struct PhysicalNodeStats {
  PacketCounters packets;
  std::uint64_t steps = 0;
  std::uint64_t held_steps = 0;  // steps with no new command (last one held)
  std::uint64_t commands_used = 0;
};

// A physical site (DESIGN §3, physical step): receives targets, runs its actuator channels, and
// returns the Smith part-2 model error with the measurements. Knows nothing of the structure.
class PhysicalNode {
 public:
  struct Setup {
    std::string name;
    std::uint64_t session = 0;
    std::uint32_t site_id = 0;
    double rate_hz = 1024.0;
    std::size_t max_rows = 0;
  };

  // part2 holds one model per channel for the modified Smith predictor, or is empty when the
  // numerical side compensates without it (classic Smith, none): the error sent is then zero.
  PhysicalNode(Setup setup, Link& link, const Clock& clock, std::unique_ptr<PhysicalSubstructure> substructure,
               std::vector<std::unique_ptr<ModifiedSmithPart2>> part2);

  void step(std::int64_t j);

  [[nodiscard]] const Recorder& recorder() const { return recorder_; }
  [[nodiscard]] const PhysicalNodeStats& stats() const { return stats_; }
  [[nodiscard]] const std::string& name() const { return setup_.name; }

 private:
  bool drain();

  Setup setup_;
  Link& link_;
  const Clock& clock_;
  std::unique_ptr<PhysicalSubstructure> substructure_;
  std::vector<std::unique_ptr<ModifiedSmithPart2>> part2_;
  PacketCodec codec_;
  Recorder recorder_;
  PhysicalNodeStats stats_;
  double dt_s_;

  std::uint64_t sequence_ = 0;
  std::uint64_t newest_sequence_ = 0;
  bool have_command_ = false;
  std::uint64_t command_step_ = 0;
  std::int64_t command_sent_ns_ = 0;
  std::vector<InterfaceMotion> targets_;
  std::vector<Measurement> measured_;
  std::vector<double> errors_;
  std::vector<double> row_;
  std::array<std::byte, kMaxDatagramBytes> rx_{};
};

}  // namespace rths
