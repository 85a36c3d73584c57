// Simulated maRTHS plant cost: ns per exchange() of TwoActuatorFramePlant (both actuators: the
// reading, then two 4-state columns stepped), without and with sensor noise (two normal draws), under
// a slow sweep of the stroke commands so that no step sees the same input twice in a row.
#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

#include "experiment.pb.h"
#include "node_physical/plants/two_actuator_frame_plant.hpp"
#include "support/marths_plant.hpp"

namespace {

constexpr double kRateHz = 1024.0;
constexpr std::size_t kSteps = 4096;

// Argument: 0 noiseless, 1 with seed 001's 0.0124 mm of noise on each stroke.
void BM_TwoActuatorFramePlantExchange(benchmark::State& state) {
  rths::config::SensorNoise noise;
  noise.set_displacement_sd_m(state.range(0) == 0 ? 0.0 : 0.0124e-3);
  rths::TwoActuatorFramePlant plant(rths::test::marths_nominal_plant(), noise, kRateHz);
  std::vector<std::array<rths::InterfaceMotion, 2>> commands(kSteps);
  for (std::size_t k = 0; k < kSteps; ++k) {
    const double phase = 2.0 * std::numbers::pi * static_cast<double>(k) / kSteps;
    commands[k][0].displacement_m = 0.003 * std::sin(phase);
    commands[k][1].displacement_m = 0.002 * std::cos(phase);
  }
  std::array<rths::Measurement, 2> measured{};
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(plant.exchange(commands[k], measured, 1.0 / kRateHz));
    benchmark::ClobberMemory();
    k = (k + 1) % kSteps;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TwoActuatorFramePlantExchange)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
