#pragma once

#include <Eigen/Dense>

namespace rths {

// Discrete-time linear-quadratic design, computed once at set-up (it allocates): the regulator and
// the Kalman filter of seed 000's benchmark controller (an integral-augmented LQR with a Kalman
// filter, seed 000 Eqs. 32-36) are both the stabilising solution of a discrete algebraic Riccati
// equation,
//   P = A^T P A - A^T P B (R + B^T P B)^-1 B^T P A + Q,
// found by the structured doubling algorithm (Chu, Fan & Lin 2005): with A0 = A, G0 = B R^-1 B^T,
// H0 = Q and W = I + G_k H_k,
//   A_{k+1} = A_k W^-1 A_k,  G_{k+1} = G_k + A_k W^-1 G_k A_k^T,  H_{k+1} = H_k + A_k^T H_k W^-1 A_k,
// H_k converges quadratically to P when (A, B) is stabilisable and (A, Q^1/2) detectable: each
// doubling step covers twice the horizon of the last, so 2^k steps of the Riccati recursion.
struct RiccatiSolution {
  Eigen::MatrixXd p;  // the stabilising solution
  int doublings = 0;  // steps taken
  bool converged = false;
};

// Stops when a step changes H by less than `tolerance` relative to its norm, or after max_doublings
// (converged false: no stabilising solution within reach, e.g. an unstabilisable pair). Throws
// std::invalid_argument for matrices of mismatched sizes or an R that is not positive definite.
RiccatiSolution solve_dare(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const Eigen::MatrixXd& q,
                           const Eigen::MatrixXd& r, double tolerance = 1e-13, int max_doublings = 60);

// The regulator u = -K x minimising sum x^T Q x + u^T R u of x+ = A x + B u: K = (R + B^T P B)^-1 B^T P A.
Eigen::MatrixXd lqr_gain(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const Eigen::MatrixXd& r,
                         const Eigen::MatrixXd& p);

// The steady-state Kalman filter of x+ = A x + w, y = C x + v (w ~ (0, W), v ~ (0, V)): the
// prediction's covariance P from the dual Riccati equation (A^T, C^T, W, V), and the update's gain
// L = P C^T (C P C^T + V)^-1, x_k|k = x_k|k-1 + L (y_k - C x_k|k-1).
struct KalmanDesign {
  Eigen::MatrixXd prediction_covariance;
  Eigen::MatrixXd gain;
  bool converged = false;
};
KalmanDesign kalman_design(const Eigen::MatrixXd& a, const Eigen::MatrixXd& c, const Eigen::MatrixXd& w,
                           const Eigen::MatrixXd& v);

}  // namespace rths
