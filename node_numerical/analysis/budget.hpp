#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/config/config.hpp"

namespace rths {

// What `rths-numerical budget` measures: the numerical node's step for a config on this machine.
// The reduction's error is measured over this much of the run (El Centro's strong motion lies within
// it), so that a 10 000-DOF whole model takes seconds, not minutes.
constexpr double kReductionErrorWindowS = 20.0;

struct BudgetOptions {
  std::int64_t steps = 4096;  // steps timed, after the warm-up
  double share = 0.5;         // of the period the step may take (the rest: network, OS, stalls)
};

struct StepTimes {
  double p50_us = 0.0;
  double p99_us = 0.0;
  double max_us = 0.0;
};

struct BudgetReport {
  std::string name;
  std::int64_t dofs = 0;
  bool sparse = false;
  std::string integrator;
  double rate_hz = 0.0;
  std::int64_t steps = 0;  // timed
  int local_sites = 0;     // run inside the numerical node's step
  int remote_sites = 0;    // exchanged with over the network (their own work elsewhere)
  StepTimes node;          // the numerical node's whole step (virtual time, its local sites in it)
  StepTimes integrator_alone;
  double budget_us = 0.0;  // share x period
  bool fits = false;       // node.p99_us <= budget_us
  double largest_rate_hz = 0.0;
  // structure.reduction: the hybrid step and the integrator alone step the reduced model; its error
  // against the whole model, both stepped alike under the ground motion alone over error_window_s.
  bool reduced = false;
  int modes = 0;
  int corrections = 0;
  double highest_mode_hz = 0.0;
  double reduction_setup_s = 0.0;
  double error_window_s = 0.0;
  std::string worst_peak_dof;  // the recorded DOF with the largest relative peak error
  double peak_error = 0.0;     // |peak - peak_whole| / peak_whole
  std::string worst_nrms_dof;
  double nrms_error = 0.0;  // rms(x - x_whole) / range(x_whole)
};

// Builds the experiment in virtual time and times `steps` steps of its numerical node after a warm-up
// of 256 (the run's own steps: a shorter ground motion times fewer), then the integrator alone as
// many. With structure.reduction both step the reduced model, and the reduction's error is measured
// against the whole model over the first kReductionErrorWindowS of the run. progress(done, total) is
// called every few hundred steps. Throws ConfigError like a run.
BudgetReport measure_budget(const LoadedConfig& loaded, const BudgetOptions& options,
                            const std::function<void(std::int64_t, std::int64_t)>& progress = {});

// The report as the command prints it.
std::string format_budget(const BudgetReport& report, double share);

}  // namespace rths
