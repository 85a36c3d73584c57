// Setup transformation cost: ns per call of each of the four calls a site step makes (command out:
// strokes and their velocities; measurement in: interface displacements and forces), for each kind,
// over a slow sweep of the interface motion so that no call sees the same input twice in a row.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numbers>
#include <vector>

#include "node_physical/setups/inclined_actuator_setup.hpp"
#include "node_physical/setups/matrix_setup.hpp"
#include "node_physical/setups/two_actuators_setup.hpp"

namespace {

constexpr std::size_t kSteps = 4096;

// The kinds as the benchmark's argument: 0 a 3 x 2 matrix, 1 one inclined actuator, 2 two actuators.
std::unique_ptr<rths::SetupTransform> make(std::int64_t kind) {
  static const std::vector<double> kThreeOnTwo{1.0, 0.0, 0.0, 1.0, std::numbers::sqrt2 / 2, std::numbers::sqrt2 / 2};
  switch (kind) {
    case 0:
      return std::make_unique<rths::MatrixSetup>(3, kThreeOnTwo, 2);
    case 1:
      return std::make_unique<rths::InclinedActuatorSetup>(2.0, 30.0, 0.05);
    default:
      return std::make_unique<rths::TwoActuatorsSetup>(1.8, 20.0, 2.5, 135.0);
  }
}

// Interface motion of +-50 mm in every DOF, one row per step.
std::vector<std::vector<double>> motions(std::size_t dofs) {
  std::vector<std::vector<double>> out(kSteps, std::vector<double>(dofs));
  for (std::size_t k = 0; k < kSteps; ++k) {
    for (std::size_t i = 0; i < dofs; ++i) {
      out[k][i] = 0.05 * std::sin(2.0 * std::numbers::pi * static_cast<double>(k) / kSteps + static_cast<double>(i));
    }
  }
  return out;
}

void BM_Strokes(benchmark::State& state) {
  auto setup = make(state.range(0));
  const auto u = motions(setup->dofs());
  std::vector<double> s(setup->actuators());
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(setup->strokes(u[k], s));
    benchmark::ClobberMemory();
    k = (k + 1) % kSteps;
  }
}

void BM_StrokeVelocities(benchmark::State& state) {
  auto setup = make(state.range(0));
  const auto u = motions(setup->dofs());
  std::vector<double> v(setup->dofs(), 0.1);
  std::vector<double> rate(setup->actuators());
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(setup->stroke_velocities(u[k], v, rate));
    benchmark::ClobberMemory();
    k = (k + 1) % kSteps;
  }
}

// Strokes of the sweep, tabulated once, as the measurement calls' inputs.
std::vector<std::vector<double>> strokes_of(rths::SetupTransform& setup) {
  const auto u = motions(setup.dofs());
  std::vector<std::vector<double>> out(kSteps, std::vector<double>(setup.actuators()));
  for (std::size_t k = 0; k < kSteps; ++k) (void)setup.strokes(u[k], out[k]);
  return out;
}

void BM_InterfaceDisplacements(benchmark::State& state) {
  auto setup = make(state.range(0));
  const auto s = strokes_of(*setup);
  std::vector<double> u(setup->dofs());
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(setup->interface_displacements(s[k], u));
    benchmark::ClobberMemory();
    k = (k + 1) % kSteps;
  }
}

void BM_InterfaceForces(benchmark::State& state) {
  auto setup = make(state.range(0));
  const auto s = strokes_of(*setup);
  std::vector<double> f(setup->actuators(), 1500.0);
  std::vector<double> forces(setup->dofs());
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(setup->interface_forces(s[k], f, forces));
    benchmark::ClobberMemory();
    k = (k + 1) % kSteps;
  }
}

}  // namespace

BENCHMARK(BM_Strokes)->DenseRange(0, 2)->ArgName("kind");
BENCHMARK(BM_StrokeVelocities)->DenseRange(0, 2)->ArgName("kind");
BENCHMARK(BM_InterfaceDisplacements)->DenseRange(0, 2)->ArgName("kind");
BENCHMARK(BM_InterfaceForces)->DenseRange(0, 2)->ArgName("kind");

BENCHMARK_MAIN();
