#pragma once

#include <Eigen/Dense>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_command_model.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/inverse_dynamics_controller.hpp"

namespace rths {

// Seed 003 (Ruiz & Song 2024) EKF-TF compensation of the maRTHS two-actuator plant: the inverse of the
// plant model commands (InverseDynamicsController), and an extended Kalman filter estimates the
// model's roots theta on the TF estimation model (FrameCommandModel, seed 003 Eqs. 11-12): theta is a
// random walk and the observation is the command, predicted from the filtered readings by the
// inverse of the model. The filter:
//   prediction  P- = P + Q;
//   update      H = d(predicted command) / d(theta) (exact: forward differentiation of the inverse's
//               arithmetic, held to finite differences by the tests), S = H P- H^T + R,
//               K = P- H^T S^-1, theta = theta- + K (u - predicted), P = (I - K H) P- (I - K H)^T + K R K^T.
// Q = process_noise I and R = measurement_noise I (R in mm^2 of command); seed 003 Table 1: P0 = I,
// Q = 1e-5 I, R = 1e-1 I.
class EkfTfInverseDynamicsController final : public TfInverseDynamicsController {
 public:
  // initial: theta_0 and the gains (the caller resolves parameters.initial_model against the site's
  // actuator_plant). For parameters that passed the rules (its validate); throws
  // std::invalid_argument for a filter order beyond the filter's arrays or a model that cannot be
  // inverted.
  EkfTfInverseDynamicsController(const config::EkfTfInverseDynamics& parameters, const FramePlantModel& initial,
                                 double rate_hz);

 private:
  bool correct(const Input& reading, const Input& command) override;
  results::InverseDynamicsReport& report_member(results::ControllerReport& out) const override {
    return *out.mutable_ekf_tf();
  }
};

}  // namespace rths
