#include "node_physical/controllers/linear_quadratic.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {

namespace {

void require_square(const Eigen::MatrixXd& m, Eigen::Index n, const char* name) {
  if (m.rows() != n || m.cols() != n) {
    throw std::invalid_argument(
        fmt::format("Riccati: {} is {} x {}; expected {} x {}", name, m.rows(), m.cols(), n, n));
  }
}

}  // namespace

RiccatiSolution solve_dare(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const Eigen::MatrixXd& q,
                           const Eigen::MatrixXd& r, double tolerance, int max_doublings) {
  const Eigen::Index n = a.rows();
  require_square(a, n, "A");
  require_square(q, n, "Q");
  require_square(r, b.cols(), "R");
  if (b.rows() != n) {
    throw std::invalid_argument(fmt::format("Riccati: B has {} rows; expected {} (A's)", b.rows(), n));
  }
  const Eigen::LLT<Eigen::MatrixXd> r_factor(r);
  if (r_factor.info() != Eigen::Success) {
    throw std::invalid_argument("Riccati: R is not positive definite");
  }
  Eigen::MatrixXd ak = a;
  Eigen::MatrixXd gk = b * r_factor.solve(b.transpose());
  Eigen::MatrixXd hk = q;
  const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(n, n);
  RiccatiSolution out;
  for (out.doublings = 1; out.doublings <= max_doublings; ++out.doublings) {
    const Eigen::PartialPivLU<Eigen::MatrixXd> w(identity + gk * hk);
    const Eigen::MatrixXd w_a = w.solve(ak);  // W^-1 A_k
    const Eigen::MatrixXd w_g = w.solve(gk);  // W^-1 G_k
    const Eigen::MatrixXd h_next = hk + ak.transpose() * hk * w_a;
    gk = gk + ak * w_g * ak.transpose();
    ak = ak * w_a;
    // The largest entries, not the Frobenius norm: that squares them and overflows first, and an
    // infinite norm on both sides would read as converged.
    const double change = (h_next - hk).cwiseAbs().maxCoeff();
    hk = (h_next + h_next.transpose()) / 2.0;
    gk = ((gk + gk.transpose()) / 2.0).eval();
    if (!hk.allFinite() || !std::isfinite(change)) break;
    if (change <= tolerance * hk.cwiseAbs().maxCoeff()) {
      out.converged = true;
      break;
    }
  }
  out.p = hk;
  return out;
}

Eigen::MatrixXd lqr_gain(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const Eigen::MatrixXd& r,
                         const Eigen::MatrixXd& p) {
  const Eigen::MatrixXd btp = b.transpose() * p;
  return (r + btp * b).ldlt().solve(btp * a);
}

KalmanDesign kalman_design(const Eigen::MatrixXd& a, const Eigen::MatrixXd& c, const Eigen::MatrixXd& w,
                           const Eigen::MatrixXd& v) {
  const RiccatiSolution dual = solve_dare(a.transpose(), c.transpose(), w, v);
  KalmanDesign out;
  out.prediction_covariance = dual.p;
  out.converged = dual.converged;
  const Eigen::MatrixXd pct = dual.p * c.transpose();
  out.gain = (c * pct + v).ldlt().solve(pct.transpose()).transpose();
  return out;
}

}  // namespace rths
