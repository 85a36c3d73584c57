#include "node_physical/controllers/frame_lqg.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "node_physical/controllers/linear_quadratic.hpp"

namespace rths {

FrameLqgDesign design_frame_lqg(const FramePlantModel& model, const FrameLqgWeights& weights, double dt_s) {
  const auto check = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("LQG design: " + what);
  };
  check(positive_finite(dt_s), fmt::format("a step of {} s; expected > 0", dt_s));
  check(std::isfinite(weights.output) && weights.output >= 0,
        fmt::format("output weight {}; expected >= 0", weights.output));
  for (std::size_t i = 0; i < 2; ++i) {
    check(positive_finite(weights.integral[i]),
          fmt::format("integral weight {} of actuator {}; expected > 0", weights.integral[i], i + 1));
    check(positive_finite(weights.input[i]),
          fmt::format("input weight {} of actuator {}; expected > 0", weights.input[i], i + 1));
  }
  check(std::isfinite(weights.process_noise) && weights.process_noise >= 0,
        fmt::format("process noise {}; expected >= 0", weights.process_noise));
  check(positive_finite(weights.measurement_noise),
        fmt::format("measurement noise {}; expected > 0", weights.measurement_noise));

  constexpr int n = FrameStateModel::kStates;
  const FrameStateModel::Theta theta = Eigen::Map<const FrameStateModel::Theta>(model.theta.data());
  FrameLqgDesign d;
  // The RK4 map of the linear model, column by column: Phi e_j and Gamma e_j.
  for (int j = 0; j < n; ++j) {
    d.phi.col(j) = FrameStateModel::step(FrameStateModel::State::Unit(j), theta, model.gain,
                                         FrameStateModel::Input::Zero(), dt_s, FrameDiscretisation::kRungeKutta4);
  }
  for (int j = 0; j < 2; ++j) {
    d.gamma.col(j) = FrameStateModel::step(FrameStateModel::State::Zero(), theta, model.gain,
                                           FrameStateModel::Input::Unit(j), dt_s, FrameDiscretisation::kRungeKutta4);
  }
  d.c = FrameStateModel::linear(theta, model.gain).c;

  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n + 2, n + 2);
  a.topLeftCorner(n, n) = d.phi;
  a.bottomLeftCorner(2, n) = -dt_s * d.c;
  a.bottomRightCorner(2, 2).setIdentity();
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n + 2, 2);
  b.topRows(n) = d.gamma;
  Eigen::MatrixXd q = Eigen::MatrixXd::Zero(n + 2, n + 2);
  q.topLeftCorner(n, n) = weights.output * d.c.transpose() * d.c;
  q(n, n) = weights.integral[0];
  q(n + 1, n + 1) = weights.integral[1];
  const Eigen::MatrixXd r = Eigen::Vector2d(weights.input[0], weights.input[1]).asDiagonal();
  const RiccatiSolution regulator = solve_dare(a, b, q, r);
  check(regulator.converged, "the regulator's Riccati equation has no stabilising solution");
  const Eigen::MatrixXd k = lqr_gain(a, b, r, regulator.p);
  d.state_gain = k.leftCols(n);
  d.integral_gain = k.rightCols(2);

  const KalmanDesign filter = kalman_design(d.phi, d.c, weights.process_noise * Eigen::MatrixXd::Identity(n, n),
                                            weights.measurement_noise * Eigen::MatrixXd::Identity(2, 2));
  check(filter.converged, "the Kalman filter's Riccati equation has no stabilising solution");
  d.kalman_gain = filter.gain;
  return d;
}

FrameLqg::FrameLqg(const FramePlantModel& model, FrameLqgDesign design, double dt_s)
    : design_(std::move(design)), static_inverse_(static_gain_matrix(model).inverse()), dt_s_(dt_s) {}

void FrameLqg::observe(const Vector2& measured, bool held) {
  if (!started_) {
    started_ = true;
    starting_ = true;
    last_command_ = static_inverse_ * measured;
    predicted_ = FrameStateModel::equilibrium(last_command_);
    integral_ = design_.integral_gain.partialPivLu().solve(-last_command_ - design_.state_gain * predicted_);
    estimated_ = measured;
    return;
  }
  corrected_ = held ? predicted_
                    : FrameStateModel::State(predicted_ + design_.kalman_gain * (measured - design_.c * predicted_));
  estimated_ = design_.c * corrected_;
  integral_ += dt_s_ * (last_target_ - estimated_);
}

FrameLqg::Vector2 FrameLqg::command(const Vector2& target) {
  last_target_ = target;
  if (starting_) {
    starting_ = false;
    return last_command_;
  }
  predicted_ = design_.phi * corrected_ + design_.gamma * last_command_;
  last_command_ = -design_.state_gain * predicted_ - design_.integral_gain * integral_;
  return last_command_;
}

}  // namespace rths
