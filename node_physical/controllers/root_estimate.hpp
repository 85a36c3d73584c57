#pragma once

#include <Eigen/Dense>

#include "node_physical/controllers/frame_plant_model.hpp"

namespace rths {

// The estimate of a seed 003 estimator: a state of dimension N whose last ten entries are the model's
// roots theta (the TF estimation model's state is theta alone, N = 10; the SS model augments the
// plant's state with it, N = 18), its covariance P, and the step's proposal (x_next, P_next) until it
// is accepted. Fixed sizes: no allocation.
template <int N>
struct RootEstimate {
  static constexpr int kRoots = FramePlantModel::kRoots;
  static_assert(N >= kRoots);
  using Vector = Eigen::Matrix<double, N, 1>;
  using Covariance = Eigen::Matrix<double, N, N>;
  using Theta = Eigen::Matrix<double, kRoots, 1>;
  Vector x;
  Covariance p;
  Vector x_next;
  Covariance p_next;

  // theta0 from `initial`, the rest of the state at zero, P0 = initial_covariance I.
  RootEstimate(const FramePlantModel& initial, double initial_covariance)
      : x(start_of(initial)), p(initial_covariance * Covariance::Identity()), x_next(x), p_next(p) {}
  // The proposal symmetrised; false (and the first sum that is not finite in `bad`) unless finite.
  bool settle_proposal(double& bad) {
    p_next = ((p_next + p_next.transpose()) / 2.0).eval();
    if (x_next.allFinite() && p_next.allFinite()) return true;
    bad = x_next.allFinite() ? p_next.sum() : x_next.sum();
    return false;
  }
  // The proposal committed with the roots `theta` (the caller's floor applied).
  void accept(const Theta& theta) {
    x = x_next;
    x.template tail<kRoots>() = theta;
    p = p_next;
  }

 private:
  static Vector start_of(const FramePlantModel& initial) {
    Vector start = Vector::Zero();
    start.template tail<kRoots>() = Eigen::Map<const Theta>(initial.theta.data());
    return start;
  }
};

}  // namespace rths
