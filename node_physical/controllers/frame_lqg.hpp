#pragma once

#include <array>
#include <cstdint>
#include <span>

#include <Eigen/Dense>

#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/frame_state_model.hpp"
#include "node_physical/interfaces/measurement.hpp"

namespace rths {

// Seed 000's benchmark controller for the maRTHS two-actuator plant (Sec. 5.3, Eqs. 32-36): a
// linear-quadratic regulator of the plant's state augmented with the integral of the tracking error,
// and a Kalman filter that supplies the state and the filtered strokes eta_hat_m. Designed in discrete
// time at the site's step from the nominal plant (FrameStateModel::linear, stepped by the RK4 map the
// estimators use, exact for a linear model to O((|A| dt)^5)):
//   z+ = Phi z + Gamma u,  y = C z;   xi+ = xi + dt (r - y)      (the augmentation, Eq. 33)
//   u = -K_p z_hat - K_e xi                                      (Eq. 35)
// K = [K_p K_e] from the Riccati equation of (A_a, B_a, Q_a, R) with Q_a = diag(w_y C^T C, w_i) and
// R = diag(w_u); the filter's gain from the dual equation with W = q I (process) and V = v I (the
// sensor noise's variance). Seed 000 gives none of the weights ("larger Q/R ratios for actuator 1");
// docs/marths.md says how the defaults were chosen. Signals in mm inside.
struct FrameLqgWeights {
  double output = 0.0;               // w_y: on the strokes C z (mm^-2)
  std::array<double, 2> integral{};  // w_i: on each actuator's error integral (mm^-2 s^-2)
  std::array<double, 2> input{};     // w_u: on each command (mm^-2)
  double process_noise = 0.0;        // q: the Kalman filter's W = q I (mm^2)
  double measurement_noise = 0.0;    // v: its V = v I (mm^2)
};

struct FrameLqgDesign {
  static constexpr int kStates = FrameStateModel::kStates;
  Eigen::Matrix<double, kStates, kStates> phi;
  Eigen::Matrix<double, kStates, 2> gamma;
  Eigen::Matrix<double, 2, kStates> c;
  Eigen::Matrix<double, 2, kStates> state_gain;   // K_p
  Eigen::Matrix2d integral_gain;                  // K_e
  Eigen::Matrix<double, kStates, 2> kalman_gain;  // L: z_k|k = z_k|k-1 + L (y_k - C z_k|k-1)
};

// Throws std::invalid_argument when a weight is not positive (the input and integral weights) or
// negative (the others), or a Riccati equation has no stabilising solution.
FrameLqgDesign design_frame_lqg(const FramePlantModel& model, const FrameLqgWeights& weights, double dt_s);

// The controller of the design: one command() per step, in mm, no allocation. The command of step k
// goes out before the reading of tick k is taken (hardware-true), so the call of step k corrects the
// estimate with the reading of tick k-1, integrates that tick's error and commands from the state
// predicted to tick k.
class FrameLqg {
 public:
  using Vector2 = Eigen::Vector2d;
  // model: the plant the design is of (its static gains start the loop).
  FrameLqg(const FramePlantModel& model, FrameLqgDesign design, double dt_s);

  // The reading of a tick (mm), or none (`held`: no reading came, or one that is not finite), when the
  // estimate is predicted without a correction and learns nothing: the filter's correction, then that
  // tick's error integrated. The first reading starts the loop at rest there, bumplessly (the integral
  // set so that the next command is the static inverse of it, which holds the plant there).
  void observe(const Vector2& measured, bool held = false);
  // The command of a step (mm) for its target, from the state predicted to its tick: after observe()
  // of the previous tick's reading.
  Vector2 command(const Vector2& target);
  // Both, in the order of a step: the reading of the previous tick, then the command.
  Vector2 command(const Vector2& target, const Vector2& measured, bool held = false) {
    observe(measured, held);
    return command(target);
  }
  // eta_hat_m: the filtered strokes of the last reading (the estimate's C z_k|k).
  [[nodiscard]] const Vector2& estimated() const { return estimated_; }
  [[nodiscard]] const FrameLqgDesign& design() const { return design_; }

 private:
  FrameLqgDesign design_;
  Eigen::Matrix2d static_inverse_;  // H(0)^-1
  double dt_s_;
  bool started_ = false;
  bool starting_ = false;                                              // the next command is the start's
  FrameStateModel::State predicted_ = FrameStateModel::State::Zero();  // z_k|k-1
  FrameStateModel::State corrected_ = FrameStateModel::State::Zero();  // z_k|k
  Vector2 integral_ = Vector2::Zero();
  Vector2 last_target_ = Vector2::Zero();
  Vector2 estimated_ = Vector2::Zero();
  Vector2 last_command_ = Vector2::Zero();
};

}  // namespace rths
