#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rths/common/config.hpp"
#include "rths/common/ground_motion.hpp"
#include "rths/common/metrics.hpp"
#include "rths/common/virtual_link.hpp"
#include "rths/node_numerical/numerical_node.hpp"
#include "rths/node_physical/physical_node.hpp"

namespace rths {

struct SiteReport {
  std::string name;
  bool local = false;
  SiteStats numerical_side;
  PhysicalNodeStats physical_side;
  LinkCounters forward;
  LinkCounters backward;
  double measured_force_peak_n = 0.0;  // at the specimen (remote sites)
};

struct RunReport {
  std::string name;
  std::int64_t steps = 0;
  double rate_hz = 0.0;
  double duration_s = 0.0;
  double run_time_s = 0.0;        // the hybrid run, wall clock
  double reference_time_s = 0.0;  // the monolithic reference, wall clock
  std::string ground_motion;
  // x1..xN and f_<site> against the monolithic reference, in that order.
  std::vector<std::pair<std::string, ResponseMetrics>> responses;
  std::vector<SiteReport> sites;

  [[nodiscard]] const ResponseMetrics& response(const std::string& name) const;
};

// A whole experiment in virtual time (DESIGN §4): the numerical node and every remote site stepped
// in lockstep on a simulated clock, packets encoded, impaired and decoded on in-memory links; then
// the monolithic reference (every site in process, no network) and the evaluation against it.
class VirtualExperiment {
 public:
  // Builds every part; throws ConfigError for anything the config gets wrong (ground motion too).
  explicit VirtualExperiment(const LoadedConfig& config);
  ~VirtualExperiment();
  VirtualExperiment(const VirtualExperiment&) = delete;
  VirtualExperiment& operator=(const VirtualExperiment&) = delete;
  VirtualExperiment(VirtualExperiment&&) = delete;
  VirtualExperiment& operator=(VirtualExperiment&&) = delete;

  // Runs the hybrid simulation and the reference, then evaluates.
  const RunReport& run();
  // Only the hybrid run, without reference or evaluation (benchmarks).
  void run_hybrid_only();
  // Hybrid steps [first, last) alone, for tests that look inside a run.
  void run_hybrid_steps(std::int64_t first, std::int64_t last);

  // The run folder of DESIGN §7: config.textproto, numerical.csv, site_<name>.csv, reference.csv,
  // summary.json. The folder must exist.
  void write_outputs(const std::filesystem::path& dir) const;

  [[nodiscard]] const RunReport& report() const { return report_; }
  [[nodiscard]] const Recorder& numerical() const { return hybrid_->recorder(); }
  [[nodiscard]] const Recorder& reference() const { return reference_->recorder(); }
  [[nodiscard]] std::int64_t steps() const { return steps_; }

 private:
  void evaluate();

  config::Experiment config_;
  GroundMotion ground_;
  std::int64_t steps_ = 0;
  double rate_hz_ = 1024.0;
  VirtualClock clock_;
  std::vector<std::unique_ptr<VirtualLink>> links_;
  std::vector<std::unique_ptr<PhysicalNode>> physical_;
  std::unique_ptr<NumericalNode> hybrid_;
  std::unique_ptr<NumericalNode> reference_;
  RunReport report_;
};

// Writes summary.json for a report (used by write_outputs; separate for the study runner).
std::string summary_json(const RunReport& report);

}  // namespace rths
