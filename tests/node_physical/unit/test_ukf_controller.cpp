// Seed 003's UKF-SS compensator (ukf_controller.hpp) against an independent simulation of the maRTHS
// plant (zoh_frame_plant.hpp: exact zero-order hold, hardware-true readings).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/ukf_controller.hpp"
#include "results.pb.h"
#include "support/frame_controller_run.hpp"
#include "support/zoh_frame_plant.hpp"

namespace test_ukf_controller {
namespace {

using rths::EstimateFreeze;
using rths::FramePlantModel;
using rths::InterfaceMotion;
using rths::Measurement;
using rths::UkfInverseDynamicsController;
using namespace rths::test::frame;  // the closed runs and their measures

rths::config::UkfInverseDynamics seed003() {
  return {};  // the schema's defaults are seed 003 Table 1's UKF-SS values
}

// The test plant itself: held constant commands settle on FramePlantModel's static gains, and the
// reading of the tick a command is first given does not show it (hardware-true).
TEST(UkfController, TestPlantSettlesOnTheModelsStaticGains) {
  const FramePlantModel m = nominal_plant();
  for (std::size_t j = 0; j < 2; ++j) {
    rths::test::ZohFramePlant plant(m, kDt);
    Strokes u{};
    u[j] = 1.0;
    const Strokes first = plant.step(u);
    EXPECT_EQ(first[0], 0.0);
    EXPECT_EQ(first[1], 0.0);
    Strokes y{};
    for (std::size_t k = 0; k < 20 * kSecond; ++k) y = plant.step(u);  // 20 s: 330 time constants of a1
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(y[i], m.static_gain(static_cast<int>(i), static_cast<int>(j)), 1e-9) << "H" << i + 1 << j + 1;
    }
  }
}

// A constant target is held by the static inverse H(0)^-1 r from the first step on (the inverse starts
// at rest at the first target): the factored inverse's algebra against the 2 x 2 inverse of the
// model's static gains.
TEST(UkfController, ConstantTargetIsHeldByTheStaticInverse) {
  const FramePlantModel m = nominal_plant();
  rths::FrameInverseCommand inverse(m, kDt);
  const Strokes r{3.0, -2.0};
  const double h11 = m.static_gain(0, 0), h12 = m.static_gain(0, 1), h21 = m.static_gain(1, 0),
               h22 = m.static_gain(1, 1);
  const double det = h11 * h22 - h12 * h21;
  const Strokes expected{(h22 * r[0] - h12 * r[1]) / det, (-h21 * r[0] + h11 * r[1]) / det};
  for (int k = 0; k < 100; ++k) {
    const Strokes u = inverse.step(r);
    EXPECT_NEAR(u[0], expected[0], 1e-12 * std::abs(expected[0])) << "step " << k;
    EXPECT_NEAR(u[1], expected[1], 1e-12 * std::abs(expected[1])) << "step " << k;
  }
}

// With the true plant as its model and no noise, the inverse of the target half a step ahead makes the
// reading of tick k+1 meet target k+1: the residual is of the hold and the trapezoidal rule,
// O((w dt)^2 / 12) = 8e-5 at 5 Hz per term, and of the cubic fitted to the default window's 16 targets
// of the sines (0.010 % and 0.077 % NRMS measured; 0.003 % and 0.0095 % through four targets). The
// bound, 0.1 % NRMS, is a twentieth of what one step of latency costs: with the roots held
// (the estimate would otherwise learn part of the lag as a slower plant) a plant that receives each
// command a step late lags the target by dt, an error of sqrt(sum (2 - 2 cos w dt) / n) = 1.94 % for
// these equal amplitudes, which the run shows to 5 %.
TEST(UkfController, TracksAMultiSineWithoutLatency) {
  const FramePlantModel truth = nominal_plant();
  constexpr double kBound = 1e-3;
  UkfInverseDynamicsController controller(seed003(), truth, kRateHz);
  const Trace t = simulate(controller, truth, 10 * kSecond);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_LT(nrms(t, i, 2 * kSecond, t.target.size()), kBound) << "actuator " << i + 1;
  }

