#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "common/config/config.hpp"
#include "common/config/memory_budget.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "common/metrics/metrics.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/udp_hub.hpp"
#include "common/transport/udp_link.hpp"
#include "common/transport/virtual_link.hpp"
#include "node_numerical/engine/numerical_node.hpp"
#include "node_numerical/engine/status_line.hpp"
#include "node_numerical/structure/modal_reduction.hpp"
#include "node_physical/site/physical_node.hpp"
#include "results.pb.h"

namespace rths {

class RecordWriter;

// Network timing of a remote site in real time (µs), from the numerical node's SiteTiming.
struct SiteTimingReport {
  bool valid = false;
  double round_trip_p50_us = 0, round_trip_p99_us = 0, round_trip_max_us = 0;
  double forward_p50_us = 0, forward_p99_us = 0;
  double backward_p50_us = 0, backward_p99_us = 0;
  double age_p50_us = 0, age_p99_us = 0;
  double clock_offset_us = 0;
  double loss_rate = 0;
};

struct SiteReport {
  std::string name;
  bool local = false;
  SiteTimingReport timing;
  SiteStats numerical_side;
  PhysicalNodeStats physical_side;
  LinkCounters forward;
  LinkCounters backward;
  // Real time: what the handshake received and what the socket dropped itself.
  bool has_socket = false;
  PacketCounters handshake_packets;
  UdpCounters socket;
  double measured_force_peak_n = 0.0;  // at the specimen (remote sites)
  // Per channel: tracking J1-J3, controller and plant reports (empty when the site ran in another
  // process, whose own summary has them).
  google::protobuf::RepeatedPtrField<results::Channel> channels;
  std::vector<TrackingMetrics> tracking;  // per channel, when known here
  DelayGuard delay_guard;                 // remote sites: planned and measured (enabled: configured)
  // A multi-axial site (an actuator plant behind its setup; local, or remote in virtual time): per actuator tracking,
  // controller and plant; seed 000's J1-J10 (has_criteria).
  google::protobuf::RepeatedPtrField<results::Channel> actuators;
  bool has_criteria = false;
  MarthsCriteria criteria;
  std::vector<std::string> evaluation_dofs;
};

enum class RunMode { kVirtualTime, kRealTime };

struct RunReport {
  std::string name;
  RunMode mode = RunMode::kVirtualTime;
  int exit_code = 0;  // ExitCode
  std::string stop_reason = "completed";
  bool insecure = false;  // real time with realtime.insecure: packets sealed with a public key
  // The step that went non-finite (exit code 9) and its time; -1 when none did.
  std::int64_t stop_step = -1;
  double stop_time_s = 0.0;
  std::int64_t planned_steps = 0;
  bool has_loop_stats = false;  // real time: the step loop's timing
  LoopStats loop;
  // Real time with remote sites: what the sites' shared sockets saw that belongs to no site.
  bool has_shared_socket = false;
  UdpHubCounters shared_socket;
  std::int64_t steps = 0;
  double rate_hz = 0.0;
  double duration_s = 0.0;
  double run_time_s = 0.0;        // the hybrid run, wall clock
  double reference_time_s = 0.0;  // the monolithic reference, wall clock
  std::string ground_motion;
  // x1..xN and f_<site> against the monolithic reference, in that order.
  std::vector<std::pair<std::string, ResponseMetrics>> responses;
  // Each response's SI unit, its column's suffix: m or rad (a DOF's kind), N or Nm (a channel's).
  std::map<std::string, std::string, std::less<>> response_units;
  std::vector<SiteReport> sites;

  [[nodiscard]] const ResponseMetrics& response(const std::string& name) const;
};

// A whole experiment in virtual time (docs/architecture.md §4): the numerical node and every remote site stepped
// in lockstep on a simulated clock, packets encoded, impaired and decoded on in-memory links; then
// the monolithic reference (every site in process, no network) and the evaluation against it.
class Experiment {
 public:
  // Builds every part; throws ConfigError for anything the config gets wrong (ground motion too).
  // In real time the remote sites are reached over UDP at their `address` instead of in memory.
  explicit Experiment(const LoadedConfig& loaded, RunMode mode = RunMode::kVirtualTime);
  // The checks of the constructor that read files and size the run (ground motion, memory budget),
  // without building anything: for a caller that starts other processes first (loopback).
  static void check_before_start(const LoadedConfig& loaded, RunMode mode);
  // The records a run of loaded reserves in this process before its first step: what a caller that
  // holds several runs at once (rths-study) has to budget. Reads the ground motion to size a
  // whole-record run; throws ConfigError for one it cannot read, as the constructor does.
  static RecordBudget records(const LoadedConfig& loaded, RunMode mode);
  ~Experiment();
  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;
  Experiment(Experiment&&) = delete;
  Experiment& operator=(Experiment&&) = delete;

