#include "rths/node_numerical/budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "experiment.pb.h"
#include "rths/common/ground_motion.hpp"
#include "rths/common/realtime_loop.hpp"
#include "rths/node_numerical/experiment.hpp"
#include "rths/node_numerical/structure.hpp"

namespace rths {

namespace {

constexpr std::int64_t kWarmUpSteps = 256;

StepTimes percentiles(std::vector<std::int64_t> ns) {
  StepTimes out;
  if (ns.empty()) return out;
  std::sort(ns.begin(), ns.end());
  const auto at = [&ns](double q) {
    const auto index = static_cast<std::size_t>(std::ceil(q * static_cast<double>(ns.size()))) - 1;
    return 1e-3 * static_cast<double>(ns[std::min(index, ns.size() - 1)]);
  };
  out.p50_us = at(0.50);
  out.p99_us = at(0.99);
  out.max_us = 1e-3 * static_cast<double>(ns.back());
  return out;
}

}  // namespace

BudgetReport measure_budget(const LoadedConfig& loaded, const BudgetOptions& options,
                            const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const config::Experiment& cfg = loaded.experiment;
  BudgetReport report;
  report.name = cfg.name();
  report.integrator = config::Integrator_Name(cfg.integrator());
  report.rate_hz = cfg.rate_hz();
  for (const config::Site& site : cfg.site()) {
    (site.placement() == config::LOCAL ? report.local_sites : report.remote_sites) += 1;
  }

  Experiment experiment(loaded, RunMode::kVirtualTime);
  const std::int64_t available = experiment.steps();
  const std::int64_t warm_up = std::min(kWarmUpSteps, available / 4);
  const std::int64_t timed = std::min(options.steps, available - warm_up);
  if (timed < 1) {
    throw ConfigError(fmt::format("budget: the run has {} steps, too few to time", available));
  }
  std::vector<std::int64_t> node_ns;
  node_ns.reserve(static_cast<std::size_t>(timed));
  experiment.run_hybrid_steps(0, warm_up);
  constexpr std::int64_t kChunk = 512;
  for (std::int64_t done = 0; done < timed; done += kChunk) {
    const std::int64_t last = std::min(done + kChunk, timed);
    const std::int64_t ran = experiment.run_hybrid_steps(warm_up + done, warm_up + last, &node_ns);
    if (ran < last - done) {
      throw ConfigError(fmt::format("budget: the run stopped after {} steps: {}", warm_up + done + ran,
                                    experiment.report().stop_reason));
    }
    if (progress) progress(last, 2 * timed);
  }
  report.node = percentiles(node_ns);

  // The integrator alone on the same model, under the record and a force that changes every step on
  // the DOFs the sites act on, as the node's.
  const StructuralModel model = make_structure(cfg.structure());
  report.dofs = model.dofs();
  report.sparse = model.is_sparse();
  const std::unique_ptr<Integrator> integrator = make_integrator(cfg, model);
  std::vector<Eigen::Index> force_dofs;
  for (const config::Site& site : cfg.site()) {
    const auto channels = static_cast<Eigen::Index>(site.channel_size());
    for (Eigen::Index d = 0; d < model.dofs(); ++d) {
      for (Eigen::Index c = 0; c < channels; ++c) {
        if (site.influence(static_cast<int>(d * channels + c)) != 0.0 &&
            std::find(force_dofs.begin(), force_dofs.end(), d) == force_dofs.end()) {
          force_dofs.push_back(d);
        }
      }
    }
  }
  std::sort(force_dofs.begin(), force_dofs.end());
  integrator->set_force_dofs(force_dofs);
  const GroundMotion ground = load_ground_motion(cfg.ground_motion(), loaded.base_dir);
  const double dt = 1.0 / cfg.rate_hz();
  StructuralState state{Eigen::VectorXd::Zero(model.dofs()), Eigen::VectorXd::Zero(model.dofs()),
                        Eigen::VectorXd::Zero(model.dofs())};
  Eigen::VectorXd force = Eigen::VectorXd::Zero(model.dofs());
  integrator->initialise(state, force, ground, 0.0);
  std::vector<std::int64_t> integrator_ns;
  integrator_ns.reserve(static_cast<std::size_t>(timed));
  for (std::int64_t k = 0; k < warm_up + timed; ++k) {
    for (const Eigen::Index d : force_dofs) force(d) = 1e3 * std::sin(0.01 * static_cast<double>(k));
    const std::int64_t start = monotonic_ns();
    integrator->step(state, force, ground, static_cast<double>(k) * dt, dt);
    if (k >= warm_up) integrator_ns.push_back(monotonic_ns() - start);
    if (progress && k >= warm_up && (k - warm_up) % kChunk == kChunk - 1) progress(timed + k - warm_up + 1, 2 * timed);
  }
  report.integrator_alone = percentiles(integrator_ns);
  report.steps = timed;
  report.budget_us = options.share * 1e6 / cfg.rate_hz();
  report.fits = report.node.p99_us <= report.budget_us;
  report.largest_rate_hz = report.node.p99_us > 0.0 ? options.share * 1e6 / report.node.p99_us : 0.0;
  return report;
}

std::string format_budget(const BudgetReport& r, double share) {
  const double period_us = 1e6 / r.rate_hz;
  std::string out = fmt::format("budget: {} — {} DOFs ({}), integrator {}, {:g} Hz (period {:.1f} us)\n", r.name,
                                r.dofs, r.sparse ? "sparse" : "dense", r.integrator, r.rate_hz, period_us);
  const auto line = [&out](const std::string& what, const StepTimes& t) {
    out += fmt::format("  {:<50} p50 {:9.1f} us  p99 {:9.1f} us  max {:9.1f} us\n", what, t.p50_us, t.p99_us, t.max_us);
  };
  line(fmt::format("numerical node step ({} steps, {} local site(s))", r.steps, r.local_sites), r.node);
  line("integrator step alone", r.integrator_alone);
  out += fmt::format("  budget: {:g} % of the period = {:.1f} us; the step's p99 takes {:.1f} % of the period: {}\n",
                     100.0 * share, r.budget_us, 100.0 * r.node.p99_us / period_us, r.fits ? "FITS" : "DOES NOT FIT");
  out += fmt::format("  the largest rate at which the p99 stays within {:g} % of the period: {:.0f} Hz\n",
                     100.0 * share, r.largest_rate_hz);
  if (r.remote_sites > 0) {
    out += fmt::format(
        "  ({} remote site(s): their own work runs at the sites; in virtual time their packets are not sealed, "
        "which a real-time step adds: a few microseconds per site, docs/performance.md)\n",
        r.remote_sites);
  }
  return out;
}

}  // namespace rths
