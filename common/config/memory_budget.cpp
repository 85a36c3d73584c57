#include "common/config/memory_budget.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/config/setup_checks.hpp"

namespace rths {

namespace {
constexpr std::size_t kColumnsPerNumericalChannel = 5;  // u, f, e, fm, xm

// The actuators a site records, those of its setup (none without one: the channels are its actuators).
std::size_t recorded_actuators(const config::Site& site) {
  return site.has_setup() ? setup_actuators(site.setup()) : 0;
}
}  // namespace

std::string count_text(double count) {
  return count < 1e15 ? fmt::format("{:.0f}", count) : fmt::format("{:.3g}", count);
}

double run_steps(double duration_s, double rate_hz) {
  // 1e-9: a duration that is a whole number of steps in decimal must not lose its last step to rounding.
  return std::floor(duration_s * rate_hz + 1e-9) + 1;
}

std::size_t numerical_record_columns(const config::Experiment& experiment) {
  std::size_t channels = 0;
  std::size_t actuators = 0;
  for (const auto& site : experiment.site()) {
    channels += static_cast<std::size_t>(site.channel_size());
    if (site.placement() == config::LOCAL) actuators += recorded_actuators(site);
  }
  const config::Structure& structure = experiment.structure();
  const std::size_t recorded = structure.record_dof_size() > 0 ? static_cast<std::size_t>(structure.record_dof_size())
                                                               : static_cast<std::size_t>(structure.dofs());
  return 2 + 2 * recorded + kColumnsPerNumericalChannel * channels + kColumnsPerActuator * actuators;
}

std::size_t site_record_columns(const config::Site& site) {
  return 2 + kSiteColumnsPerChannel * static_cast<std::size_t>(site.channel_size()) +
         kColumnsPerActuator * recorded_actuators(site);
}

RecordBudget numerical_process_records(const config::Experiment& experiment, double steps,
                                       bool remote_sites_in_process) {
  RecordBudget records;
  records.steps = steps;
  const std::size_t numerical = numerical_record_columns(experiment);
  records.columns = 2 * numerical;
  records.parts = fmt::format("numerical node {}, reference {}", numerical, numerical);
  if (remote_sites_in_process) {
    for (const auto& site : experiment.site()) {
      if (site.placement() != config::REMOTE) continue;
      const std::size_t columns = site_record_columns(site);
      records.columns += columns;
      records.parts += fmt::format(", site {} {}", site.name(), columns);
    }
  }
  return records;
}

std::string over_memory_budget(const config::Experiment& experiment, const RecordBudget& records) {
  const double budget_mb = experiment.output().memory_budget_mb();
  // NaN compares false: a NaN count is refused, not let through.
  if (records.megabytes() <= budget_mb) {
    return {};
  }
  return fmt::format(
      "the records need {} MB ({} columns x 8 bytes per step: {}), over output.memory_budget_mb = "
      "{:g} MB; expected a shorter duration_s, fewer recorded DOFs (structure.record_dof), or a larger "
      "output.memory_budget_mb on a machine with the memory",
      count_text(std::ceil(records.megabytes())), records.columns, records.parts, budget_mb);
}

std::string site_start_refusal(const config::Experiment& experiment, const config::Site& site, std::int64_t steps) {
  if (steps < 1) {
    return fmt::format("the start announces {} steps; expected at least 1", steps);
  }
  RecordBudget records;
  records.steps = static_cast<double>(steps);
  records.columns = site_record_columns(site);
  records.parts = fmt::format("site {}", site.name());
  const std::string over = over_memory_budget(experiment, records);
  if (over.empty()) {
    return {};
  }
  return fmt::format("the start announces {} steps ({:g} s at {:g} Hz); {}; refused before motion", steps,
                     static_cast<double>(steps - 1) / experiment.rate_hz(), experiment.rate_hz(), over);
}

}  // namespace rths
