#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "common/core/dof_kind.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/peer_control.hpp"
#include "common/realtime/latency_histogram.hpp"
#include "common/records/recorder.hpp"
#include "common/transport/link.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"
#include "node_physical/site/physical_substructure.hpp"
#include "smith_predictor/parts/force_estimator.hpp"
#include "smith_predictor/parts/frame_smith.hpp"

namespace rths {

// The run-time delay guard of a remote site (config Site.delay_guard, docs/stability.md): the
// round-trip budget planned at the start, and what the node measures against it every step.
struct DelayGuard {
  bool enabled = false;
  double budget_s = 0.0;  // infinity: no delay destabilises the site's loop
  double warn_s = 0.0;    // warn_fraction of the budget
  double smoothing_s = 0.1;
  int limiting_mode = 0;
  double model_error = 0.0;
  // Measured: the round trip smoothed with smoothing_s (-1 before the first feedback), its largest,
  // and the steps at which it first passed warn_s and budget_s (-1: never).
  double smoothed_s = -1.0;
  double smoothed_max_s = 0.0;
  std::int64_t warned_step = -1;
  std::int64_t exceeded_step = -1;
};

// One physical site as the numerical node sees it: remote behind a link with a force estimator
// per channel, or local (in process) with its substructure stepped directly.
struct NumericalSite {
  std::string name;
  std::uint32_t site_id = 0;
  Eigen::MatrixXd influence;  // Lambda_s, dofs x channels
  // What each channel moves (config channel_kinds): the units of its columns. Empty: translations.
  std::vector<DofKind> channel_kinds;

  // Remote sites.
  Link* link = nullptr;
  std::vector<std::unique_ptr<ForceEstimator>> estimators;
  // Instead of the estimators, for a site whose channels share one frame prediction model.
  std::unique_ptr<FrameSmithPart1> frame_estimator;
  DelayGuard delay_guard;
  // Local sites.
  std::unique_ptr<PhysicalSubstructure> local;

  [[nodiscard]] bool is_local() const { return local != nullptr; }
  [[nodiscard]] Eigen::Index channels() const { return influence.cols(); }
};

// Timing of the exchanges with one site, from the four timestamps of each feedback: t1 command
// sent, t2 command received at the site (site clock), t3 feedback sent (site clock), t4 feedback
// received here. The clock offset is the NTP estimate of the exchange with the shortest round trip.
struct SiteTiming {
  LatencyHistogram round_trip;  // (t4 - t1) - (t3 - t2): the network's share of the round trip
  LatencyHistogram forward;     // t2 - t1 - offset
  LatencyHistogram backward;    // t4 - t3 + offset
  LatencyHistogram age_at_use;  // how old the newest feedback is when a step uses it (now - t4)
  std::int64_t best_round_trip_ns = -1;
  std::int64_t last_round_trip_ns = -1;
  std::int64_t clock_offset_ns = 0;  // site clock minus numerical clock
};

struct SiteStats {
  PacketCounters packets;
  std::uint64_t held_steps = 0;  // steps without a new feedback packet
  std::uint64_t feedback_used = 0;
  std::int64_t newest_echo_step = -1;
  std::uint64_t highest_sequence = 0;  // of the site's authentic feedback: loss = 1 - distinct / highest
  std::int64_t last_valid_receive_ns = -1;
  PeerControl peer_control = PeerControl::kNone;

  [[nodiscard]] double loss_rate() const {
    const auto distinct = static_cast<double>(packets.accepted + packets.stale);
    return highest_sequence == 0 ? 0.0 : std::max(0.0, 1.0 - distinct / static_cast<double>(highest_sequence));
  }
};

// How a site channel is named in the numerical node's columns (u_, f_, e_, fm_, xm_ + this) and in
// the responses: the site's name, with _1, _2, ... when the site has more than one channel.
std::string channel_label(const std::string& site, std::size_t channels, std::size_t channel);
// The record's label of a multi-axial site's actuator: "<site>_a1", "<site>_a2", ...
std::string actuator_label(const std::string& site, std::size_t actuator);

// The numerical substructure and its Smith predictor parts (docs/architecture.md §3, numerical step). The same
// object runs in virtual and real time: only the clock and the links it is handed differ.
class NumericalNode {
 public:
  struct Setup {
    std::uint64_t session = 0;  // of virtual time (real time: use_session())
    double rate_hz = 1024.0;
    std::size_t max_rows = 0;
    std::vector<std::string> dof_names;  // of the recorded DOFs
    // The DOFs recorded (from 0), in dof_names' order; empty: the first dof_names.size() DOFs.
    std::vector<Eigen::Index> recorded_dofs;
    // A reduced structure's (x = T q): the rows of T of the physical DOFs recorded, one per dof_names,
    // so that the records hold T_rec q and T_rec q'. Empty: the structure's own DOFs are recorded
    // (recorded_dofs); given, recorded_dofs must be empty.
    Eigen::MatrixXd output_basis;
    // What each recorded DOF is, in dof_names' order (the units of its columns). Empty: translations.
    std::vector<DofKind> dof_kinds;
  };

  NumericalNode(Setup setup, StructuralModel structure, std::unique_ptr<Integrator> integrator,
                const GroundMotion& ground, const Clock& clock, std::vector<NumericalSite> sites);