  // Runs the hybrid simulation and the reference, then evaluates.
  const RunReport& run();
  // Real time (docs/architecture.md §4): handshake with every remote site, the step loop on the wall clock, stop,
  // then the reference over the steps that ran and the evaluation. Never throws for what a peer does:
  // report().exit_code says how it ended. live_status prints a status line to stderr while it runs.
  const RunReport& run_realtime(const std::atomic<bool>& stop, bool live_status);
  // Where run_realtime publishes telemetry (rths-console); none by default. A stop request from the
  // console calls on_stop (main: the flag SIGINT sets).
  void set_telemetry(TelemetryOptions options, std::function<void()> on_stop) {
    telemetry_ = std::move(options);
    telemetry_stop_ = std::move(on_stop);
  }
  // Only the monolithic reference over the whole run (calibration): its record, with the interface
  // motion of every site channel (u_<site>).
  const Recorder& run_reference_only();
  // Only the hybrid run, without reference or evaluation (benchmarks). Sets report().steps: fewer
  // than steps() when a site's interlock tripped or a value went non-finite (report() says why).
  void run_hybrid_only();
  // Hybrid steps [first, last) alone, for tests that look inside a run. Stops after a step that went
  // non-finite (exit code 9) or tripped a site's interlock (exit code 8); returns how many steps ran.
  // With numerical_step_ns, the wall time of each step of the numerical node (its local sites
  // included, the remote ones not: they run elsewhere) is appended to it (rths-numerical budget).
  std::int64_t run_hybrid_steps(std::int64_t first, std::int64_t last,
                                std::vector<std::int64_t>* numerical_step_ns = nullptr);

  // Opens the run folder of docs/architecture.md §7 before the run: writes config.textproto and starts streaming
  // numerical.csv and (virtual time) every site_<name>.csv while the run records them, so a killed
  // run leaves all but its last fraction of a second (RecordWriter). Without this call a run writes
  // no file and starts no thread (studies). The folder must exist.
  void stream_outputs(const std::filesystem::path& dir);
  // Completes the run folder: finishes the streams (every recorded row in its file; streams them now
  // if stream_outputs was not called), writes reference.csv (output.reference_csv) and summary.json.
  // Throws std::runtime_error naming the file when a write failed.
  void write_outputs(const std::filesystem::path& dir);

  [[nodiscard]] const RunReport& report() const { return report_; }
  [[nodiscard]] const Recorder& numerical() const { return hybrid_->recorder(); }
  [[nodiscard]] const Recorder& reference() const { return reference_->recorder(); }
  [[nodiscard]] std::int64_t steps() const { return steps_; }
  // The reduced structure the hybrid run integrates (structure.reduction); null without one.
  [[nodiscard]] const ReducedModel* reduction() const { return reduction_.get(); }
  // Seconds the reduction took to set up (modes and corrections), 0 without one.
  [[nodiscard]] double reduction_setup_s() const { return reduction_setup_s_; }

 private:
  void evaluate();
  void stop_non_finite();
  void run_reference(std::int64_t steps);
  bool handshake(std::vector<std::int64_t>& round_trip_ns, const std::atomic<bool>& stop);
  // The site stopped for a reason of its own (interlock or equipment): exit code and reason.
  std::int64_t stop_on_site(std::int64_t steps_run, const std::string& site, const PhysicalSubstructure& substructure);
  // A local multi-axial site's actuators and seed 000's J1-J10 into its report, from the records.
  // J1-J10 of a multi-axial site: a local one from the numerical node's record; a remote one (virtual
  // time, `remote` its node) from its own record, aligned by the forward leg's delay.
  // A real-time run's timing distributions as histograms: the step loop's lateness and compute time,
  // each remote site's round trip; one row per bin that holds a sample, in microseconds.
  void write_timing_csv(const std::filesystem::path& file) const;
  void evaluate_multi_axial(const NumericalSite& site, const PhysicalNode* remote, SiteReport& sr) const;
  // A site's measured round trip passed its delay guard's budget: exit code and reason.
  std::int64_t stop_on_delay(std::int64_t steps_run, std::size_t site);
  void stop_sites(const std::string& reason, bool abort);

  RunMode mode_;
  config::Experiment config_;
  GroundMotion ground_;
  std::int64_t steps_ = 0;
  double rate_hz_ = 1024.0;
  VirtualClock clock_;
  WallClock wall_clock_;
  std::vector<std::unique_ptr<VirtualLink>> links_;
  std::unique_ptr<asio::io_context> io_;
  // Real time: one socket per address family for all remote sites (a step's exchange in two system
  // calls each), and each remote site's link on it, in remote_'s order.
  std::unique_ptr<UdpHub> hub_v4_;
  std::unique_ptr<UdpHub> hub_v6_;
  std::vector<UdpHub*> hubs_;
  std::vector<HubLink*> udp_;
  std::vector<SecretKey> site_keys_;               // per remote site, real time: the pre-shared keys
  std::vector<PacketCounters> handshake_packets_;  // per remote site, real time
  std::vector<std::size_t> remote_;                // indices of the remote sites in the node's site list
  std::vector<std::unique_ptr<PhysicalNode>> physical_;
  std::unique_ptr<ReducedModel> reduction_;
  double reduction_setup_s_ = 0.0;
  std::unique_ptr<NumericalNode> hybrid_;
  std::unique_ptr<NumericalNode> reference_;
  // After the recorders they read, so that on every way out (an exception too) they finish first.
  std::vector<std::unique_ptr<RecordWriter>> streams_;
  RunReport report_;
  TelemetryOptions telemetry_;
  std::function<void()> telemetry_stop_;
  // The numerical node's stream, figures and stop request on telemetry; starts it.
  void publish_numerical_telemetry(TelemetryPublisher& telemetry, const LiveFigures& live) const;
};

// What summary.json holds for a report (proto/results.proto; write_outputs prints it).
results::RunSummary run_summary(const RunReport& report);

// Why the report's metrics cannot be trusted ("" when every one is finite, see
// ResponseMetrics::finite): a response or a site channel's tracking computed from a non-finite value.
std::string non_finite_metrics(const RunReport& report);

}  // namespace rths
