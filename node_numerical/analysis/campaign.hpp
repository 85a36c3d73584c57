#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/metrics/metrics.hpp"

namespace rths {

// A robustness campaign of the maRTHS benchmark (seed 000 §4.4; seed 001's 100 realisations): the
// same experiment in virtual time once per perturbed plant, the uncertainty seed of every multi-axial
// site's actuator plant set to first_seed, first_seed + 1, ..., and each run's J1-J10 with their mean
// and standard deviation over the runs (the package averages its uncertain runs only: every run here
// is one). The runs are independent and run `jobs` at a time; nothing is written per run.
struct CampaignOptions {
  std::uint64_t plants = 100;
  std::uint64_t first_seed = 1;
  unsigned jobs = 1;
  // Every run draws its own sensor noise, as the benchmark's package does for its uncertain runs
  // (rng('shuffle')): the noise seed of the run of uncertainty seed s is the config's noise seed + s,
  // so a row is reproduced by a run with both seeds set. Off: every run reads the same noise (the
  // config's seed), and the runs differ by their plants alone.
  bool noise_per_run = false;
};

// One multi-axial site's criteria in one run.
struct CampaignRun {
  std::uint64_t seed = 0;
  int exit_code = 0;                  // ExitCode of the run
  std::string stop_reason;            // "completed" or why it stopped
  double run_time_s = 0.0;            // hybrid run and reference, wall clock
  std::vector<MarthsCriteria> sites;  // per multi-axial site, in config order (empty when it failed early)
};

struct CampaignReport {
  std::vector<std::string> sites;                         // the multi-axial sites' names
  std::vector<std::vector<std::string>> evaluation_dofs;  // per site: its J8/J10 DOFs
  std::vector<CampaignRun> runs;                          // by seed
  std::vector<MarthsCriteria> mean;                       // per site, over every run (NaN when one failed)
  std::vector<MarthsCriteria> sd;                         // per site, sample standard deviation
  double wall_time_s = 0.0;
  // 0 when every run completed with finite, defined criteria; else the exit code of the first failed
  // run (1 for criteria left undefined: a campaign's product is its criteria), and why.
  int exit_code = 0;
  std::string failure;
};

// Runs the campaign; `progress(done, total)` after each run (from the worker threads, serialised).
// Throws ConfigError when the experiment has no multi-axial site with an actuator plant.
CampaignReport run_campaign(const LoadedConfig& base, const CampaignOptions& options,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

// campaign.csv: a header, then one row per run (seed, exit_code, run_time_s, stop_reason, then every
// criterion as <site>_J<n>_<actuator a1.. | channel c1.. | DOF name>), then the rows "mean" and "sd".
std::string campaign_csv(const CampaignReport& report);

}  // namespace rths
