#pragma once

// Closed runs of a seed 003 compensator (an InverseDynamicsController, or any site controller of two
// actuators) on an independent simulation of the maRTHS plant (zoh_frame_plant.hpp: exact zero-order
// hold, hardware-true readings), and the measures its tests read: a multi-sine of strokes, the
// tracking error, the distance of two models in the earthquake band.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/site_controller.hpp"
#include "node_physical/interfaces/measurement.hpp"
#include "support/malloc_counter.hpp"
#include "support/zoh_frame_plant.hpp"

namespace rths::test::frame {

using Complex = std::complex<double>;
using Strokes = std::array<double, 2>;

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;
constexpr double kTwoPi = 2.0 * std::numbers::pi;
constexpr std::size_t kSecond = 1024;
constexpr double kNoiseMm = 0.0124;  // the benchmark's sensor noise (seed 001 digest: sqrt(1.5e-7 x 1024))

// The benchmark's nominal plant (seed 000 digest, with its errata: roots in rad/s, H12 and H22 gains).
inline FramePlantModel nominal_plant() {
  FramePlantModel m;
  m.gain = {2165.2, 349.95, 4.5394e6, 1.9238e7};
  m.theta = {kTwoPi * 2.65, kTwoPi * 40.0, kTwoPi * 120.0, kTwoPi * 90.0, kTwoPi * 50.0,
             kTwoPi * 63.0, kTwoPi * 3.0,  kTwoPi * 5.0,   kTwoPi * 3.5,  kTwoPi * 18.5};
  return m;
}

inline FramePlantModel scaled_roots(FramePlantModel m, double factor) {
  for (double& t : m.theta) t *= factor;
  return m;
}

// Stroke targets (mm): sines at kFrequencies of 1 mm (actuator 1) and 0.8 mm (actuator 2), phases
// differing per actuator, faded in from rest over the first second.
constexpr std::array<double, 6> kFrequencies{1.0, 1.7, 2.3, 3.1, 4.0, 5.0};
inline Strokes multisine_mm(std::size_t k) {
  const double t = static_cast<double>(k) * kDt;
  const double fade = t < 1.0 ? 0.5 - 0.5 * std::cos(std::numbers::pi * t) : 1.0;
  Strokes r{};
  for (std::size_t n = 0; n < kFrequencies.size(); ++n) {
    const double phase = kTwoPi * kFrequencies[n] * t;
    r[0] += fade * std::sin(phase + 0.3 * static_cast<double>(n));
    r[1] += fade * 0.8 * std::sin(phase + 1.1 * static_cast<double>(n) + 0.5);
  }
  return r;
}

struct Trace {
  std::vector<Strokes> target, measured, command;
};

// Called before each step's command with the step and the readings the controller is about to get
// (m; a tamper may mark them held, as a site's interface does for a reading that did not come).
using Tamper = std::function<void(std::size_t, std::array<Measurement, 2>&)>;

// A closed run: the controller's commands to the plant, the plant's readings with seeded noise (sd
// noise_mm) back as the next step's `previous`; with latency_steps > 0 the plant receives each
// command that many steps late. The trace holds targets, noise-free readings and commands in mm.
inline Trace simulate(SiteController& controller, const FramePlantModel& truth, std::size_t steps,
                      double noise_mm = 0.0, int latency_steps = 0, const Tamper& tamper = {}) {
  ZohFramePlant plant(truth, kDt);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  Trace out;
  Strokes reading{};
  std::array<InterfaceMotion, 2> commands{};
  std::vector<Strokes> pending(static_cast<std::size_t>(latency_steps) + 1, Strokes{});
  for (std::size_t k = 0; k < steps; ++k) {
    const Strokes r = multisine_mm(k);
    const std::array<InterfaceMotion, 2> targets{InterfaceMotion{r[0] / 1000.0}, InterfaceMotion{r[1] / 1000.0}};
    std::array<Measurement, 2> previous{Measurement{reading[0] / 1000.0}, Measurement{reading[1] / 1000.0}};
    if (tamper) tamper(k, previous);
    controller.command(targets, previous, commands, kDt);
    const Strokes u{commands[0].displacement_m * 1000.0, commands[1].displacement_m * 1000.0};
    pending.insert(pending.begin(), u);
    pending.pop_back();
    const Strokes y = plant.step(pending.back());
    for (std::size_t i = 0; i < 2; ++i) reading[i] = y[i] + noise_mm * noise(rng);
    out.target.push_back(r);
    out.measured.push_back(y);
    out.command.push_back(u);
  }
  return out;
}

// std(y - r) / std(r) of actuator i over steps [from, to) (seed 000's J2, the benchmark code's std form).
inline double nrms(const Trace& t, std::size_t i, std::size_t from, std::size_t to) {
  double se = 0, see = 0, st = 0, stt = 0;
  const auto n = static_cast<double>(to - from);
  for (std::size_t k = from; k < to; ++k) {
    const double e = t.measured[k][i] - t.target[k][i];
    se += e;
    see += e * e;
    st += t.target[k][i];
    stt += t.target[k][i] * t.target[k][i];
  }
  return std::sqrt((see - se * se / n) / (stt - st * st / n));
}

// The distance of two models where the compensation needs them equal: the largest relative
// difference of the transfer matrices over 1-5 Hz, max_f || H(jw | a) - H(jw | b) ||_F / || H(jw | b) ||_F.
inline double band_error(const FramePlantModel& a, const FramePlantModel& b) {
  double worst = 0.0;
  for (const double f : {1.0, 2.0, 3.0, 4.0, 5.0}) {
    const Complex s(0.0, kTwoPi * f);
    double diff = 0.0, norm = 0.0;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        diff += std::norm(a.response(i, j, s) - b.response(i, j, s));
        norm += std::norm(b.response(i, j, s));
      }
    }
    worst = std::max(worst, std::sqrt(diff / norm));
  }
  return worst;
}

