#include "node_numerical/analysis/budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

#include "common/dynamics/ground_motion.hpp"
#include "common/metrics/metrics.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "experiment.pb.h"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/modal_reduction.hpp"
#include "node_numerical/structure/structure.hpp"

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

// The recorded DOFs' histories of the whole model and the reduced one (x = T q), each stepped by the
// config's integrator at its rate under the ground motion alone: the worst relative peak error and
// NRMS among them.
void measure_reduction_error(const config::Experiment& cfg, const StructuralModel& whole, const ReducedModel& reduction,
                             const GroundMotion& ground, std::int64_t steps, BudgetReport& report) {
  const std::vector<std::uint32_t> recorded = recorded_dofs(cfg.structure());
  const std::vector<std::string> names = recorded_dof_names(cfg.structure());
  const std::vector<Eigen::Index> rows(recorded.begin(), recorded.end());
  const Eigen::MatrixXd output = reduction.basis(rows, Eigen::all);
  const double dt = 1.0 / cfg.rate_hz();
  const auto run = [&](const StructuralModel& model, bool reduced) {
    const std::unique_ptr<Integrator> integrator = make_integrator(cfg, model);
    const Eigen::Index n = model.dofs();
    StructuralState state{Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n)};
    const Eigen::VectorXd force = Eigen::VectorXd::Zero(n);
    integrator->initialise(state, force, ground, 0.0);
    std::vector<std::vector<double>> histories(rows.size());
    Eigen::VectorXd x(static_cast<Eigen::Index>(rows.size()));
    for (std::int64_t k = 0; k < steps; ++k) {
      integrator->step(state, force, ground, static_cast<double>(k) * dt, dt);
      if (reduced) {
        x.noalias() = output * state.displacement;
      } else {
        x = state.displacement(rows);
      }
      for (std::size_t i = 0; i < rows.size(); ++i) histories[i].push_back(x(static_cast<Eigen::Index>(i)));
    }
    return histories;
  };
  const std::vector<std::vector<double>> full = run(whole, false);
  const std::vector<std::vector<double>> reduced = run(reduction.model, true);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ResponseMetrics m = compare_responses(reduced[i], full[i]);
    if (!(m.j_peak_pct / 100.0 <= report.peak_error)) {  // a NaN is the worst
      report.peak_error = m.j_peak_pct / 100.0;
      report.worst_peak_dof = names[i];
    }
    if (!(m.j_rms_pct / 100.0 <= report.nrms_error)) {
      report.nrms_error = m.j_rms_pct / 100.0;
      report.worst_nrms_dof = names[i];
    }
  }
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

  // The integrator alone on the same model (the reduced one with structure.reduction), under the
  // record and a force that changes every step on the DOFs the sites act on, as the node's.
  const StructuralModel whole = make_structure(cfg.structure());
  const ReducedModel* reduction = experiment.reduction();
  const StructuralModel& model = reduction != nullptr ? reduction->model : whole;
  report.dofs = whole.dofs();
  report.sparse = whole.is_sparse();
  const std::unique_ptr<Integrator> integrator = make_integrator(cfg, model);
  std::vector<Eigen::Index> force_dofs = interface_dofs(cfg);
  Eigen::VectorXd load = Eigen::VectorXd::Zero(whole.dofs());
  for (const Eigen::Index d : force_dofs) load(d) = 1.0;
  if (reduction != nullptr) {
    // T^T l: the interface force reaches every reduced DOF.
    load = reduction->basis.transpose() * load;
    force_dofs.resize(static_cast<std::size_t>(model.dofs()));
    std::iota(force_dofs.begin(), force_dofs.end(), Eigen::Index{0});
  }
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
    force.noalias() = 1e3 * std::sin(0.01 * static_cast<double>(k)) * load;
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
  if (reduction != nullptr) {
    report.reduced = true;
    report.modes = reduction->modes;
    report.corrections = reduction->corrections;
    report.highest_mode_hz = reduction->highest_mode_rad_s / (2.0 * std::numbers::pi);
    report.reduction_setup_s = experiment.reduction_setup_s();
    const auto steps = std::min(experiment.steps(), static_cast<std::int64_t>(kReductionErrorWindowS * cfg.rate_hz()));
    report.error_window_s = static_cast<double>(steps) * dt;
    measure_reduction_error(cfg, whole, *reduction, ground, steps, report);
  }
  return report;
}

std::string format_budget(const BudgetReport& r, double share) {
  const double period_us = 1e6 / r.rate_hz;
  // A reduced model is stepped dense, whatever the whole model's form.
  const std::string form = r.reduced ? fmt::format("{}, stepped reduced and dense", r.sparse ? "sparse" : "dense")
                                     : std::string(r.sparse ? "sparse" : "dense");
  std::string out = fmt::format("budget: {} — {} DOFs ({}), integrator {}, {:g} Hz (period {:.1f} us)\n", r.name,
                                r.dofs, form, r.integrator, r.rate_hz, period_us);
  const auto line = [&out](const std::string& what, const StepTimes& t) {
    out += fmt::format("  {:<50} p50 {:9.1f} us  p99 {:9.1f} us  max {:9.1f} us\n", what, t.p50_us, t.p99_us, t.max_us);
  };
  line(fmt::format("numerical node step ({} steps, {} local site(s))", r.steps, r.local_sites), r.node);
  line(r.reduced ? "integrator step alone (the reduced model)" : "integrator step alone", r.integrator_alone);
  out += fmt::format("  budget: {:g} % of the period = {:.1f} us; the step's p99 takes {:.1f} % of the period: {}\n",
                     100.0 * share, r.budget_us, 100.0 * r.node.p99_us / period_us, r.fits ? "FITS" : "DOES NOT FIT");
  out += fmt::format("  the largest rate at which the p99 stays within {:g} % of the period: {:.0f} Hz\n",
                     100.0 * share, r.largest_rate_hz);
  if (r.reduced) {
    out += fmt::format(
        "  reduced: {} modes + {} static correction(s) = {} DOFs of {} (highest mode {:.4g} Hz), set up in {:.2f} s\n",
        r.modes, r.corrections, r.modes + r.corrections, r.dofs, r.highest_mode_hz, r.reduction_setup_s);
    out += fmt::format(
        "  its error against the whole model ({}, {:g} Hz, ground motion alone, first {:g} s): peak {:.2e} ({}), "
        "NRMS {:.2e} ({})\n",
        r.integrator, r.rate_hz, r.error_window_s, r.peak_error, r.worst_peak_dof, r.nrms_error, r.worst_nrms_dof);
  }
  if (r.remote_sites > 0) {
    out += fmt::format(
        "  ({} remote site(s): their own work runs at the sites; in virtual time their packets are not sealed, "
        "which a real-time step adds: a few microseconds per site, docs/performance.md)\n",
        r.remote_sites);
  }
  return out;
}

}  // namespace rths