  double delayed = 0.0;
  for (const double f : kFrequencies) delayed += 2.0 - 2.0 * std::cos(kTwoPi * f * kDt);
  delayed = std::sqrt(delayed / static_cast<double>(kFrequencies.size()));
  rths::config::UkfInverseDynamics held = seed003();
  held.set_initial_covariance(1e-30);
  held.set_process_noise(0.0);
  UkfInverseDynamicsController late(held, truth, kRateHz);
  const Trace l = simulate(late, truth, 10 * kSecond, 0.0, 1);
  for (std::size_t i = 0; i < 2; ++i) {
    const double j2 = nrms(l, i, 2 * kSecond, l.target.size());
    EXPECT_NEAR(j2, delayed, 0.05 * delayed) << "actuator " << i + 1;
    EXPECT_GT(j2, 10.0 * kBound);
  }
}

// Started on the true plant, with the benchmark's sensor noise, the estimate stays on it (the model's
// response in the band within 0.1 % after 30 s; 1.0e-4 measured). The model stepped by forward Euler
// (seed 003 Eqs. 15-16) leads the held plant by half a step, and the filter pulls the roots off to
// explain it: 0.94 % after the same run, the bias choice 6 of ukf_controller.hpp avoids.
TEST(UkfController, EstimateStaysOnTheTruePlant) {
  const FramePlantModel truth = nominal_plant();
  UkfInverseDynamicsController rk4(seed003(), truth, kRateHz);
  simulate(rk4, truth, 30 * kSecond, kNoiseMm);
  EXPECT_EQ(rk4.frozen(), EstimateFreeze::kNone) << rk4.freeze_message();
  EXPECT_LT(band_error(rk4.model(), truth), 1e-3);

  rths::config::UkfInverseDynamics forward_euler = seed003();
  forward_euler.set_discretisation(rths::config::FORWARD_EULER);
  UkfInverseDynamicsController euler(forward_euler, truth, kRateHz);
  simulate(euler, truth, 30 * kSecond, kNoiseMm);
  EXPECT_GT(band_error(euler.model(), truth), 5e-3);
}

// Seed 003's premise: a plant whose roots are all 5 % above the model's (its static gains 9 % and 14 %
// lower, 13 % band error) and the benchmark's sensor noise. Over 60 s of the multi-sine the estimate
// moves toward it: the band error shrinks at least eightfold (0.9 % measured), a1 -- the root the band
// response hangs on most, with a prior sd of 1 rad/s, 6 % of it -- ends within 1 % of the truth, and
// the tracking error of the last 5 s is under a tenth of the error with the model held at its start
// (0.26 % and 0.64 % against 7.3 % and 13.6 % measured).
TEST(UkfController, EstimateMovesTowardAPerturbedPlant) {
  const PerturbedRun r = run_on_perturbed_plant([](const FramePlantModel& model, bool hold) {
    rths::config::UkfInverseDynamics parameters = seed003();
    if (hold) {
      parameters.set_initial_covariance(1e-30);  // the roots cannot move
      parameters.set_process_noise(0.0);
    }
    return std::make_unique<UkfInverseDynamicsController>(parameters, model, kRateHz);
  });
  ASSERT_GT(r.band_before, 0.12);
  EXPECT_EQ(r.freeze_message, "");
  EXPECT_LT(r.band_after, r.band_before / 8.0);
  const double a1 = scaled_roots(nominal_plant(), 1.05).theta[FramePlantModel::kA1];
  EXPECT_NEAR(r.final_model.theta[FramePlantModel::kA1], a1, 0.01 * a1);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_LT(r.tracking[i], r.held[i] / 10.0) << "actuator " << i + 1;
}

// A reading that is not finite freezes the estimate at that step; the commands go on with the last
// good model, finite and still on target.
TEST(UkfController, NonFiniteReadingFreezesTheEstimate) {
  const FramePlantModel truth = nominal_plant();
  UkfInverseDynamicsController controller(seed003(), truth, kRateHz);
  rths::FramePlantModel at_freeze;
  std::uint64_t updates_at_freeze = 0;
  const auto tamper = [&](std::size_t k, std::array<rths::Measurement, 2>& reading) {
    if (k == 2 * kSecond) {
      reading[1].displacement_m = std::numeric_limits<double>::quiet_NaN();
      at_freeze = controller.model();
      updates_at_freeze = controller.updates();
    }
  };
  const Trace t = simulate(controller, truth, 6 * kSecond, kNoiseMm, 0, tamper);
  EXPECT_EQ(controller.frozen(), EstimateFreeze::kNotFinite);
  EXPECT_EQ(controller.frozen_at_step(), static_cast<std::int64_t>(2 * kSecond));
  EXPECT_EQ(controller.updates(), updates_at_freeze);
  EXPECT_EQ(controller.model().theta, at_freeze.theta);
  for (const Strokes& u : t.command) EXPECT_TRUE(std::isfinite(u[0]) && std::isfinite(u[1]));
  for (std::size_t i = 0; i < 2; ++i) EXPECT_LT(nrms(t, i, 3 * kSecond, t.target.size()), 1e-3);
  EXPECT_NE(controller.freeze_message().find("frozen at step 2048: a non-finite value"), std::string::npos)
      << controller.freeze_message();
  EXPECT_EQ(controller.warning(), controller.freeze_message());
}

