// Seed 003's SS estimation model (frame_state_model.hpp): the Jacobians derived by hand for the EKF
// against finite differences of the step and the output they differentiate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include <Eigen/Dense>

#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/frame_state_model.hpp"
#include "support/frame_controller_run.hpp"

namespace test_frame_state_model {
namespace {

using rths::FrameDiscretisation;
using rths::FramePlantModel;
using rths::FrameStateModel;
using rths::test::frame::kDt;
using rths::test::frame::nominal_plant;
using rths::test::frame::scaled_roots;

// A point away from every equilibrium and symmetry: states of a few mm, roots 3 % off nominal.
struct Point {
  FrameStateModel::State z;
  FrameStateModel::Theta theta;
  FrameStateModel::Input u{0.7, -0.4};
  FrameStateModel::Gains gain = nominal_plant().gain;
  Point() {
    z << 0.9, -0.3, 1.2, 0.4, -0.6, 0.25, -0.5, -0.15;
    const FramePlantModel m = scaled_roots(nominal_plant(), 1.03);
    for (int r = 0; r < FramePlantModel::kRoots; ++r) theta[r] = m.theta[r];
  }
};

// Each entry of a derived Jacobian against the central difference of the function it differentiates,
// step 1e-6 of the coordinate (1e-6 mm for a state): the difference's truncation error is
// O(h^2 f''') ~ 1e-12 relative and its rounding ~ 1e-10, so 1e-6 of the entry (plus 1e-9 of the
// largest entry of its column, for entries that are zero) catches a missing or wrong term of a
// partial derivative, whose error is of the order of the entry itself.
template <int R, class F>
void expect_jacobian(const Eigen::Matrix<double, R, FrameStateModel::kAugmented>& derived, const Point& p, F f,
                     const char* what) {
  Eigen::Matrix<double, FrameStateModel::kAugmented, 1> x;
  x << p.z, p.theta;
  for (int c = 0; c < FrameStateModel::kAugmented; ++c) {
    const double h = 1e-6 * std::max(1.0, std::abs(x[c]));
    Eigen::Matrix<double, FrameStateModel::kAugmented, 1> up = x, down = x;
    up[c] += h;
    down[c] -= h;
    const Eigen::Matrix<double, R, 1> difference = (f(up) - f(down)) / (2.0 * h);
    const double column = difference.cwiseAbs().maxCoeff();
    for (int r = 0; r < R; ++r) {
      EXPECT_NEAR(derived(r, c), difference[r], 1e-6 * std::abs(difference[r]) + 1e-9 * column)
          << what << ": d row " << r << " / d coordinate " << c;
    }
  }
}

TEST(FrameStateModel, StepJacobianIsTheStepsFiniteDifference) {
  const Point p;
  for (const FrameDiscretisation scheme : {FrameDiscretisation::kRungeKutta4, FrameDiscretisation::kForwardEuler}) {
    const auto step = [&](const Eigen::Matrix<double, FrameStateModel::kAugmented, 1>& x) {
      return FrameStateModel::step(x.head<FrameStateModel::kStates>(), x.tail<FrameStateModel::kRoots>(), p.gain, p.u,
                                   kDt, scheme);
    };
    expect_jacobian<FrameStateModel::kStates>(FrameStateModel::step_jacobian(p.z, p.theta, p.gain, p.u, kDt, scheme), p,
                                              step,
                                              scheme == FrameDiscretisation::kForwardEuler ? "Euler step" : "RK4 step");
  }
}

// The state step_jacobian hands back with its Jacobian (the EKF's prediction) is step()'s, to the bit.
TEST(FrameStateModel, TheJacobiansSteppedStateIsTheStep) {
  const Point p;
  for (const FrameDiscretisation scheme : {FrameDiscretisation::kRungeKutta4, FrameDiscretisation::kForwardEuler}) {
    FrameStateModel::State stepped;
    FrameStateModel::step_jacobian(p.z, p.theta, p.gain, p.u, kDt, scheme, &stepped);
    const FrameStateModel::State expected = FrameStateModel::step(p.z, p.theta, p.gain, p.u, kDt, scheme);
    for (int i = 0; i < FrameStateModel::kStates; ++i) EXPECT_EQ(stepped[i], expected[i]) << "state " << i;
  }
}

TEST(FrameStateModel, OutputJacobianIsTheOutputsFiniteDifference) {
  const Point p;
  const auto output = [&](const Eigen::Matrix<double, FrameStateModel::kAugmented, 1>& x) {
    return FrameStateModel::output(x.head<FrameStateModel::kStates>(), x.tail<FrameStateModel::kRoots>(), p.gain);
  };
  expect_jacobian<2>(FrameStateModel::output_jacobian(p.z, p.theta, p.gain), p, output, "output");
}

// The Runge-Kutta step's Jacobian is of the discrete map, not the continuous model's: over one step it
// differs from I + dt A (the Euler map's) by O((|A| dt)^2) -- here measurably, since the frame's
// poles make |A| dt ~ 0.4 -- and the finite-difference test above holds it to the map the filter uses.
TEST(FrameStateModel, RungeKuttaJacobianIsNotEulers) {
  const Point p;
  const FrameStateModel::StepJacobian rk4 =
      FrameStateModel::step_jacobian(p.z, p.theta, p.gain, p.u, kDt, FrameDiscretisation::kRungeKutta4);
  const FrameStateModel::StepJacobian euler =
      FrameStateModel::step_jacobian(p.z, p.theta, p.gain, p.u, kDt, FrameDiscretisation::kForwardEuler);
  EXPECT_GT((rk4 - euler).cwiseAbs().maxCoeff(), 1e-2);
}

// The realisation is the plant's transfer matrix: C (sI - A)^-1 B against FramePlantModel's own
// product of factors (seed 000 Eqs. 19-26), at rest and across the band up to the frame's pole, for
// the nominal roots and roots 3 % off. A wrong coefficient of the derivative changes the response by
// far more than the 1e-10 allowed (rounding of a 8 x 8 solve is ~1e-13 here).
TEST(FrameStateModel, LinearModelIsThePlantsTransferMatrix) {
  for (const FramePlantModel& m : {nominal_plant(), scaled_roots(nominal_plant(), 1.03)}) {
    FrameStateModel::Theta theta;
    for (int r = 0; r < FramePlantModel::kRoots; ++r) theta[r] = m.theta[r];
    const FrameStateModel::Linear l = FrameStateModel::linear(theta, m.gain);
    for (const double f_hz : {0.0, 0.5, 2.3, 10.0, 50.0}) {
      const std::complex<double> s(0.0, 2.0 * std::numbers::pi * f_hz);
      const Eigen::Matrix2cd h =
          l.c.cast<std::complex<double>>() *
          (s * Eigen::Matrix<std::complex<double>, 8, 8>::Identity() - l.a.cast<std::complex<double>>())
              .partialPivLu()
              .solve(l.b.cast<std::complex<double>>());
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          const std::complex<double> expected = m.response(i, j, s);
          EXPECT_LT(std::abs(h(i, j) - expected), 1e-10 * std::abs(expected))
              << "H" << i + 1 << j + 1 << " at " << f_hz << " Hz: " << h(i, j) << " against " << expected;
        }
      }
    }
  }
}

}  // namespace
}  // namespace test_frame_state_model
