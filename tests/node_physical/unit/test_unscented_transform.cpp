// The scaled unscented transform of the UKF controllers (unscented_transform.hpp) against moments
// known in closed form, so that a wrong weight -- the central covariance weight above all, which is
// negative at seed 003's alpha = 0.4 -- turns a test red.
#include <gtest/gtest.h>

#include <cmath>

#include <Eigen/Dense>

#include "node_physical/controllers/unscented_transform.hpp"

namespace test_unscented_transform {
namespace {

using rths::UnscentedWeights;

struct Moments {
  double mean, variance, cross;  // of y = x^2, and the covariance of x and y
};

// The UT of y = x^2 for x ~ N(m, s^2), one dimension.
Moments transform_square(double m, double s, double alpha, double beta, double kappa) {
  const UnscentedWeights w = UnscentedWeights::scaled(1, alpha, beta, kappa);
  Eigen::Matrix<double, 1, 3> x;
  rths::sigma_points(Eigen::Matrix<double, 1, 1>(m), Eigen::Matrix<double, 1, 1>(s), w.spread, x);
  const Eigen::Matrix<double, 1, 3> y = x.cwiseProduct(x);
  const Eigen::Matrix<double, 1, 1> x_mean = rths::unscented_mean(w, x);
  const Eigen::Matrix<double, 1, 1> y_mean = rths::unscented_mean(w, y);
  const double variance = rths::unscented_covariance(w, y, y_mean, y, y_mean)(0, 0);
  // NOLINTNEXTLINE(readability-suspicious-call-argument): the cross-covariance of x with x^2
  return {y_mean[0], variance, rths::unscented_covariance(w, x, x_mean, y, y_mean)(0, 0)};
}

// For x ~ N(m, s^2): E[x^2] = m^2 + s^2, Var[x^2] = 4 m^2 s^2 + 2 s^4, Cov[x, x^2] = 2 m s^2. The
// symmetric sigma points give the mean and the cross-covariance exactly for any weights that sum to
// one; the variance needs the Gaussian's fourth moment 3 s^4, which the UT matches in one dimension
// through its central weight: Var_UT = 4 m^2 s^2 + (alpha^2 kappa + beta) s^4 with W_c0 = W_m0 + 1 -
// alpha^2 + beta. So seed 003's alpha = 0.4, beta = 2, kappa = 0 and Julier's alpha = 1, beta = 0,
// kappa = 2 are both exact, and a central weight off by any amount d shows as d s^4 in the variance.
TEST(UnscentedTransform, SquareOfAGaussianHasItsClosedFormMoments) {
  const double m = 1.3;
  const double s = 0.7;
  const double mean = m * m + s * s;
  const double variance = 4 * m * m * s * s + 2 * s * s * s * s;
  const double cross = 2 * m * s * s;
  struct Parameters {
    double alpha, beta, kappa;
  };
  for (const Parameters p : {Parameters{0.4, 2.0, 0.0}, Parameters{1.0, 0.0, 2.0}, Parameters{0.9, 2.0, 0.0}}) {
    const Moments ut = transform_square(m, s, p.alpha, p.beta, p.kappa);
    EXPECT_NEAR(ut.mean, mean, 1e-12 * mean) << "alpha " << p.alpha;
    EXPECT_NEAR(ut.variance, variance, 1e-12 * variance) << "alpha " << p.alpha;
    EXPECT_NEAR(ut.cross, cross, 1e-12 * cross) << "alpha " << p.alpha;
  }
  // beta = 0 at alpha = 0.4 misses the fourth moment by 2 s^4 (the variance without the central
  // term's beta): the transform is not exact by accident of its form.
  EXPECT_NEAR(transform_square(m, s, 0.4, 0.0, 0.0).variance, variance - 2 * s * s * s * s, 1e-12 * variance);
}

// A linear map transforms exactly whatever the weights: the mean A m + b and the covariance A P A^T,
// in three dimensions with a correlated P (its lower Cholesky factor giving the points).
TEST(UnscentedTransform, LinearMapIsExactInSeveralDimensions) {
  Eigen::Matrix3d p;
  p << 2.0, 0.3, -0.4, 0.3, 1.0, 0.2, -0.4, 0.2, 0.5;
  const Eigen::Vector3d m(0.5, -1.0, 2.0);
  Eigen::Matrix<double, 2, 3> a;
  a << 1.0, -2.0, 0.5, 0.3, 0.7, -1.1;
  const Eigen::Vector2d b(0.2, -0.3);
  const UnscentedWeights w = UnscentedWeights::scaled(3, 0.4, 2.0, 0.0);
  Eigen::Matrix<double, 3, 7> x;
  rths::sigma_points(m, Eigen::Matrix3d(p.llt().matrixL()), w.spread, x);
  const Eigen::Matrix<double, 2, 7> y = (a * x).colwise() + b;
  const Eigen::Vector2d y_mean = rths::unscented_mean(w, y);
  const Eigen::Vector3d x_mean = rths::unscented_mean(w, x);
  EXPECT_LT((y_mean - (a * m + b)).norm(), 1e-12);
  EXPECT_LT((x_mean - m).norm(), 1e-12);
  EXPECT_LT((rths::unscented_covariance(w, y, y_mean, y, y_mean) - a * p * a.transpose()).norm(), 1e-12);
  EXPECT_LT((rths::unscented_covariance(w, x, x_mean, x, x_mean) - p).norm(), 1e-12);
  EXPECT_LT((rths::unscented_covariance(w, x, x_mean, y, y_mean) - p * a.transpose()).norm(), 1e-12);
}

// The parallel-axis form equals the textbook sum sum_i W_ci (Y_i - mean)(Y_i - mean)^T with W_c0 =
// W_m0 + 1 - alpha^2 + beta, for a nonlinear map of a 4-dimensional state at seed 003's parameters.
TEST(UnscentedTransform, ParallelAxisFormIsTheTextbookSum) {
  constexpr int kN = 4;
  Eigen::Matrix4d p = Eigen::Matrix4d::Identity();
  p(0, 1) = p(1, 0) = 0.4;
  p(2, 3) = p(3, 2) = -0.3;
  const Eigen::Vector4d m(0.3, -0.2, 1.0, 0.5);
  const double alpha = 0.4, beta = 2.0, kappa = 0.0;
  const UnscentedWeights w = UnscentedWeights::scaled(kN, alpha, beta, kappa);
  Eigen::Matrix<double, kN, 2 * kN + 1> x;
  rths::sigma_points(m, Eigen::Matrix4d(p.llt().matrixL()), w.spread, x);
  Eigen::Matrix<double, 2, 2 * kN + 1> y;
  for (int i = 0; i < 2 * kN + 1; ++i) {
    y.col(i) << std::sin(x(0, i)) * x(1, i), std::exp(0.5 * x(2, i)) + x(3, i) * x(3, i);
  }
  const Eigen::Vector2d mean = rths::unscented_mean(w, y);
  const double lambda = alpha * alpha * (kN + kappa) - kN;
  const double wc0 = lambda / (kN + lambda) + 1 - alpha * alpha + beta;
  Eigen::Matrix2d textbook = wc0 * (y.col(0) - mean) * (y.col(0) - mean).transpose();
  for (int i = 1; i < 2 * kN + 1; ++i) textbook += w.point * (y.col(i) - mean) * (y.col(i) - mean).transpose();
  EXPECT_LT(wc0, -2.0);  // seed 003's negative central weight (-2.41 at any L when kappa = 0)
  EXPECT_LT((rths::unscented_covariance(w, y, mean, y, mean) - textbook).norm(), 1e-12 * textbook.norm());
}

}  // namespace
}  // namespace test_unscented_transform
