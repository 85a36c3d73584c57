#pragma once

#include <cmath>

#include <Eigen/Dense>

namespace rths {

// The scaled unscented transform (Julier 2002; Wan & van der Merwe 2000) of the UKF controllers:
// 2L + 1 sigma points X_0 = mean, X_i = mean +- spread * (the i-th column of a factor of P), with
//   lambda = alpha^2 (L + kappa) - L,   spread = sqrt(L + lambda),
//   W_m0 = lambda / (L + lambda),   W_i = 1 / (2 (L + lambda)) (i >= 1),
//   W_c0 = W_m0 + 1 - alpha^2 + beta.
// At seed 003's alpha = 0.4, kappa = 0, W_c0 is negative (-2.41), and the textbook sum
// sum_i W_ci (Y_i - mean)(Y_i - mean)^T can lose definiteness by rounding. The covariances here are
// computed in the parallel-axis form, equal to it in exact arithmetic:
//   sum_{i>=1} W_i (Y_i - Y_0)(Z_i - Z_0)^T + (beta - alpha^2)(Y_0 - mean_Y)(Z_0 - mean_Z)^T,
// a sum of positive semidefinite terms whenever beta >= alpha^2 (the Y = Z case).
// Fixed sizes, no allocation: these run in the controller's step.
struct UnscentedWeights {
  double spread = 0.0;   // sqrt(L + lambda)
  double mean_0 = 0.0;   // W_m0
  double point = 0.0;    // W_i, i >= 1
  double central = 0.0;  // beta - alpha^2: the central point's weight in the parallel-axis form

  // For a state of dimension L; alpha in (0, 1], L + kappa > 0 (the caller's rules).
  static UnscentedWeights scaled(int dimension, double alpha, double beta, double kappa) {
    const double n = dimension + kappa;
    const double lambda = alpha * alpha * n - dimension;
    UnscentedWeights w;
    w.spread = alpha * std::sqrt(n);
    w.mean_0 = lambda / (dimension + lambda);
    w.point = 1.0 / (2.0 * (dimension + lambda));
    w.central = beta - alpha * alpha;
    return w;
  }
};

// The sigma points of (mean, P) from a lower factor of P (P = L L^T): column 0 the mean, then
// mean + spread L e_i, then mean - spread L e_i.
template <int N>
void sigma_points(const Eigen::Matrix<double, N, 1>& mean, const Eigen::Matrix<double, N, N>& lower, double spread,
                  Eigen::Matrix<double, N, 2 * N + 1>& points) {
  points.col(0) = mean;
  for (int i = 0; i < N; ++i) {
    points.col(1 + i) = mean + spread * lower.col(i);
    points.col(1 + N + i) = mean - spread * lower.col(i);
  }
}

// The weighted mean of transformed sigma points (one per column).
template <int R, int C>
Eigen::Matrix<double, R, 1> unscented_mean(const UnscentedWeights& w, const Eigen::Matrix<double, R, C>& points) {
  return w.mean_0 * points.col(0) + w.point * points.template rightCols<C - 1>().rowwise().sum();
}

// The covariance of two transformed sets of the same sigma points about their means (Y = Z for a
// covariance, else the cross-covariance), in the parallel-axis form above.
template <int R, int S, int C>
Eigen::Matrix<double, R, S> unscented_covariance(const UnscentedWeights& w, const Eigen::Matrix<double, R, C>& y,
                                                 const Eigen::Matrix<double, R, 1>& y_mean,
                                                 const Eigen::Matrix<double, S, C>& z,
                                                 const Eigen::Matrix<double, S, 1>& z_mean) {
  const Eigen::Matrix<double, R, C - 1> dy = y.template rightCols<C - 1>().colwise() - y.col(0);
  const Eigen::Matrix<double, S, C - 1> dz = z.template rightCols<C - 1>().colwise() - z.col(0);
  const Eigen::Matrix<double, R, 1> y_central = y.col(0) - y_mean;
  const Eigen::Matrix<double, S, 1> z_central = z.col(0) - z_mean;
  return w.point * dy * dz.transpose() + w.central * y_central * z_central.transpose();
}

}  // namespace rths
