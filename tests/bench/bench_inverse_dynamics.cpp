// The maRTHS site controllers of seed 003 (UKF-SS, EKF-SS, EKF-TF, UKF-TF) and seed 000 (LQG), cost per step (the
// budget: the 976.6 us step at 1024 Hz; seed 003's MATLAB took 0.68 ms per step for its whole
// simulation). One command() per iteration in closed loop with the maRTHS plant model (exact
// zero-order hold, tests/support/zoh_frame_plant.hpp), a 1-5 Hz multi-sine of a few mm and the
// benchmark's sensor noise, so that every step runs the filter's full prediction and update. The
// targets and the noise are drawn before the timing (their sines and normal draws cost more than the
// cheapest controllers' step); what stays inside it, the plant's step and the loop, BM_Harness times
// with a controller that does nothing.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "node_physical/controllers/ekf_controller.hpp"
#include "node_physical/controllers/ekf_tf_controller.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/lqg_controller.hpp"
#include "node_physical/controllers/ukf_controller.hpp"
#include "node_physical/controllers/ukf_tf_controller.hpp"
#include "support/zoh_frame_plant.hpp"

namespace {

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;
constexpr double kTwoPi = 2.0 * std::numbers::pi;
constexpr std::size_t kRunSteps = std::size_t{60} * 1024;  // the controller is rebuilt (untimed) every 60 s

rths::FramePlantModel nominal_plant() {
  rths::FramePlantModel m;
  m.gain = {2165.2, 349.95, 4.5394e6, 1.9238e7};
  m.theta = {kTwoPi * 2.65, kTwoPi * 40.0, kTwoPi * 120.0, kTwoPi * 90.0, kTwoPi * 50.0,
             kTwoPi * 63.0, kTwoPi * 3.0,  kTwoPi * 5.0,   kTwoPi * 3.5,  kTwoPi * 18.5};
  return m;
}

// The model 5 % off the plant, so that the estimate is moving throughout.
rths::FramePlantModel model_of_plant() {
  rths::FramePlantModel m = nominal_plant();
  for (double& t : m.theta) t /= 1.05;
  return m;
}

rths::InterfaceMotion target(std::size_t k, std::size_t actuator) {
  const double t = static_cast<double>(k) * kDt;
  double x_mm = 0.0;
  for (const double f : {1.0, 1.7, 2.3, 3.1, 4.0, 5.0})
    x_mm += std::sin(kTwoPi * f * t + static_cast<double>(actuator));
  return {x_mm / 1000.0};
}

// One run's targets and sensor noise (mm), per step and actuator, drawn once outside the timing.
struct RunInputs {
  std::vector<std::array<rths::InterfaceMotion, 2>> targets;
  std::vector<std::array<double, 2>> noise_mm;
};
const RunInputs& run_inputs() {
  static const RunInputs inputs = [] {
    RunInputs in;
    std::mt19937_64 rng(1);
    std::normal_distribution<double> noise(0.0, 0.0124);
    for (std::size_t k = 0; k < kRunSteps; ++k) {
      in.targets.push_back({target(k, 0), target(k, 1)});
      const double n0 = noise(rng);
      in.noise_mm.push_back({n0, noise(rng)});
    }
    return in;
  }();
  return inputs;
}

// What the timing holds besides the controller: the plant's step and the loop.
class NoController {
 public:
  static void command(std::span<const rths::InterfaceMotion> targets, std::span<const rths::Measurement> /*measured*/,
                      std::span<rths::InterfaceMotion> commands, double /*dt_s*/) {
    std::copy(targets.begin(), targets.end(), commands.begin());
  }
};

// One command() per iteration of the controller `make` builds (from the model 5 % off the plant).
template <class Make>
void run(benchmark::State& state, Make make) {
  const rths::FramePlantModel plant_model = nominal_plant();
  const RunInputs& inputs = run_inputs();
  auto controller = make();
  auto plant = std::make_unique<rths::test::ZohFramePlant>(plant_model, kDt);
  std::array<rths::Measurement, 2> previous{};
  std::array<rths::InterfaceMotion, 2> commands{};
  std::size_t k = 0;
  std::int64_t steps = 0;
  std::string failure;
  for (auto _ : state) {
    controller->command(inputs.targets[k], previous, commands, kDt);
    const std::array<double, 2> y =
        plant->step({commands[0].displacement_m * 1000.0, commands[1].displacement_m * 1000.0});
    previous[0].displacement_m = (y[0] + inputs.noise_mm[k][0]) / 1000.0;
    previous[1].displacement_m = (y[1] + inputs.noise_mm[k][1]) / 1000.0;
    benchmark::DoNotOptimize(previous);
    ++steps;
    if (++k == kRunSteps) {
      state.PauseTiming();
      if constexpr (requires { controller->frozen(); }) {
        if (controller->frozen() != rths::EstimateFreeze::kNone) failure = controller->freeze_message();
      }
      controller = make();
      plant = std::make_unique<rths::test::ZohFramePlant>(plant_model, kDt);
      previous = {};
      k = 0;
      state.ResumeTiming();
      if (!failure.empty()) {
        state.SkipWithError(failure.c_str());
        break;
      }
    }
  }
  state.SetItemsProcessed(steps);
}

// Seed 003's UKF-SS as ukf_controller.hpp realises it: RK4 model, 37 sigma points, 20 Hz filters
// (Table 1's defaults, as every controller here).
template <class Controller, class Config>
auto seed003_controller(rths::config::ModelDiscretisation discretisation) {
  return [discretisation] {
    Config parameters;
    parameters.set_discretisation(discretisation);
    return std::make_unique<Controller>(parameters, model_of_plant(), kRateHz);
  };
}

void BM_UkfInverseDynamics(benchmark::State& state) {
  run(state, seed003_controller<rths::UkfInverseDynamicsController, rths::config::UkfInverseDynamics>(
                 rths::config::RUNGE_KUTTA_4));
}
BENCHMARK(BM_UkfInverseDynamics);

// The same with seed 003's forward-Euler model (Eqs. 15-16): what the RK4 step costs.
void BM_UkfInverseDynamicsForwardEuler(benchmark::State& state) {
  run(state, seed003_controller<rths::UkfInverseDynamicsController, rths::config::UkfInverseDynamics>(
                 rths::config::FORWARD_EULER));
}
BENCHMARK(BM_UkfInverseDynamicsForwardEuler);

// Seed 003's EKF-SS as ekf_controller.hpp realises it: the same model and filters, one Jacobian of the
// RK4 step (four stages' chain rule) and 18 x 18 covariance products instead of 37 sigma points.
void BM_EkfInverseDynamics(benchmark::State& state) {
  run(state, seed003_controller<rths::EkfInverseDynamicsController, rths::config::EkfInverseDynamics>(
                 rths::config::RUNGE_KUTTA_4));
}
BENCHMARK(BM_EkfInverseDynamics);

// Seed 003's TF variants (Table 1's defaults): the inverse of the readings under the estimate with the
// states' root sensitivities (a dual-number step of ten derivatives), then the EKF-TF's 10 x 10
// update with its Jacobian, or the UKF-TF's 21 sigma points through the inverse.
template <class Controller, class Config>
void run_tf(benchmark::State& state) {
  run(state, [] { return std::make_unique<Controller>(Config{}, model_of_plant(), kRateHz); });
}
void BM_EkfTfInverseDynamics(benchmark::State& state) {
  run_tf<rths::EkfTfInverseDynamicsController, rths::config::EkfTfInverseDynamics>(state);
}
BENCHMARK(BM_EkfTfInverseDynamics);
void BM_UkfTfInverseDynamics(benchmark::State& state) {
  run_tf<rths::UkfTfInverseDynamicsController, rths::config::UkfTfInverseDynamics>(state);
}
BENCHMARK(BM_UkfTfInverseDynamics);

// Seed 000's benchmark controller (lqg_controller.hpp), the schema's default weights, designed from
// the same model 5 % off the plant: the filter's correction and prediction (8 x 8) and the gains.
void BM_LqgBenchmark(benchmark::State& state) {
  run(state,
      [] { return std::make_unique<rths::LqgController>(rths::config::LqgBenchmark{}, model_of_plant(), kRateHz); });
}
BENCHMARK(BM_LqgBenchmark);

// The harness alone: the plant's step and the loop, to subtract from the rows above.
void BM_Harness(benchmark::State& state) {
  run(state, [] { return std::make_unique<NoController>(); });
}
BENCHMARK(BM_Harness);

// The command law alone (blocks I-III), what a frozen estimate leaves of the step, its cubic fitted to
// the argument's number of targets (16: the configs' default; 4: through the last four, docs/marths-ukf.md,
// choice 3).
void BM_FrameInverseCommand(benchmark::State& state) {
  const RunInputs& inputs = run_inputs();
  rths::FrameInverseCommand inverse(nominal_plant(), kDt, rths::FrameInverseCommand::kHalfStepAhead, false,
                                    static_cast<int>(state.range(0)));
  std::size_t k = 0;
  for (auto _ : state) {
    const std::array<double, 2> u =
        inverse.step({inputs.targets[k][0].displacement_m * 1000.0, inputs.targets[k][1].displacement_m * 1000.0});
    benchmark::DoNotOptimize(u);
    k = (k + 1) % kRunSteps;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FrameInverseCommand)->ArgName("target_window")->Arg(4)->Arg(16);

}  // namespace

BENCHMARK_MAIN();