  // Step k covers [t_k, t_k + dt): receive the sites' feedback, compute their forces, record row k
  // (the state at t_k, then the springs' as the integration moves the state to t_k + dt), send the
  // commands of step k + 1 (docs/architecture.md §3, numerical step).
  void step(std::int64_t k);

  [[nodiscard]] const Recorder& recorder() const { return recorder_; }
  [[nodiscard]] const StructuralState& state() const { return state_; }
  // False from the first step whose integration used a non-finite force or produced a non-finite
  // state (a diverged structure, a NaN from a site). That step sent nothing to the sites; the caller
  // stops the run (exit code 9). The check is allocation-free, in every step.
  [[nodiscard]] bool finite() const { return non_finite_step_ < 0; }
  // The step that went non-finite (-1: none) and what it was, for the stop reason.
  [[nodiscard]] std::int64_t non_finite_step() const { return non_finite_step_; }
  [[nodiscard]] std::string non_finite_description() const;
  [[nodiscard]] const std::vector<SiteStats>& site_stats() const { return stats_; }
  [[nodiscard]] const SiteTiming& site_timing(std::size_t s) const { return *timing_[s]; }
  [[nodiscard]] const std::string& site_reason(std::size_t s) const { return reasons_[s]; }
  // A local site that stopped: its interlock tripped or its plant driver failed
  // (sites()[s].local->stop_reason() says why): the run
  // must stop.
  [[nodiscard]] std::optional<std::size_t> tripped_site() const { return tripped_site_; }
  // A remote site whose smoothed round trip passed its delay guard's budget: the run must stop.
  [[nodiscard]] std::optional<std::size_t> delay_exceeded_site() const { return delay_exceeded_site_; }
  // The keys a handshake agreed with remote site s (until then: virtual_session_keys() of the
  // setup's session, which is what virtual time uses).
  void use_session(std::size_t s, const SessionKeys& keys);
  // Whether site s's frames are sealed (a handshake's keys), as every frame on a socket must be.
  [[nodiscard]] bool sealed(std::size_t s) const { return runtime_[s].codec->sealed(); }
  // Start-of-session traffic for remote sites and the end of the test (docs/architecture.md §5).
  void send_to_site(std::size_t s, const wire::Envelope& body);
  void send_stop(std::size_t s, const std::string& reason, bool abort);
  [[nodiscard]] const std::vector<NumericalSite>& sites() const { return sites_; }
  // Recorded column holding the force the structure felt from a site channel.
  [[nodiscard]] static std::string force_column(const NumericalSite& site, Eigen::Index channel);

 private:
  struct SiteRuntime {
    std::unique_ptr<PacketCodec> codec;
    bool have_feedback = false;
    std::int64_t newest_received_ns = 0;
    std::vector<ChannelFeedback> newest;
    std::vector<InterfaceMotion> motion;
    std::vector<Measurement> measured;
    Eigen::VectorXd u, v, a, force;
    std::vector<std::string> channel_labels;        // channel_label() of each channel
    const ActuatorSpace* actuator_space = nullptr;  // a local multi-axial site's actuators
    std::vector<std::string> actuator_labels;       // actuator_label() of each
  };

  // Checks the setup against the structure, sizes what the columns read and names them.
  std::vector<Column> checked_columns();
  // The record's columns, each named and valued in one line: out(prefix, label, unit, value).
  template <class Columns>
  void state_columns(Columns& out, double t) const;
  template <class Columns>
  void spring_columns(Columns& out) const;

  // The stages of a step.
  void receive(std::int64_t k);
  void compute_forces();
  void send_commands(std::int64_t next_step);

  void drain(std::size_t s);
  static void record_timing(SiteTiming& timing, std::int64_t t1, std::int64_t t2, std::int64_t t3, std::int64_t t4);
  void send_command(std::size_t s, std::int64_t next_step);
  void interface_motion(std::size_t s);
  void watch_delay(std::size_t s, std::int64_t k);
  bool check_finite(std::int64_t k);

  Setup setup_;
  StructuralModel structure_;
  std::unique_ptr<Integrator> integrator_;
  const GroundMotion& ground_;
  const Clock& clock_;
  std::vector<NumericalSite> sites_;
  std::vector<SiteRuntime> runtime_;
  std::vector<SiteStats> stats_;
  std::vector<std::unique_ptr<SiteTiming>> timing_;
  std::vector<std::string> reasons_;
  std::optional<std::size_t> tripped_site_;
  std::optional<std::size_t> delay_exceeded_site_;
  StructuralState state_;
  Eigen::VectorXd recorded_displacement_;  // T_rec q of a reduced structure, sized at construction
  Eigen::VectorXd recorded_velocity_;
  Eigen::VectorXd total_force_;
  double dt_s_;
  std::int64_t non_finite_step_ = -1;
  std::ptrdiff_t non_finite_site_ = -1;  // the site whose force was not finite; -1: the structure's state
  std::array<std::byte, kMaxDatagramBytes> rx_{};
  // Last: checked_columns() makes the recorder from the members above.
  Recorder recorder_;
  std::vector<double> row_;
};

}  // namespace rths
