// The command law's derivatives (frame_inverse_command.hpp, choice 3): the cubic fitted to a window
// of targets differentiates a cubic exactly whatever the window, so a wider window adds no lag, and
// it cuts what the inverse makes of a target that alternates every step and of white noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_inverse_command.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "support/frame_controller_run.hpp"

namespace test_frame_inverse_command {
namespace {

using rths::FrameInverseCommand;
using namespace rths::test::frame;  // the plant, kDt, kSecond

// The configs' default window, which the four seed 003 configs share.
int default_window() {
  const auto window = static_cast<int>(rths::config::UkfInverseDynamics().target_window());
  EXPECT_EQ(rths::config::EkfInverseDynamics().target_window(), static_cast<std::uint32_t>(window));
  EXPECT_EQ(rths::config::EkfTfInverseDynamics().target_window(), static_cast<std::uint32_t>(window));
  EXPECT_EQ(rths::config::UkfTfInverseDynamics().target_window(), static_cast<std::uint32_t>(window));
  return window;
}

// A cubic in time per channel (mm).
Strokes cubic_mm(std::size_t k) {
  const double t = static_cast<double>(k) * kDt;
  return {1.0 + 2.0 * t - 1.5 * t * t + 0.5 * t * t * t, -0.5 + t + 0.8 * t * t - 0.3 * t * t * t};
}

// Every window (five, eight, the configs' default and the largest) differentiates a cubic exactly, so once the start
// (the history at rest) has died away in the inverse's slowest state (the pole -z, 31.9 rad/s: e^-64 after 2 s) the
// commands agree with the four-target interpolation's to rounding. A wide window's fit evaluated a step off the
// four-target cubic's differs by 7e-4 of the command (measured), 10^5 times the tolerance; the four-target cubic's own
// timing is held by UkfController.TracksAMultiSineWithoutLatency.
TEST(FrameInverseCommand, EveryWindowDifferentiatesACubicTargetExactly) {
  const rths::FramePlantModel model = nominal_plant();
  for (const int window : {5, 8, default_window(), FrameInverseCommand::kMaxTargetWindow}) {
    FrameInverseCommand wide(model, kDt, FrameInverseCommand::kHalfStepAhead, false, window);
    FrameInverseCommand reference(model, kDt);
    for (std::size_t k = 0; k < 3 * kSecond; ++k) {
      const Strokes u = wide.step(cubic_mm(k));
      const Strokes expected = reference.step(cubic_mm(k));
      if (k < 2 * kSecond) continue;
      for (std::size_t ch = 0; ch < 2; ++ch) {
        ASSERT_NEAR(u[ch], expected[ch], 1e-9 * std::abs(expected[ch])) << "window " << window << " step " << k;
      }
    }
  }
}

// A target that alternates by 1 micrometre each step (sensor noise fed back through a massless DOF):
// through four targets the third derivative's gain at half the step rate is 8 / dt^3 and the command
// swings by 16 mm; fitted to eight (0.24 / dt^3) it swings by a tenth of that, with no lag added
// (above).
TEST(FrameInverseCommand, AWiderWindowCutsWhatTheInverseMakesOfATargetAlternatingEachStep) {
  const rths::FramePlantModel model = nominal_plant();
  const auto largest_command = [&](int window) {
    FrameInverseCommand inverse(model, kDt, FrameInverseCommand::kHalfStepAhead, false, window);
    double largest = 0.0;
    for (std::size_t k = 0; k < kSecond; ++k) {
      const double sign = k % 2 == 0 ? 1.0 : -1.0;
      const Strokes u = inverse.step({1e-3 * sign, -1e-3 * sign});
      largest = std::max({largest, std::abs(u[0]), std::abs(u[1])});
    }
    return largest;
  };
  const double four = largest_command(4);
  const double eight = largest_command(8);
  EXPECT_GT(four, 10.0) << "mm";
  EXPECT_LT(eight, four / 8.0) << "four targets: " << four << " mm, eight: " << eight << " mm";
}

// The gain of each command to white noise of unit sd on both targets, from the inverse's impulse
// responses (sqrt of the sum of their squares; the slowest pole, -z at 31.9 rad/s, has died away to
// e^-60 within the 2 s). The inverse amplifies the noise as the plant rolls off; the configs' default
// window of sixteen passes less than a twentieth of what the cubic through four targets does
// (docs/marths-ukf.md, "Properties to know").
TEST(FrameInverseCommand, TheDefaultWindowPassesATwentiethOfTheWhiteNoiseFourTargetsDo) {
  const rths::FramePlantModel model = nominal_plant();
  const auto white_noise_gain = [&](int window) {
    std::array<double, 2> sum{};
    for (std::size_t target = 0; target < 2; ++target) {
      FrameInverseCommand inverse(model, kDt, FrameInverseCommand::kHalfStepAhead, false, window);
      for (std::size_t k = 0; k < 2 * kSecond; ++k) {
        Strokes x{0.0, 0.0};
        if (k == 100) x[target] = 1.0;
        const Strokes u = inverse.step(x);
        for (std::size_t c = 0; c < 2; ++c) sum[c] += u[c] * u[c];
      }
    }
    return std::array<double, 2>{std::sqrt(sum[0]), std::sqrt(sum[1])};
  };
  const std::array<double, 2> four = white_noise_gain(FrameInverseCommand::kMinTargetWindow);
  const std::array<double, 2> sixteen = white_noise_gain(default_window());
  std::printf("[ measured ] white-noise gain of u1 / u2: %.0f / %.0f through four targets, %.0f / %.0f at %d\n",
              four[0], four[1], sixteen[0], sixteen[1], default_window());
  for (std::size_t c = 0; c < 2; ++c) {
    EXPECT_LT(sixteen[c], four[c] / 20.0) << "u" << c + 1;
  }
}

TEST(FrameInverseCommand, RefusesAWindowOutsideItsRange) {
  const rths::FramePlantModel model = nominal_plant();
  for (const int window : {FrameInverseCommand::kMinTargetWindow - 1, FrameInverseCommand::kMaxTargetWindow + 1}) {
    EXPECT_THROW(FrameInverseCommand(model, kDt, FrameInverseCommand::kHalfStepAhead, false, window),
                 std::invalid_argument)
        << window;
  }
  EXPECT_NO_THROW(FrameInverseCommand(model, kDt, FrameInverseCommand::kHalfStepAhead, false,
                                      FrameInverseCommand::kMaxTargetWindow));
}

}  // namespace
}  // namespace test_frame_inverse_command