// Seed 003's premise, for any of its estimators: a plant whose roots are all 5 % above the model's
// (13 % band error), the benchmark's sensor noise, 60 s of the multi-sine; the same run with the
// estimate held at its start beside it. `make(model, hold)` builds the controller from `model`, its
// estimate unable to move when `hold` (its prior 1e-30 and no process noise).
struct PerturbedRun {
  double band_before = 0.0;  // band_error of the start and of the final model
  double band_after = 0.0;
  std::array<double, 2> tracking{};  // NRMS of the last 5 s, estimating
  std::array<double, 2> held{};      // the same with the estimate held
  FramePlantModel final_model;
  std::string freeze_message;  // "" when the estimate never froze
};
template <class Make>
PerturbedRun run_on_perturbed_plant(Make make) {
  const FramePlantModel model = nominal_plant();
  const FramePlantModel truth = scaled_roots(model, 1.05);
  PerturbedRun out;
  out.band_before = band_error(model, truth);
  const auto estimating = make(model, false);
  const Trace t = simulate(*estimating, truth, 60 * kSecond, kNoiseMm);
  const auto fixed = make(model, true);
  const Trace f = simulate(*fixed, truth, 60 * kSecond, kNoiseMm);
  out.final_model = estimating->model();
  out.band_after = band_error(out.final_model, truth);
  out.freeze_message = estimating->freeze_message();
  for (std::size_t i = 0; i < 2; ++i) {
    out.tracking[i] = nrms(t, i, 55 * kSecond, 60 * kSecond);
    out.held[i] = nrms(f, i, 55 * kSecond, 60 * kSecond);
  }
  std::printf("[ measured ] band error %.3g -> %.3g; NRMS of the last 5 s %.3g/%.3g %% against %.3g/%.3g %% held\n",
              out.band_before, out.band_after, 100 * out.tracking[0], 100 * out.tracking[1], 100 * out.held[0],
              100 * out.held[1]);
  return out;
}

// The closed loop of simulate() without a trace or noise, and the calls of malloc it made on this
// thread: Eigen's temporaries, and every operator new too (the test program's replacement allocates
// with malloc). The controller's allocations, since the loop allocates nothing once the plant is built.
inline std::uint64_t closed_loop_allocations(SiteController& controller, const FramePlantModel& truth,
                                             std::size_t steps) {
  ZohFramePlant plant(truth, kDt);
  std::array<InterfaceMotion, 2> targets{};
  std::array<Measurement, 2> previous{};
  std::array<InterfaceMotion, 2> commands{};
  const std::uint64_t before = mallocs_on_this_thread();
  for (std::size_t k = 0; k < steps; ++k) {
    const Strokes r = multisine_mm(k);
    targets[0].displacement_m = r[0] / 1000.0;
    targets[1].displacement_m = r[1] / 1000.0;
    controller.command(targets, previous, commands, kDt);
    const Strokes y = plant.step({commands[0].displacement_m * 1000.0, commands[1].displacement_m * 1000.0});
    previous[0].displacement_m = y[0] / 1000.0;
    previous[1].displacement_m = y[1] / 1000.0;
  }
  return mallocs_on_this_thread() - before;
}

}  // namespace rths::test::frame
