// The discrete Riccati solver of the linear-quadratic designs (linear_quadratic.hpp) against closed
// forms of the scalar equations and against the Riccati recursion it doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>

#include "common/dynamics/eigen_problems.hpp"
#include "node_physical/controllers/linear_quadratic.hpp"

namespace test_linear_quadratic {
namespace {

using Eigen::MatrixXd;

MatrixXd scalar(double x) {
  return MatrixXd::Constant(1, 1, x);
}

// The regulator's equation in one dimension, P = a^2 P - a^2 b^2 P^2 / (r + b^2 P) + q, is the
// quadratic b^2 P^2 + (r - a^2 r - q b^2) P - q r = 0, whose positive root is the stabilising solution;
// the closed loop a - b K is then inside the unit circle, also for an unstable a.
TEST(LinearQuadratic, ScalarRegulatorIsTheQuadraticsPositiveRoot) {
  for (const double a : {0.5, 1.0, 1.2, -3.0}) {
    const double b = 0.5, q = 2.0, r = 0.3;
    const double lin = r - a * a * r - q * b * b;
    const double closed = (-lin + std::sqrt(lin * lin + 4 * b * b * q * r)) / (2 * b * b);
    const rths::RiccatiSolution s = rths::solve_dare(scalar(a), scalar(b), scalar(q), scalar(r));
    ASSERT_TRUE(s.converged) << "a = " << a;
    EXPECT_NEAR(s.p(0, 0), closed, 1e-12 * closed) << "a = " << a;
    const double k = rths::lqr_gain(scalar(a), scalar(b), scalar(r), s.p)(0, 0);
    EXPECT_NEAR(k, a * b * closed / (r + b * b * closed), 1e-12 * std::abs(k)) << "a = " << a;
    EXPECT_LT(std::abs(a - b * k), 1.0) << "a = " << a;
  }
}

// The filter's dual in one dimension: the prediction's variance P of x+ = a x + w, y = x + v solves
// P = a^2 P V / (P + V) + W, i.e. P^2 + (V - a^2 V - W) P - W V = 0; the update's gain is P / (P + V).
TEST(LinearQuadratic, ScalarKalmanFilterIsTheQuadraticsPositiveRoot) {
  const double a = 0.95, w = 1e-3, v = 1.5e-4;
  const double lin = v - a * a * v - w;
  const double p = (-lin + std::sqrt(lin * lin + 4 * w * v)) / 2;
  const rths::KalmanDesign k = rths::kalman_design(scalar(a), scalar(1.0), scalar(w), scalar(v));
  ASSERT_TRUE(k.converged);
  EXPECT_NEAR(k.prediction_covariance(0, 0), p, 1e-12 * p);
  EXPECT_NEAR(k.gain(0, 0), p / (p + v), 1e-12);
}

// A double integrator sampled at 0.1 s (unstable: a double pole at 1) with two inputs' worth of
// state: the doubling's P satisfies the Riccati equation to rounding, agrees with 20 000 steps of the
// Riccati recursion from Q (the definition it doubles), and its gain makes the loop stable.
TEST(LinearQuadratic, MatrixRegulatorSolvesTheEquationAndMatchesTheRecursion) {
  const double dt = 0.1;
  MatrixXd a(2, 2);
  a << 1, dt, 0, 1;
  MatrixXd b(2, 1);
  b << dt * dt / 2, dt;
  MatrixXd q(2, 2);
  q << 1, 0.2, 0.2, 0.5;
  const MatrixXd r = scalar(0.1);
  const rths::RiccatiSolution s = rths::solve_dare(a, b, q, r);
  ASSERT_TRUE(s.converged);
  EXPECT_LT(s.doublings, 20);
  const MatrixXd& p = s.p;
  const MatrixXd residual = a.transpose() * p * a -
                            a.transpose() * p * b * (r + b.transpose() * p * b).inverse() * b.transpose() * p * a + q -
                            p;
  EXPECT_LT(residual.norm(), 1e-10 * p.norm());
  MatrixXd recursion = q;
  for (int i = 0; i < 20000; ++i) {
    recursion =
        a.transpose() * recursion * a -
        a.transpose() * recursion * b * (r + b.transpose() * recursion * b).inverse() * b.transpose() * recursion * a +
        q;
  }
  EXPECT_LT((recursion - p).norm(), 1e-9 * p.norm());
  const MatrixXd k = rths::lqr_gain(a, b, r, p);
  const Eigen::VectorXcd poles = rths::general_eigenvalues(a - b * k);
  for (const auto& pole : poles) EXPECT_LT(std::abs(pole), 1.0);
}

// An unstable mode no input reaches has no stabilising solution: the doubling says so instead of
// returning a number. Sizes that do not match and an R that is not positive definite are refused.
TEST(LinearQuadratic, WhatHasNoSolutionIsSaidAndBadSizesAreRefused) {
  MatrixXd a(2, 2);
  a << 1.1, 0, 0, 0.5;
  MatrixXd b(2, 1);
  b << 0, 1;  // the unstable mode 1.1 unreachable
  EXPECT_FALSE(rths::solve_dare(a, b, MatrixXd::Identity(2, 2), scalar(1)).converged);
  EXPECT_THROW(rths::solve_dare(a, MatrixXd::Ones(3, 1), MatrixXd::Identity(2, 2), scalar(1)), std::invalid_argument);
  EXPECT_THROW(rths::solve_dare(a, b, MatrixXd::Identity(3, 3), scalar(1)), std::invalid_argument);
  EXPECT_THROW(rths::solve_dare(a, b, MatrixXd::Identity(2, 2), scalar(0)), std::invalid_argument);
}

}  // namespace
}  // namespace test_linear_quadratic
