// The numerical step's cost against model size (docs/performance.md, "Models at FE size"): one
// integrator step of a shear building of N storeys (tridiagonal K, lumped M, 2 % Rayleigh damping)
// for N = 10, 100, 1000, 10000, dense (up to 1000: a dense 10000-DOF model holds 2.4 GB of matrices)
// and sparse, and of the 9996-DOF plane frame (sparse, consistent mass), for each integrator that
// steps both forms. The force changes every step on the site's DOF, as in a test (KR-alpha's
// correction formed once for that DOF). The shear buildings reduced to 20 and 50 modes plus the static
// correction at the site's DOF (structure.reduction: a dense model of 21 or 51 DOFs), stepped by
// KR-alpha and Chen-Ricles, and the reduction's set-up (modes by shift-invert Lanczos, the correction,
// the projection). The sparse buildings with a bilinear spring on every storey, stepped by KR-alpha.
// Run: build/bin/rths_bench_integrators.
#include <benchmark/benchmark.h>

#include <Eigen/SparseCore>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/dynamics/ground_motion.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/modal_reduction.hpp"
#include "node_numerical/structure/model_ladder.hpp"
#include "node_numerical/structure/structure.hpp"

namespace rths {
namespace {

constexpr double kDt = 1.0 / 1024.0;

StructuralModel model_of(const GeneratedModel& generated, bool dense) {
  StructuralModel model = structural_model(generated);
  return dense ? dense_form(std::move(model)) : model;
}

const StructuralModel& cached(int storeys, bool dense) {
  static std::map<std::pair<int, bool>, StructuralModel> models;
  auto found = models.find({storeys, dense});
  if (found == models.end()) {
    const GeneratedModel generated =
        storeys > 0 ? shear_building(static_cast<std::uint32_t>(storeys)) : plane_frame(33, 98);
    found = models.emplace(std::pair{storeys, dense}, model_of(generated, dense)).first;
  }
  return found->second;
}

using Factory = std::function<std::unique_ptr<Integrator>(const StructuralModel&)>;

// Steps integrator under a ground motion and a force that changes every step along `shape` (a
// force vector of the model's size), as long as the benchmark runs.
void run_steps(benchmark::State& state, Integrator& integrator, const Eigen::VectorXd& shape) {
  const Eigen::Index n = shape.size();
  std::vector<double> samples(4096);
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = 0.5 * std::sin(0.01 * static_cast<double>(i));
  const GroundMotion ground(samples, 0.01, "bench");
  StructuralState s{Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n)};
  Eigen::VectorXd force = Eigen::VectorXd::Zero(n);
  integrator.initialise(s, force, ground, 0.0);
  long k = 0;
  for (auto _ : state) {
    force.noalias() = 1e3 * std::sin(0.01 * static_cast<double>(k)) * shape;
    integrator.step(s, force, ground, static_cast<double>(k % 30000) * kDt, kDt);
    benchmark::DoNotOptimize(s.displacement.data());
    ++k;
  }
  state.counters["dofs"] = static_cast<double>(n);
}

// state.range(0): storeys (0: the 9996-DOF frame); range(1): 1 dense, 0 sparse. The force on DOF 0.
void step(benchmark::State& state, const Factory& make) {
  const auto storeys = static_cast<int>(state.range(0));
  const StructuralModel& model = cached(storeys, state.range(1) == 1);
  const std::unique_ptr<Integrator> integrator = make(model);
  integrator->set_force_dofs(std::vector<Eigen::Index>{0});
  Eigen::VectorXd shape = Eigen::VectorXd::Zero(model.dofs());
  shape(0) = 1.0;
  run_steps(state, *integrator, shape);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (const int n : {10, 100, 1000}) b->Args({n, 1});
  for (const int n : {10, 100, 1000, 10000, 0}) b->Args({n, 0});
  b->Unit(benchmark::kMicrosecond);
}

const ReducedModel& cached_reduction(int storeys, int modes) {
  static std::map<std::pair<int, int>, ReducedModel> reduced;
  auto found = reduced.find({storeys, modes});
  if (found == reduced.end()) {
    const std::vector<Eigen::Index> site{0};
    found = reduced.emplace(std::pair{storeys, modes}, reduce_modally(cached(storeys, false), site, modes, true)).first;
  }
  return found->second;
}

// state.range(0): storeys; range(1): modes kept. The force T^T l f on every reduced DOF.
void modal_step(benchmark::State& state, const Factory& make) {
  const ReducedModel& reduced = cached_reduction(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const std::unique_ptr<Integrator> integrator = make(reduced.model);
  std::vector<Eigen::Index> all(static_cast<std::size_t>(reduced.model.dofs()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Eigen::Index>(i);
  integrator->set_force_dofs(all);
  run_steps(state, *integrator, reduced.basis.row(0).transpose());
}

// The reduction's set-up on the sparse building: modes, correction, projection and re-diagonalisation.
void reduction_setup(benchmark::State& state) {
  const StructuralModel& model = cached(static_cast<int>(state.range(0)), false);
  const std::vector<Eigen::Index> site{0};
  for (auto _ : state) {
    const ReducedModel reduced = reduce_modally(model, site, static_cast<int>(state.range(1)), true);
    benchmark::DoNotOptimize(reduced.basis.data());
  }
}

// The sparse shear building with a bilinear spring on every storey beside its linear stiffness (a
// tenth of the storey's, yielding at 1 mm so that the springs yield under the benchmark's motion),
// stepped by KR-alpha: what the springs add to the step. state.range(0): storeys.
void spring_step(benchmark::State& state) {
  const auto storeys = static_cast<int>(state.range(0));
  static std::map<int, StructuralModel> models;
  auto found = models.find(storeys);
  if (found == models.end()) {
    StructuralModel model = cached(storeys, false);
    const double k = 0.1 * model.sparse_stiffness.coeff(storeys - 1, storeys - 1);
    std::vector<Eigen::Triplet<double>> entries;
    for (int s = 0; s < storeys; ++s) {
      HystereticLaw::Parameters law;
      law.stiffness_n_per_m = k;
      law.yield_force_n = 1e-3 * k;
      law.hardening_ratio = 0.05;
      model.springs.push_back({"storey" + std::to_string(s + 1), s, s - 1, law});
      entries.emplace_back(s, s, k);
      if (s == 0) continue;
      entries.emplace_back(s - 1, s - 1, k);
      entries.emplace_back(s, s - 1, -k);
      entries.emplace_back(s - 1, s, -k);
    }
    Eigen::SparseMatrix<double> added(model.dofs(), model.dofs());
    added.setFromTriplets(entries.begin(), entries.end());
    model.sparse_stiffness += added;
    found = models.emplace(storeys, std::move(model)).first;
  }
  const std::unique_ptr<Integrator> integrator = make_kr_alpha(found->second, kDt, 0.5);
  integrator->set_force_dofs(std::vector<Eigen::Index>{0});
  Eigen::VectorXd shape = Eigen::VectorXd::Zero(found->second.dofs());
  shape(0) = 1.0;
  run_steps(state, *integrator, shape);
}

void modal_sizes(benchmark::internal::Benchmark* b) {
  for (const int n : {100, 1000, 10000}) {
    for (const int modes : {20, 50}) b->Args({n, modes});
  }
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(modal_step, chen_ricles, [](const StructuralModel& m) {
  return make_chen_ricles(m, kDt);
})->Apply(modal_sizes);
BENCHMARK_CAPTURE(modal_step, kr_alpha, [](const StructuralModel& m) {
  return make_kr_alpha(m, kDt, 0.5);
})->Apply(modal_sizes);
BENCHMARK(spring_step)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(reduction_setup)->Apply(modal_sizes)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(step, rk4, [](const StructuralModel& m) { return make_rk4(m); })->Apply(sizes);
BENCHMARK_CAPTURE(step, chen_ricles, [](const StructuralModel& m) { return make_chen_ricles(m, kDt); })->Apply(sizes);
BENCHMARK_CAPTURE(step, kr_alpha, [](const StructuralModel& m) { return make_kr_alpha(m, kDt, 0.5); })->Apply(sizes);
BENCHMARK_CAPTURE(step, generalized_alpha, [](const StructuralModel& m) {
  return make_generalized_alpha(m, kDt, 0.5);
})->Apply(sizes);

}  // namespace
}  // namespace rths

BENCHMARK_MAIN();
