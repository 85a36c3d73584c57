#pragma once

#include <memory>

#include <Eigen/Dense>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/frame_state_model.hpp"
#include "node_physical/controllers/inverse_dynamics_controller.hpp"
#include "node_physical/controllers/site_controller.hpp"

namespace rths {

// Seed 003 (Ruiz & Song 2024) EKF-SS compensation of the maRTHS two-actuator plant: the inverse of the
// plant model commands (InverseDynamicsController: blocks I-III, the filters, the start, the guards)
// and an extended Kalman filter estimates the model's roots theta on the SS estimation model, the
// model's state augmented with theta (block IV, seed 003 Eqs. 13-18; FrameStateModel, the same model
// as the UKF-SS's). Seed 003 omits the Jacobians ("cumbersome and prone to errors"); they are derived
// in frame_state_model.cpp, of the discrete step the filter predicts with (the chain rule through the
// Runge-Kutta stages), and held to finite differences by the tests. The filter:
//   prediction  x- = [step(z, theta, u); theta],  P- = F P F^T + Q,  F = d[step; theta] / d[z, theta];
//   update      S = H P- H^T + R,  K = P- H^T S^-1,  x = x- + K (y - output(x-)),
//               P = (I - K H) P- (I - K H)^T + K R K^T   (Joseph's form: symmetric and >= 0 by
//               construction, where Table 1's Q = 0 leaves nothing to make up for rounding).
// Q = process_noise I and R = measurement_noise I; seed 003 Table 1: P0 = I, Q = 0, R = 1e-3 I (mm^2).
// An innovation covariance S that is not positive definite freezes the estimate (kIndefinite).
class EkfInverseDynamicsController final : public InverseDynamicsController {
 public:
  static constexpr int kStates = FrameStateModel::kStates;
  static constexpr int kAugmented = FrameStateModel::kAugmented;
  using Augmented = AugmentedEstimate::Vector;
  using Covariance = AugmentedEstimate::Covariance;

  // initial: theta_0 and the gains (the caller resolves parameters.initial_model against the site's
  // actuator_plant). For parameters that passed the rules (its validate); throws
  // std::invalid_argument for a filter order beyond the filter's arrays or a model that cannot be
  // inverted.
  EkfInverseDynamicsController(const config::EkfInverseDynamics& parameters, const FramePlantModel& initial,
                               double rate_hz);

 private:
  bool estimate(const Input* measured, const Input& command, bool predict, Theta& theta) override;
  void accept(const Theta& theta) override { estimate_.accept(theta); }
  void start(const Input& command, const Input& /*measured*/) override { estimate_.start(command); }
  results::InverseDynamicsReport& report_member(results::ControllerReport& out) const override {
    return *out.mutable_ekf();
  }

  FrameDiscretisation scheme_;
  double process_noise_;
  double measurement_noise_;
  AugmentedEstimate estimate_;
};

}  // namespace rths
