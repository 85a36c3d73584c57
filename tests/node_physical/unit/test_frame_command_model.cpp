// Seed 003's TF estimation model (frame_command_model.hpp) and what it needs of the inverse
// (frame_inverse_command.hpp): the inverse under trial roots is the step, its root Jacobian is the
// finite difference, and on an independent simulation of the plant the model predicts the command
// the plant saw, at the step it was held.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <vector>

#include <Eigen/Dense>

#include "node_physical/controllers/frame_command_model.hpp"
#include "node_physical/controllers/frame_inverse_command.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/frame_state_model.hpp"
#include "support/frame_controller_run.hpp"
#include "support/zoh_frame_plant.hpp"

namespace test_frame_command_model {
namespace {

using rths::FrameCommandModel;
using rths::FrameInverseCommand;
using rths::FramePlantModel;
using namespace rths::test::frame;  // the plant, the multi-sine, kDt

FrameInverseCommand::Roots roots_of(const FramePlantModel& m) {
  return m.theta;
}

FrameCommandModel::Theta theta_of(const FramePlantModel& m) {
  return Eigen::Map<const FrameCommandModel::Theta>(m.theta.data());
}

// Holds a Jacobian of two outputs by the roots (entry(i, r): d output i / d root r at `at`) to the
// central difference of `of` with each root moved by 1e-6 of itself: within 1e-6 of the difference
// plus 1e-9 of the row's largest entry, and no row all zero.
template <class Roots, class Entry, class Of>
void expect_central_difference(const Roots& at, Entry entry, Of of) {
  for (int i = 0; i < 2; ++i) {
    double row = 0.0;
    for (int r = 0; r < FramePlantModel::kRoots; ++r) row = std::max(row, std::abs(entry(i, r)));
    ASSERT_GT(row, 0.0) << "row " << i;
    for (int r = 0; r < FramePlantModel::kRoots; ++r) {
      const double h = 1e-6 * at[r];
      Roots up = at;
      Roots down = at;
      up[r] += h;
      down[r] -= h;
      const double difference = (of(up)[i] - of(down)[i]) / (2 * h);
      EXPECT_NEAR(entry(i, r), difference, 1e-6 * std::abs(difference) + 1e-9 * row)
          << "d u" << i + 1 << " / d root " << r;
    }
  }
}

// The inverse under its own roots is its step, to the bit, with or without the Jacobian: the
// estimators' observation and the command law are one computation.
TEST(FrameInverseCommand, CommandUnderItsOwnRootsIsTheStep) {
  const FramePlantModel model = nominal_plant();
  FrameInverseCommand inverse(model, kDt);
  FrameInverseCommand::RootJacobian d{};
  for (std::size_t k = 0; k < 3000; ++k) {
    const Strokes target = multisine_mm(k);
    const FrameInverseCommand::Vector2 trial = inverse.command_under(roots_of(model), target, nullptr);
    const FrameInverseCommand::Vector2 with_jacobian = inverse.command_under(roots_of(model), target, &d);
    const FrameInverseCommand::Vector2 u = inverse.step(target);
    ASSERT_EQ(trial, u) << "step " << k;
    ASSERT_EQ(with_jacobian, u) << "step " << k;
  }
}

// Each entry of the root Jacobian (forward differentiation) against the central difference of
// command_under, step 1e-6 of the root, in the middle of a run (the states away from rest), at roots
// 3 % off the model's: within 1e-6 of the entry plus 1e-9 of the row's largest entry. A term of a
// partial derivative missing or wrong errs by the order of the entry itself.
TEST(FrameInverseCommand, RootJacobianIsTheFiniteDifference) {
  const FramePlantModel model = nominal_plant();
  FrameInverseCommand inverse(model, kDt, FrameInverseCommand::kHalfStepBack);
  for (std::size_t k = 0; k < 1500; ++k) inverse.step(multisine_mm(k));
  const Strokes target = multisine_mm(1500);
  const FrameInverseCommand::Roots at = scaled_roots(model, 1.03).theta;
  FrameInverseCommand::RootJacobian d{};
  const FrameInverseCommand::Vector2 value = inverse.command_under(at, target, &d);
  EXPECT_EQ(value, inverse.command_under(at, target, nullptr));
  expect_central_difference(
      at, [&](int i, int r) { return d[i][r]; },
      [&](const FrameInverseCommand::Roots& roots) { return inverse.command_under(roots, target, nullptr); });
}

// With root sensitivities the Jacobian is the whole run's: 1500 steps of the multi-sine under roots
// 3 % off the model's, against the central difference of two whole runs with one root moved by 1e-6
// of itself; within 1e-5 of the entry plus 1e-8 of the row's largest (the runs' rounding grows with
// their length). Without the states' path the derivative by p2, which sets the slow pole -z, is a
// small part of the true one, and this turns red.
TEST(FrameInverseCommand, RootSensitivitiesGiveTheWholeRunsDerivative) {
  const FramePlantModel model = scaled_roots(nominal_plant(), 1.03);
  const auto run = [&](const FramePlantModel& m, bool sensitivities) {
    auto inverse = std::make_unique<FrameInverseCommand>(m, kDt, FrameInverseCommand::kHalfStepBack, sensitivities);
    for (std::size_t k = 0; k < 1500; ++k) inverse->step(multisine_mm(k));
    return inverse;
  };
  const Strokes target = multisine_mm(1500);
  FrameInverseCommand::RootJacobian d{};
  const FrameInverseCommand::Vector2 value = run(model, true)->command_under(roots_of(model), target, &d);
  EXPECT_EQ(value, run(model, false)->step(target));
  for (int i = 0; i < 2; ++i) {
    const double row = std::abs(
        *std::max_element(d[i].begin(), d[i].end(), [](double a, double b) { return std::abs(a) < std::abs(b); }));
    for (int r = 0; r < FramePlantModel::kRoots; ++r) {
      const double h = 1e-6 * model.theta[r];
      FramePlantModel up = model;
      FramePlantModel down = model;
      up.theta[r] += h;
      down.theta[r] -= h;
      const double difference = (run(up, false)->step(target)[i] - run(down, false)->step(target)[i]) / (2 * h);
      EXPECT_NEAR(d[i][r], difference, 1e-5 * std::abs(difference) + 1e-8 * row) << "d u" << i + 1 << " / d root " << r;
    }
  }
}

// The plant driven by a multi-sine command (an exact zero-order hold, hardware-true readings): the
// model at the plant's roots predicts from each reading the command of the step before it, within
// 0.1 % NRMS of the command (measured: 3e-5). The same prediction paired with the command one step earlier or later
// is off by at least ten times that: a step of misalignment turns this red.
TEST(FrameCommandModel, PredictsTheCommandTheReadingShows) {
  const FramePlantModel truth = nominal_plant();
  rths::test::ZohFramePlant plant(truth, kDt);
  FrameCommandModel model(truth, kDt);
  model.start({0.0, 0.0});
  const FrameCommandModel::Theta theta = theta_of(truth);
  std::vector<Strokes> commands;
  std::vector<FrameCommandModel::Input> predicted;
  for (std::size_t k = 0; k < 6 * kSecond; ++k) {
    const Strokes u = multisine_mm(k);
    const Strokes y = plant.step(u);  // the reading of tick k, before u_k acts
    if (k > 0) {
      const FrameCommandModel::Input reading{y[0], y[1]};
      ASSERT_TRUE(model.ready());
      predicted.push_back(model.predict(theta, reading, nullptr));  // of u_k-1
      model.advance(theta, &reading);
    }
    commands.push_back(u);
  }
  // NRMS over the last 4 s of the prediction paired with u_k-1+shift.
  const auto error = [&](int shift) {
    double e2 = 0.0;
    double u2 = 0.0;
    for (std::size_t n = 2 * kSecond; n + 2 < predicted.size(); ++n) {
      const std::size_t k = n + 1;  // predicted[n] is of the command of step k - 1 = n
      const Strokes& u = commands[static_cast<std::size_t>(static_cast<long>(k - 1) + shift)];
      for (int i = 0; i < 2; ++i) {
        e2 += std::pow(predicted[n][i] - u[static_cast<std::size_t>(i)], 2);
        u2 += u[static_cast<std::size_t>(i)] * u[static_cast<std::size_t>(i)];
      }
    }
    return std::sqrt(e2 / u2);
  };
  std::printf("[ measured ] prediction NRMS %.3g; paired a step early %.3g, late %.3g\n", error(0), error(-1),
              error(1));
  EXPECT_LT(error(0), 1e-3);
  EXPECT_GT(error(-1), 10 * 1e-3);
  EXPECT_GT(error(1), 10 * 1e-3);
}

// The EKF-TF's observation Jacobian is the prediction's own: after two seconds of the plant under the
// multi-sine, predict()'s Jacobian under roots 3 % off the model's is the central difference of
// predict() with each root moved by 1e-6 of itself, within 1e-6 of the entry plus 1e-9 of the row's
// largest. An entry copied to the wrong row or column turns this red.
TEST(FrameCommandModel, PredictionJacobianIsItsFiniteDifference) {
  const FramePlantModel truth = nominal_plant();
  rths::test::ZohFramePlant plant(truth, kDt);
  FrameCommandModel model(truth, kDt);
  model.start({0.0, 0.0});
  FrameCommandModel::Input reading{0.0, 0.0};
  for (std::size_t k = 0; k < 2 * kSecond; ++k) {
    const Strokes y = plant.step(multisine_mm(k));
    reading = {y[0], y[1]};
    if (k > 0) model.advance(theta_of(truth), &reading);
  }
  const FrameCommandModel::Theta at = theta_of(scaled_roots(truth, 1.03));
  FrameCommandModel::Jacobian d;
  const FrameCommandModel::Input value = model.predict(at, reading, &d);
  EXPECT_EQ(value, model.predict(at, reading, nullptr));
  expect_central_difference(
      at, [&](int i, int r) { return d(i, r); },
      [&](const FrameCommandModel::Theta& roots) { return model.predict(roots, reading, nullptr); });
}

// A tick without a reading moves the inverse on with the cubic's extrapolation; the prediction is not
// ready again before kReadingsAfterHeld readings stand behind the next one.
TEST(FrameCommandModel, AfterAMissingReadingWaitsForItsReadings) {
  const FramePlantModel truth = nominal_plant();
  FrameCommandModel model(truth, kDt);
  model.start({0.1, -0.1});
  const FrameCommandModel::Theta theta = theta_of(truth);
  const FrameCommandModel::Input reading{0.1, -0.1};
  EXPECT_TRUE(model.ready());
  model.advance(theta, nullptr);
  for (int i = 0; i < FrameCommandModel::kReadingsAfterHeld; ++i) {
    EXPECT_FALSE(model.ready()) << i;
    model.advance(theta, &reading);
  }
  EXPECT_TRUE(model.ready());
  // At rest, the extrapolation repeats the rest: the prediction is the static inverse.
  const FrameCommandModel::Input u = model.predict(theta, reading, nullptr);
  const Eigen::Vector2d rest = rths::static_gain_matrix(truth).inverse() * reading;
  EXPECT_NEAR(u[0], rest[0], 1e-12);
  EXPECT_NEAR(u[1], rest[1], 1e-12);
}

}  // namespace
}  // namespace test_frame_command_model
