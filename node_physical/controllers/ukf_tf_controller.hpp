#pragma once

#include <Eigen/Dense>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_command_model.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/inverse_dynamics_controller.hpp"
#include "node_physical/controllers/unscented_transform.hpp"

namespace rths {

// Seed 003 (Ruiz & Song 2024) UKF-TF compensation of the maRTHS two-actuator plant: the inverse of the
// plant model commands (InverseDynamicsController), and an unscented Kalman filter estimates the
// model's roots theta on the TF estimation model (FrameCommandModel, seed 003 Eqs. 11-12): theta is a
// random walk, so the prediction is exact (theta- = theta, P- = P + Q), and the scaled UT
// (unscented_transform.hpp, the UKF-SS's) carries the 2L + 1 = 21 sigma points of (theta-, P-)
// through the predicted command. At seed 003's alpha = 0.4, beta = 2, kappa = 0 and L = 10:
// W_m0 = -5.25, W_c0 = -2.41, W_i = 0.3125; the covariances are in the parallel-axis form, and a
// Cholesky factor of P- that fails freezes the estimate. Seed 003 Table 1: P0 = I, Q = 1e-4 I,
// R = 1e1 I (mm^2 of command).
class UkfTfInverseDynamicsController final : public TfInverseDynamicsController {
 public:
  static constexpr int kSigmaPoints = 2 * kRoots + 1;

  // initial: theta_0 and the gains (the caller resolves parameters.initial_model against the site's
  // actuator_plant). For parameters that passed the rules (its validate); throws
  // std::invalid_argument for a filter order beyond the filter's arrays or a model that cannot be
  // inverted.
  UkfTfInverseDynamicsController(const config::UkfTfInverseDynamics& parameters, const FramePlantModel& initial,
                                 double rate_hz);

 private:
  bool correct(const Input& reading, const Input& command) override;
  results::InverseDynamicsReport& report_member(results::ControllerReport& out) const override {
    return *out.mutable_ukf_tf();
  }

  UnscentedWeights weights_;
  Eigen::Matrix<double, kRoots, kSigmaPoints> sigma_;
  Eigen::Matrix<double, 2, kSigmaPoints> outputs_;
};

}  // namespace rths
