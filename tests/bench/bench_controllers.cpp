// Controller step cost (the budget: under 2 us per step for RLS on one actuator): ns per
// command() of each local actuator controller at 1024 Hz, in closed loop with a 13-step-delay
// actuator and seeded sensor noise, so the previous measurement is a realistic one. The actuator is
// a ring buffer and a table lookup (~1 ns), inside the timing for every controller alike.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "node_physical/controllers/actuator_controller.hpp"
#include "node_physical/controllers/iir_filter.hpp"
#include "node_physical/controllers/model_feedforward.hpp"
#include "node_physical/controllers/pass_through.hpp"
#include "node_physical/controllers/polynomial_extrapolation.hpp"
#include "node_physical/controllers/rls_compensator.hpp"

namespace {

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;
constexpr std::size_t kRamp = 1024;    // 1 s from rest
constexpr std::size_t kPeriod = 4096;  // 4 s: the target repeats exactly after the ramp
constexpr int kDelaySteps = 13;        // 12.7 ms, near seed 004's actuator

// Targets in the band of the seed 002 frame (0.5-2.5 Hz, multiples of 0.25 Hz) rising from rest
// over 1 s (a compensator started on a moving target regresses on nonsense first), and seed 001's
// sensor noise (0.0124 mm RMS), tabulated once.
struct Signals {
  std::vector<rths::InterfaceMotion> target;
  std::vector<double> noise_m;
  Signals() {
    std::mt19937_64 rng(1);
    std::normal_distribution<double> noise(0.0, 0.0124e-3);
    for (std::size_t i = 0; i < kRamp + kPeriod; ++i) {
      const double t = static_cast<double>(i) * kDt;
      const double ramp = i < kRamp ? 0.5 - 0.5 * std::cos(std::numbers::pi * t) : 1.0;
      rths::InterfaceMotion m;
      for (const double f : {0.5, 0.75, 1.25, 1.75, 2.5}) {
        const double w = 2.0 * std::numbers::pi * f;
        m.displacement_m += ramp * 0.002 * std::sin(w * t + f);
        m.velocity_m_per_s += ramp * 0.002 * w * std::cos(w * t + f);
        m.acceleration_m_per_s2 -= ramp * 0.002 * w * w * std::sin(w * t + f);
      }
      target.push_back(m);
      noise_m.push_back(noise(rng));
    }
  }
  // Step k of a run: the ramp, then the steady part over and over.
  [[nodiscard]] static std::size_t index(std::size_t k) { return k < kRamp ? k : kRamp + (k - kRamp) % kPeriod; }
};

const Signals& signals() {
  static const Signals s;
  return s;
}

// One command() per benchmark iteration. The controller is rebuilt (outside the timing) every
// 64 s of simulated time, so an RLS compensator is always in its first minute of adaptation and
// never frozen: every step runs the full update.
void run(benchmark::State& state, const std::function<std::unique_ptr<rths::ActuatorController>()>& make) {
  const Signals& s = signals();
  std::unique_ptr<rths::ActuatorController> controller = make();
  std::vector<double> delay_line(kDelaySteps + 1, 0.0);
  std::size_t slot = 0;
  std::size_t k = 0;  // step of the current controller's run
  std::int64_t steps = 0;
  rths::Measurement last;
  std::string failure;
  for (auto _ : state) {
    const std::size_t at = Signals::index(k);
    const rths::InterfaceMotion command = controller->command(s.target[at], last, kDt);
    delay_line[slot] = command.displacement_m;
    slot = slot == kDelaySteps ? 0 : slot + 1;
    last.displacement_m = delay_line[slot] + s.noise_m[at];
    benchmark::DoNotOptimize(last);
    ++steps;
    if (++k == 65536) {
      state.PauseTiming();
      const auto* rls = dynamic_cast<const rths::RlsCompensator*>(controller.get());
      if (rls != nullptr && rls->frozen() != rths::RlsFreeze::kNone) failure = rls->freeze_message();
      controller = make();
      std::fill(delay_line.begin(), delay_line.end(), 0.0);
      last = {};
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

void BM_PassThrough(benchmark::State& state) {
  run(state, [] { return std::make_unique<rths::PassThroughController>(); });
}
BENCHMARK(BM_PassThrough);

// Horiuchi extrapolation, order 3, over the actuator's delay.
void BM_PolynomialExtrapolation(benchmark::State& state) {
  run(state, [] { return std::make_unique<rths::PolynomialExtrapolationController>(kDelaySteps * kDt, 3, kDt); });
}
BENCHMARK(BM_PolynomialExtrapolation);

// Inverse of a third-order actuator model (the largest the config allows).
void BM_ModelFeedforward(benchmark::State& state) {
  const std::vector<double> denominator{1.0, 300.0, 3.0e4, 1.0e6};
  run(state, [&] { return std::make_unique<rths::ModelFeedforwardController>(denominator, kDt); });
}
BENCHMARK(BM_ModelFeedforward);

// Seed 001 RLS compensator, taps from the argument (4 is seed 001's), every other field default.
void BM_RlsCompensator(benchmark::State& state) {
  rths::config::RlsCompensator parameters;
  parameters.set_taps(static_cast<std::uint32_t>(state.range(0)));
  run(state, [&] { return std::make_unique<rths::RlsCompensator>(parameters, kDt); });
}
BENCHMARK(BM_RlsCompensator)->Arg(4)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