// A target that is not finite gives commands that are not finite (the site refuses to send them) and
// freezes the estimate, which would otherwise learn from them.
TEST(UkfController, NonFiniteTargetGivesNonFiniteCommands) {
  UkfInverseDynamicsController controller(seed003(), nominal_plant(), kRateHz);
  std::array<InterfaceMotion, 2> targets{};
  const std::array<Measurement, 2> previous{};
  std::array<InterfaceMotion, 2> commands{};
  controller.command(targets, previous, commands, kDt);
  targets[0].displacement_m = std::numeric_limits<double>::infinity();
  controller.command(targets, previous, commands, kDt);
  EXPECT_TRUE(std::isnan(commands[0].displacement_m));
  EXPECT_TRUE(std::isnan(commands[1].displacement_m));
  EXPECT_EQ(controller.frozen(), EstimateFreeze::kNotFinite);
}

// A covariance that is no longer positive definite freezes the estimate: a measurement noise of
// 1e-20 mm^2 and no process noise leave the posterior singular, and rounding makes it indefinite.
TEST(UkfController, CovarianceThatLosesDefinitenessFreezes) {
  rths::config::UkfInverseDynamics parameters = seed003();
  parameters.set_measurement_noise(1e-20);
  parameters.set_process_noise(0.0);
  const FramePlantModel truth = nominal_plant();
  UkfInverseDynamicsController controller(parameters, truth, kRateHz);
  const Trace t = simulate(controller, truth, 2 * kSecond, kNoiseMm);
  EXPECT_EQ(controller.frozen(), EstimateFreeze::kIndefinite);
  EXPECT_NE(controller.freeze_message().find("no longer positive definite"), std::string::npos);
  for (const Strokes& u : t.command) EXPECT_TRUE(std::isfinite(u[0]) && std::isfinite(u[1]));
}

// An estimate heading for a non-minimum-phase plant freezes before its inverse turns unstable: with
// p2 = 1 rad/s the inverse's pole is at -z = -0.29 rad/s; the plant's p2 = 0.5 rad/s puts its zero in
// the right half-plane (z = -0.23 rad/s), and the estimate stops before z reaches 1 % of its start.
TEST(UkfController, EstimateTowardAnUnstableInverseFreezes) {
  FramePlantModel model = nominal_plant();
  model.theta[FramePlantModel::kP2] = 1.0;
  FramePlantModel truth = model;
  truth.theta[FramePlantModel::kP2] = 0.5;
  ASSERT_LT(rths::FrameInverseCommand::transmission_zero(truth), 0.0);
  const double start = rths::FrameInverseCommand::transmission_zero(model);
  UkfInverseDynamicsController controller(seed003(), model, kRateHz);
  const Trace t = simulate(controller, truth, 10 * kSecond, kNoiseMm);
  EXPECT_EQ(controller.frozen(), EstimateFreeze::kUnstableInverse);
  EXPECT_GT(rths::FrameInverseCommand::transmission_zero(controller.model()), 0.01 * start);
  for (const Strokes& u : t.command) EXPECT_TRUE(std::isfinite(u[0]) && std::isfinite(u[1]));
}

// No root estimate goes below 1 % of its start, and the estimate goes on from there: the plant's a1 is
// 0.01 rad/s (a near-integrating actuator 1, 1/1665 of the model's 16.65 rad/s), the filter pulls a1
// toward it, and the estimate stays at 0.167 rad/s while the other roots are still estimated.
TEST(UkfController, RootsStayAboveTheirFloor) {
  const FramePlantModel model = nominal_plant();
  FramePlantModel truth = model;
  truth.theta[FramePlantModel::kA1] = 0.01;
  const double floor = 0.01 * model.theta[FramePlantModel::kA1];
  UkfInverseDynamicsController controller(seed003(), model, kRateHz);
  double lowest = model.theta[FramePlantModel::kA1];
  simulate(controller, truth, 30 * kSecond, kNoiseMm, 0, [&](std::size_t, std::array<rths::Measurement, 2>&) {
    lowest = std::min(lowest, controller.model().theta[FramePlantModel::kA1]);
  });
  EXPECT_GT(controller.clamps(), 0u);
  EXPECT_EQ(lowest, floor);
  EXPECT_EQ(controller.model().theta[FramePlantModel::kA1], floor);
  EXPECT_EQ(controller.frozen(), EstimateFreeze::kNone) << controller.freeze_message();
  EXPECT_EQ(controller.updates(), 30 * kSecond - 1);
  EXPECT_NE(controller.warning().find("held at 1 % of their initial values"), std::string::npos);
}

