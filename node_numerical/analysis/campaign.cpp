#include "node_numerical/analysis/campaign.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/core/config_error.hpp"
#include "common/core/exit_codes.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "node_numerical/engine/experiment.hpp"

namespace rths {
namespace {

// The criteria of one site as named columns, in a fixed order.
struct CriterionColumn {
  std::string name;
  const std::vector<double> MarthsCriteria::*field;
  std::size_t index;
};

std::vector<CriterionColumn> criteria_columns(const std::string& site, const MarthsCriteria& shape,
                                              const std::vector<std::string>& dofs) {
  std::vector<CriterionColumn> columns;
  const auto add = [&](const char* j, const std::vector<double> MarthsCriteria::*field, char kind) {
    for (std::size_t i = 0; i < (shape.*field).size(); ++i) {
      const std::string what = kind == 'd' && i < dofs.size() ? dofs[i] : fmt::format("{}{}", kind, i + 1);
      columns.push_back({fmt::format("{}_{}_{}", site, j, what), field, i});
    }
  };
  add("J1", &MarthsCriteria::j1_delay_ms, 'a');
  add("J2", &MarthsCriteria::j2_nrms_pct, 'a');
  add("J3", &MarthsCriteria::j3_peak_pct, 'a');
  add("J4", &MarthsCriteria::j4_delay_ms, 'a');
  add("J5", &MarthsCriteria::j5_nrms_pct, 'c');
  add("J6", &MarthsCriteria::j6_peak_pct, 'c');
  add("J7", &MarthsCriteria::j7_nrms_pct, 'c');
  add("J8", &MarthsCriteria::j8_nrms_pct, 'd');
  add("J9", &MarthsCriteria::j9_peak_pct, 'c');
  add("J10", &MarthsCriteria::j10_peak_pct, 'd');
  return columns;
}

// The criteria are a campaign's product, and each is normalised by the reference's motion: a run that
// ends before the ground moves has none (the structure starts at rest), so every criterion against
// the reference would be undefined. Refused before any run, naming duration_s.
void refuse_a_reference_at_rest(const LoadedConfig& base) {
  const config::Experiment& cfg = base.experiment;
  GroundMotion ground;
  try {
    ground = load_ground_motion(cfg.ground_motion(), base.base_dir);
  } catch (const std::exception& e) {
    throw ConfigError(fmt::format("{}: ground_motion: {}", base.source.string(), e.what()));
  }
  const double end_s = cfg.duration_s() > 0.0 ? cfg.duration_s() : ground.end_s();
  const std::vector<double>& a = ground.samples();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double t = ground.start_s() + static_cast<double>(i) * ground.dt_s();
    if (t > end_s) break;
    if (a[i] != 0.0) return;
  }
  const auto moving = std::find_if(a.begin(), a.end(), [](double v) { return v != 0.0; });
  throw ConfigError(fmt::format(
      "{}: duration_s: the runs end at {:g} s, {}; the reference structure stays at rest, so the criteria the "
      "campaign reports (normalised by its motion) would be undefined; expected a duration_s past the ground's first "
      "motion",
      base.source.string(), end_s,
      moving == a.end() ? std::string("and the ground motion is zero throughout")
                        : fmt::format("before the ground motion's first nonzero sample at {:g} s",
                                      ground.start_s() + static_cast<double>(moving - a.begin()) * ground.dt_s())));
}

CampaignRun run_one(const LoadedConfig& base, std::uint64_t seed, bool noise_per_run) {
  LoadedConfig loaded = base;
  for (config::Site& site : *loaded.experiment.mutable_site()) {
    if (!site.has_actuator_plant()) continue;
    config::ActuatorPlant& plant = *site.mutable_actuator_plant();
    plant.mutable_two_actuator_frame()->mutable_uncertainty()->set_seed(seed);
    if (noise_per_run) plant.mutable_noise()->set_seed(plant.noise().seed() + seed);
  }
  CampaignRun run;
  run.seed = seed;
  const auto start = std::chrono::steady_clock::now();
  try {
    Experiment experiment(loaded, RunMode::kVirtualTime);
    const RunReport& report = experiment.run();
    run.exit_code = report.exit_code;
    run.stop_reason = report.stop_reason;
    for (const SiteReport& s : report.sites) {
      if (s.has_criteria) run.sites.push_back(s.criteria);
    }
  } catch (const ConfigError& e) {
    // A rule that only the build can check (docs/architecture.md §9): the config's error, as for a run.
    run.exit_code = kExitBadInput;
    run.stop_reason = e.what();
  } catch (const std::exception& e) {
    run.exit_code = kExitFailure;
    run.stop_reason = e.what();
  }
  run.run_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace

CampaignReport run_campaign(const LoadedConfig& base, const CampaignOptions& options,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  CampaignReport report;
  for (const config::Site& site : base.experiment.site()) {
    if (!site.has_actuator_plant()) continue;
    report.sites.push_back(site.name());
    report.evaluation_dofs.emplace_back(site.evaluation_dof().begin(), site.evaluation_dof().end());
  }
  if (report.sites.empty()) {
    throw ConfigError(
        fmt::format("{}: no site has an actuator_plant; a campaign draws perturbed actuator plants "
                    "(site {{ actuator_plant {{ two_actuator_frame {{ ... }} }} }})",
                    base.source.string()));
  }
  refuse_a_reference_at_rest(base);
  report.runs.resize(options.plants);
  const auto start = std::chrono::steady_clock::now();
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> done{0};
  std::mutex progress_mutex;
  const auto worker = [&] {
    for (std::uint64_t i = next++; i < options.plants; i = next++) {
      report.runs[i] = run_one(base, options.first_seed + i, options.noise_per_run);
      const std::uint64_t finished = ++done;
      if (progress) {
        const std::scoped_lock lock(progress_mutex);
        progress(finished, options.plants);
      }
    }
  };
  const unsigned jobs = std::max(1U, std::min<unsigned>(options.jobs, static_cast<unsigned>(options.plants)));
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  report.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (std::size_t s = 0; s < report.sites.size(); ++s) {
    std::vector<MarthsCriteria> site_runs;
    for (const CampaignRun& run : report.runs) {
      if (run.exit_code != kExitCompleted || s >= run.sites.size()) {
        // A run that did not complete has no criteria: the mean must not pretend it does.
        site_runs.clear();
        break;
      }
      site_runs.push_back(run.sites[s]);
    }
    if (site_runs.empty()) {
      report.mean.emplace_back();
      report.sd.emplace_back();
      continue;
    }
    report.mean.push_back(marths_mean(site_runs));
    report.sd.push_back(marths_sd(site_runs));
  }
  for (const CampaignRun& run : report.runs) {
    const bool finite = std::all_of(run.sites.begin(), run.sites.end(), [](const auto& c) { return c.finite(); });
    if (run.exit_code != kExitCompleted || !finite) {
      report.exit_code = run.exit_code != kExitCompleted ? run.exit_code : static_cast<int>(kExitNonFinite);
      report.failure = run.exit_code != kExitCompleted
                           ? fmt::format("the run of seed {} did not complete: {}", run.seed, run.stop_reason)
                           : fmt::format("the run of seed {} has a non-finite criterion", run.seed);
      break;
    }
    // A plain run may leave criteria undefined (its reference at rest); a campaign asked for them.
    for (std::size_t s = 0; s < run.sites.size(); ++s) {
      if (run.sites[s].undefined.empty()) continue;
      report.exit_code = kExitFailure;
      report.failure = fmt::format(
          "the run of seed {} leaves criteria of site {} undefined ({}): the histories they are normalised by "
          "have no motion",
          run.seed, report.sites[s], fmt::join(run.sites[s].undefined, ", "));
      break;
    }
    if (report.exit_code != kExitCompleted) break;
  }
  return report;
}

std::string campaign_csv(const CampaignReport& report) {
  std::vector<std::vector<CriterionColumn>> columns;
  for (std::size_t s = 0; s < report.sites.size(); ++s) {
    // The shape from the first run that has it (every completed run has the same).
    const auto shaped =
        std::find_if(report.runs.begin(), report.runs.end(), [&](const CampaignRun& r) { return s < r.sites.size(); });
    columns.push_back(shaped == report.runs.end()
                          ? std::vector<CriterionColumn>{}
                          : criteria_columns(report.sites[s], shaped->sites[s], report.evaluation_dofs[s]));
  }
  std::string csv = "seed,exit_code,run_time_s,stop_reason";
  for (const auto& site : columns) {
    for (const CriterionColumn& c : site) csv += "," + c.name;
  }
  csv += "\n";
  const auto cells = [&](const std::vector<MarthsCriteria>& criteria) {
    std::string line;
    for (std::size_t s = 0; s < columns.size(); ++s) {
      for (const CriterionColumn& c : columns[s]) {
        const bool known = s < criteria.size() && c.index < (criteria[s].*c.field).size();
        line += known ? fmt::format(",{}", (criteria[s].*c.field)[c.index]) : ",";
      }
    }
    return line;
  };
  for (const CampaignRun& run : report.runs) {
    std::string reason = run.stop_reason;
    std::replace(reason.begin(), reason.end(), ',', ';');
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    csv += fmt::format("{},{},{:.3f},{}", run.seed, run.exit_code, run.run_time_s, reason) + cells(run.sites) + "\n";
  }
  csv += "mean,,," + cells(report.mean) + "\n";
  csv += "sd,,," + cells(report.sd) + "\n";
  return csv;
}

}  // namespace rths
