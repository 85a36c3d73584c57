#pragma once

#include <cstdint>
#include <memory>

#include <Eigen/Dense>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/frame_state_model.hpp"
#include "node_physical/controllers/inverse_dynamics_controller.hpp"
#include "node_physical/controllers/site_controller.hpp"
#include "node_physical/controllers/unscented_transform.hpp"

namespace rths {

// Seed 003 (Ruiz & Song 2024) UKF-SS compensation of the maRTHS two-actuator plant: the inverse of the
// plant model commands (InverseDynamicsController: blocks I-III, the filters, the start, the guards)
// and an unscented Kalman filter estimates the model's roots theta on the SS estimation model, the
// model's state augmented with theta (block IV, seed 003 Eqs. 13-18; FrameStateModel). The open
// choice of the estimator (docs/marths-ukf.md, choice 7, has it with the numbers): the scaled UT
// (unscented_transform.hpp) on the augmented state, L = 18, 2L + 1 = 37 points, additive Q and R,
// the propagated points reused for the measurement (Q is 1e-11). W_c0 = 1 - 1/alpha^2 + 1 - alpha^2
// + beta is -2.41 at seed 003's alpha = 0.4, beta = 2, kappa = 0, but by the parallel-axis identity
// the UT covariance is
//   sum_{i>=1} W_i (X_i - X_0)(X_i - X_0)^T + (beta - alpha^2)(X_0 - mean)(X_0 - mean)^T,
// a sum of positive semidefinite terms whenever beta >= alpha^2; it is computed in that form, and
// the posterior, a Schur complement of the joint covariance plus diag(Q, R), stays >= Q. The
// Cholesky factor each step is still checked (guarded Cholesky): a failure freezes the estimate.
class UkfInverseDynamicsController final : public InverseDynamicsController {
 public:
  static constexpr int kStates = FrameStateModel::kStates;
  static constexpr int kAugmented = FrameStateModel::kAugmented;
  static constexpr int kSigmaPoints = 2 * kAugmented + 1;
  using Augmented = AugmentedEstimate::Vector;
  using Covariance = AugmentedEstimate::Covariance;

  // initial: theta_0 and the gains (the caller resolves parameters.initial_model against the site's
  // actuator_plant; this constructor reads only `initial`). For parameters that passed the
  // rules (its validate); throws std::invalid_argument for a filter order beyond the filter's arrays or
  // a model that cannot be inverted.
  UkfInverseDynamicsController(const config::UkfInverseDynamics& parameters, const FramePlantModel& initial,
                               double rate_hz);

  [[nodiscard]] const Covariance& covariance() const { return estimate_.p; }

 private:
  using Sigma = Eigen::Matrix<double, kAugmented, kSigmaPoints>;

  bool estimate(const Input* measured, const Input& command, bool predict, Theta& theta) override;
  void accept(const Theta& theta) override { estimate_.accept(theta); }
  void start(const Input& command, const Input& /*measured*/) override { estimate_.start(command); }
  results::InverseDynamicsReport& report_member(results::ControllerReport& out) const override {
    return *out.mutable_ukf();
  }

  FrameDiscretisation scheme_;
  double process_noise_;
  double measurement_noise_;
  UnscentedWeights weights_;
  AugmentedEstimate estimate_;
  Sigma sigma_;
  Eigen::Matrix<double, 2, kSigmaPoints> outputs_;
};

// The controller a UkfInverseDynamics config describes, starting from `initial`.
std::unique_ptr<SiteController> make_ukf_controller(const config::UkfInverseDynamics& parameters,
                                                    const FramePlantModel& initial, double rate_hz);

}  // namespace rths
