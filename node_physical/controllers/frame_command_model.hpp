#pragma once

#include <cstdint>

#include <Eigen/Dense>

#include "node_physical/controllers/frame_inverse_command.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/inverse_dynamics_controller.hpp"
#include "node_physical/controllers/root_estimate.hpp"

namespace rths {

// The estimation model of seed 003's TF variants (EKF-TF, UKF-TF; its Eqs. 11-12): the state is the
// model's roots theta alone, a random walk, and the observation is the command, predicted from the
// measured strokes by the inverse of the model, u_c = H^-1(s | theta) x_m (docs/marths-ukf.md, "EKF-TF
// and UKF-TF", has the choices with the reasons):
// - The inverse is the command law's own (FrameInverseCommand: the exact factorised inverse, its
//   cubic derivatives, trapezoidal states), run on the filtered readings and evaluated half a step
//   before the newest one: the command the reading of tick k shows first is that of step k-1, held
//   over [t_k-1, t_k), whose middle that is. Between two readings the cubic interpolates.
// - The inverse has three states (H^-1's poles). The observation is a function of theta given them:
//   predict() evaluates this step under trial roots from the states the committed roots left, and
//   advance() moves them on with the roots the estimator accepted (the states are not estimated).
// - A tick without a reading (held) moves the history on with the cubic's extrapolation; the
//   observation is not used again before 128 readings in a row stand behind it (ready()).
// No allocation after construction.
class FrameCommandModel {
 public:
  static constexpr int kRoots = FramePlantModel::kRoots;
  using Theta = Eigen::Matrix<double, kRoots, 1>;
  using Input = Eigen::Vector2d;
  using Jacobian = Eigen::Matrix<double, 2, kRoots>;  // d(predicted command) / d(theta)

  // Throws std::invalid_argument when `initial` cannot be inverted stably (FrameInverseCommand).
  FrameCommandModel(const FramePlantModel& initial, double dt_s);

  // The start: the strokes at rest at `measured` (mm).
  void start(const Input& measured);
  // The command the roots theta predict for the newest reading `measured` (the command of the step
  // before it), and its Jacobian with respect to theta when `jacobian` is not null (exact, forward
  // differentiation of the same arithmetic). Commits nothing.
  [[nodiscard]] Input predict(const Theta& theta, const Input& measured, Jacobian* jacobian) const;
  // The reading committed under the roots theta (which the command law accepted: invertible): the
  // inverse's states move on. A tick without a reading passes `measured` null.
  void advance(const Theta& theta, const Input* measured);
  // Readings in a row after a held one before the observation is used again: the reading low-pass
  // skipped the held sample while the command's did not, and the inverse's slow state took the
  // extrapolation, both for longer than the cubic's four samples (docs/marths-ukf.md, TF-5).
  static constexpr int kReadingsAfterHeld = 128;
  // True when kReadingsAfterHeld readings stand behind the newest since the last held one.
  [[nodiscard]] bool ready() const { return readings_in_a_row_ >= kReadingsAfterHeld; }

 private:
  FramePlantModel model_;
  FrameInverseCommand inverse_;
  int readings_in_a_row_ = kReadingsAfterHeld;  // the start's history is at rest: real
};

// What the TF estimators (EKF-TF, UKF-TF) keep: the estimate of theta (P0 = initial_covariance I),
// the estimation model, and the reading of the step until the estimate is accepted.
struct CommandModelEstimate {
  using Input = FrameCommandModel::Input;
  RootEstimate<FrameCommandModel::kRoots> estimate;
  FrameCommandModel model;
  Input reading = Input::Zero();
  bool has_reading = false;

  CommandModelEstimate(const FramePlantModel& initial, double initial_covariance, double dt_s)
      : estimate(initial, initial_covariance), model(initial, dt_s) {}
  // The prediction of theta, a random walk (theta- = theta; P- = P + process_noise I when `predict`),
  // proposed as it stands, and the reading of this step (null: held); what the update may use (null:
  // none, the model not ready).
  const Input* predict(const Input* measured, bool predict, double process_noise) {
    estimate.x_next = estimate.x;
    estimate.p_next = estimate.p;
    if (predict) estimate.p_next.diagonal().array() += process_noise;
    has_reading = measured != nullptr;
    if (has_reading) reading = *measured;
    return has_reading && model.ready() ? &reading : nullptr;
  }
  // The proposal committed with the roots theta; the model moves on with this step's reading.
  void accept(const FrameCommandModel::Theta& theta) {
    estimate.accept(theta);
    model.advance(theta, has_reading ? &reading : nullptr);
  }
};

// What the TF variants (EKF-TF, UKF-TF) share beside the shell: the estimate of theta on the TF
// model, committed and started alike, and the random walk's and the observation's noise (Q =
// process_noise I, R = measurement_noise I in mm^2 of command): the prediction of theta and the
// proposal. Each variant implements the update (correct()) and names its report.
class TfInverseDynamicsController : public InverseDynamicsController {
 protected:
  // For a config of the shared fields (EkfTfInverseDynamics, UkfTfInverseDynamics) that passed its
  // rules.
  template <class Config>
  TfInverseDynamicsController(const char* name, const Config& parameters, const FramePlantModel& initial,
                              double rate_hz)
      : InverseDynamicsController(name, parameters, initial, rate_hz),
        tf_(initial, parameters.initial_covariance(), dt_s()),
        process_noise_(parameters.process_noise()),
        measurement_noise_(parameters.measurement_noise()) {}

  CommandModelEstimate tf_;
  double process_noise_;
  double measurement_noise_;

 private:
  bool estimate(const Input* measured, const Input& command, bool predict, Theta& theta) final {
    const Input* reading = tf_.predict(measured, predict, process_noise_);
    if (reading != nullptr && !correct(*reading, command)) return false;
    return propose(tf_.estimate, theta);
  }
  // The update of the predicted estimate (tf_.estimate: x, and the prior in p_next) with the reading
  // of this step, whose command is `command`, into x_next and p_next. False: frozen.
  virtual bool correct(const Input& reading, const Input& command) = 0;
  void accept(const Theta& theta) final { tf_.accept(theta); }
  void start(const Input& /*command*/, const Input& measured) final { tf_.model.start(measured); }
};

}  // namespace rths