// report(): the ten roots at the start and at the end, the updates, whether and why it froze, alike
// for both actuators.
TEST(UkfController, ReportsRootsUpdatesAndFreeze) {
  const FramePlantModel model = nominal_plant();
  UkfInverseDynamicsController controller(seed003(), model, kRateHz);
  const std::size_t steps = 3 * kSecond;
  simulate(controller, scaled_roots(model, 1.05), steps, kNoiseMm);
  for (std::size_t a = 0; a < 2; ++a) {
    rths::results::ControllerReport report;
    controller.report(a, report);
    ASSERT_TRUE(report.has_ukf());
    const auto& r = report.ukf();
    ASSERT_EQ(r.initial_theta_size(), FramePlantModel::kRoots);
    ASSERT_EQ(r.final_theta_size(), FramePlantModel::kRoots);
    for (int i = 0; i < FramePlantModel::kRoots; ++i) {
      EXPECT_EQ(r.initial_theta(i), model.theta[i]);
      EXPECT_EQ(r.final_theta(i), controller.model().theta[i]);
    }
    EXPECT_NE(r.final_theta(FramePlantModel::kA1), r.initial_theta(FramePlantModel::kA1));
    EXPECT_EQ(r.updates(), steps - 1);  // every step but the first, whose reading is the start
    EXPECT_FALSE(r.frozen());
    EXPECT_EQ(r.freeze_message(), "");
  }

  UkfInverseDynamicsController frozen(seed003(), model, kRateHz);
  simulate(frozen, model, 100, 0.0, 0, [](std::size_t k, std::array<rths::Measurement, 2>& reading) {
    if (k == 50) reading[0].displacement_m = std::numeric_limits<double>::quiet_NaN();
  });
  rths::results::ControllerReport report;
  frozen.report(1, report);
  EXPECT_TRUE(report.ukf().frozen());
  EXPECT_EQ(report.ukf().updates(), 49u);
  EXPECT_EQ(report.ukf().freeze_message(), frozen.freeze_message());
}

TEST(UkfController, CommandAllocatesNothing) {
  const FramePlantModel truth = nominal_plant();
  UkfInverseDynamicsController controller(seed003(), truth, kRateHz);
  EXPECT_EQ(closed_loop_allocations(controller, truth, kSecond), 0U);
  EXPECT_EQ(controller.updates(), kSecond - 1);
}

// What the constructor refuses beside the rules (SiteControllerContract.TheRulesRefuse...): no filter
// is accepted, a model whose inverse is not stable is not.
TEST(UkfController, RefusesAModelWithoutAStableInverse) {
  rths::config::UkfInverseDynamics no_filter = seed003();
  no_filter.set_filter_order(0);
  no_filter.set_filter_cutoff_hz(0.0);  // unused without a filter
  EXPECT_NO_THROW(UkfInverseDynamicsController(no_filter, nominal_plant(), kRateHz));

  FramePlantModel negative = nominal_plant();
  negative.theta[FramePlantModel::kB1] = -1.0;
  FramePlantModel non_minimum_phase = nominal_plant();
  non_minimum_phase.theta[FramePlantModel::kP2] = 0.5;  // z = -0.23 rad/s
  for (const FramePlantModel& m : {negative, non_minimum_phase}) {
    try {
      UkfInverseDynamicsController controller(seed003(), m, kRateHz);
      ADD_FAILURE() << "a model without a stable inverse accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("initial model cannot be inverted stably"), std::string::npos) << e.what();
    }
  }
}

TEST(UkfController, FactoryBuildsTheController) {
  const std::unique_ptr<rths::SiteController> c = rths::make_ukf_controller(seed003(), nominal_plant(), kRateHz);
  EXPECT_EQ(c->actuators(), 2u);
  rths::results::ControllerReport report;
  c->report(0, report);
  EXPECT_TRUE(report.has_ukf());
  EXPECT_EQ(report.ukf().updates(), 0u);
}

}  // namespace
}  // namespace test_ukf_controller
