#include "node_physical/controllers/inverse_dynamics_controller.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {

namespace {

// The first of two values that is not finite (what a freeze names).
double non_finite_of(const InverseDynamicsController::Input& v) {
  return std::isfinite(v[0]) ? v[1] : v[0];
}

}  // namespace

InverseDynamicsController::InverseDynamicsController(const char* name, const FramePlantModel& initial, double rate_hz,
                                                     double signal_scale, std::uint32_t filter_order,
                                                     double filter_cutoff_hz, std::uint32_t target_window)
    : name_(name),
      initial_(initial),
      model_(initial),
      inverse_(initial, 1.0 / rate_hz, FrameInverseCommand::kHalfStepAhead, false, static_cast<int>(target_window)),
      dt_s_(1.0 / rate_hz),
      signal_scale_(signal_scale),
      stroke_commands_(1.0 / rate_hz) {
  // The guards of the config's values this constructor keeps: the filter's order, which its arrays
  // hold, and the target window, which the inverse's do (its constructor throws; validate_inverse_dynamics
  // states every rule, the contract tests hold the two to agree).
  if (filter_order > static_cast<std::uint32_t>(IirFilter::kMaxOrder)) {
    throw std::invalid_argument(fmt::format("{} filter_order {}; expected 0..{} (0: no filter; seed 003: 6)", name,
                                            filter_order, IirFilter::kMaxOrder));
  }
  for (int r = 0; r < kRoots; ++r) floor_[r] = 0.01 * initial.theta[r];
  zero_floor_ = 0.01 * FrameInverseCommand::transmission_zero(initial);
  if (filter_order > 0) {
    const IirFilter filter = butterworth_lowpass(static_cast<int>(filter_order), filter_cutoff_hz, rate_hz);
    command_filter_ = {filter, filter};
    measured_filter_ = {filter, filter};
  }
}

void InverseDynamicsController::command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
                                        std::span<InterfaceMotion> commands, double /*dt_s*/) {
  const Input measured{previous[0].displacement_m * signal_scale_, previous[1].displacement_m * signal_scale_};
  if (step_ == 0) {
    if (measured.allFinite()) {
      measured_reference_ = measured;
      command_reference_ = static_gain_matrix(initial_).inverse() * measured;  // holds the plant at y0
      filtered_commands_.fill(command_reference_);  // what held it there before the first step
      start(command_reference_, measured_reference_);
    } else {
      freeze(EstimateFreeze::kNotFinite, non_finite_of(measured));
    }
  } else if (frozen_ == EstimateFreeze::kNone) {
    update(measured, previous[0].held || previous[1].held);
  }

  const FrameInverseCommand::Vector2 u =
      inverse_.step({targets[0].displacement_m * signal_scale_, targets[1].displacement_m * signal_scale_});
  stroke_commands_.write({u[0] / signal_scale_, u[1] / signal_scale_}, commands);
  if (frozen_ == EstimateFreeze::kNone) {
    Input filtered;
    for (int i = 0; i < 2; ++i) {
      filtered[i] = command_filter_[i].step(u[i] - command_reference_[i]) + command_reference_[i];
    }
    if (!filtered.allFinite()) freeze(EstimateFreeze::kNotFinite, non_finite_of(filtered));
    filtered_commands_[1] = filtered_commands_[0];
    filtered_commands_[0] = filtered;
  }
  ++step_;
}

// The estimator's cycle at call k >= 1 with the reading of tick k-1, then the shared guards: the roots'
// floor and the inverse's stability. Nothing is committed before every guard passes.
void InverseDynamicsController::update(const Input& measured_mm, bool held) {
  if (!held && !measured_mm.allFinite()) {
    freeze(EstimateFreeze::kNotFinite, non_finite_of(measured_mm));
    return;
  }
  Input measured;
  if (!held) {
    for (int i = 0; i < 2; ++i) {
      measured[i] = measured_filter_[i].step(measured_mm[i] - measured_reference_[i]) + measured_reference_[i];
    }
  }
  Theta theta;
  if (!estimate(held ? nullptr : &measured, filtered_commands_[1], step_ >= 2, theta)) return;
  for (int r = 0; r < kRoots; ++r) {
    if (theta[r] < floor_[r]) {
      theta[r] = floor_[r];
      ++clamps_;
    }
  }
  FramePlantModel next = model_;
  for (int r = 0; r < kRoots; ++r) next.theta[r] = theta[r];
  const double zero = FrameInverseCommand::transmission_zero(next);
  if (!(zero > zero_floor_) || !inverse_.set_model(next)) {
    freeze(EstimateFreeze::kUnstableInverse, zero);
    return;
  }
  model_ = next;
  accept(theta);
  ++updates_;
}

void InverseDynamicsController::freeze(EstimateFreeze reason, double value) {
  frozen_ = reason;
  frozen_at_step_ = step_;
  frozen_value_ = value;
}

bool InverseDynamicsController::innovation_definite(const Eigen::Matrix2d& innovation) {
  const double determinant = innovation.determinant();
  if (innovation(0, 0) > 0.0 && determinant > 0.0) return true;
  const double half_trace = innovation.trace() / 2.0;
  freeze(EstimateFreeze::kIndefinite, half_trace - std::sqrt(half_trace * half_trace - determinant));
  return false;
}

std::string InverseDynamicsController::freeze_message() const {
  const char* tail = "; commanding with the last good model for the rest of the run";
  switch (frozen_) {
    case EstimateFreeze::kNone:
      return {};
    case EstimateFreeze::kNotFinite:
      return fmt::format(
          "{} estimation frozen at step {}: a non-finite value ({}) in the measurement, the command "
          "or the update{}",
          name_, frozen_at_step_, frozen_value_, tail);
    case EstimateFreeze::kIndefinite:
      return fmt::format(
          "{} estimation frozen at step {}: the covariance is no longer positive definite (its "
          "smallest eigenvalue {:.6g}){}",
          name_, frozen_at_step_, frozen_value_, tail);
    case EstimateFreeze::kUnstableInverse:
      return fmt::format(
          "{} estimation frozen at step {}: the estimated roots would move the inverse's pole -z to "
          "z = {:.6g} rad/s, at or below 1 % of its initial {:.6g} rad/s{}",
          name_, frozen_at_step_, frozen_value_, 100.0 * zero_floor_, tail);
  }
  return {};
}

std::string InverseDynamicsController::warning() const {
  std::string out = freeze_message();
  if (clamps_ > 0) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} root estimates were held at 1 % of their initial values {} times", name_, clamps_);
  }
  return out;
}

void InverseDynamicsController::report(std::size_t /*actuator*/, results::ControllerReport& out) const {
  results::InverseDynamicsReport& r = report_member(out);
  for (const double t : initial_.theta) r.add_initial_theta(t);
  for (const double t : model_.theta) r.add_final_theta(t);
  r.set_updates(updates_);
  r.set_frozen(frozen_ != EstimateFreeze::kNone);
  r.set_freeze_message(freeze_message());
}

void validate_inverse_dynamics(const config::TwoActuatorFramePlant* initial_model, double signal_scale,
                               std::uint32_t filter_order, double filter_cutoff_hz, std::uint32_t target_window,
                               const std::array<double, 3>& covariances, const ComponentContext& context,
                               const Checker& check) {
  const std::optional<FramePlantModel> model =
      validate_model_source(initial_model, "initial_model", "the model the estimate starts from", context, check);
  // A rule of the model's roots and gains together, which the command law needs from its first step.
  if (model) {
    check.expect(FrameInverseCommand::invertible(*model), "initial_model",
                 fmt::format("{}cannot be inverted stably: expected every root > 0, k11 != 0, k11 k22 != k12 k21 "
                             "and a transmission zero (k11 k22 p2 - k12 k21 p1) / (k11 k22 - k12 k21) > 0 (it is {} "
                             "rad/s)",
                             initial_model != nullptr ? "" : "absent, and the site's actuator_plant it starts from ",
                             FrameInverseCommand::transmission_zero(*model)));
  }
  check.expect(positive_finite(signal_scale), "signal_scale",
               fmt::format("is {}, expected a finite value > 0", signal_scale));
  check.expect(filter_order <= IirFilter::kMaxOrder, "filter_order",
               fmt::format("is {}, expected 0 (no filter) to {}", filter_order, IirFilter::kMaxOrder));
  if (filter_order > 0) {
    check.expect(filter_cutoff_hz > 0 && filter_cutoff_hz < context.rate_hz / 2, "filter_cutoff_hz",
                 fmt::format("is {}, expected a cutoff > 0 Hz below half the step rate ({} Hz)", filter_cutoff_hz,
                             context.rate_hz / 2));
  }
  constexpr int kFewest = FrameInverseCommand::kMinTargetWindow;
  check.expect(target_window >= kFewest && target_window <= FrameInverseCommand::kMaxTargetWindow, "target_window",
               fmt::format("is {}, expected {} (the cubic through the last four targets) to {}", target_window, kFewest,
                           FrameInverseCommand::kMaxTargetWindow));
  const std::array<const char*, 3> names{"initial_covariance", "process_noise", "measurement_noise"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const bool zero_allowed = i == 1;  // Q = 0: no process noise (seed 003 Table 1's EKF-SS)
    check.expect(std::isfinite(covariances[i]) && (zero_allowed ? covariances[i] >= 0 : covariances[i] > 0), names[i],
                 fmt::format("is {}, expected a finite value {}", covariances[i], zero_allowed ? ">= 0" : "> 0"));
  }
}

void validate_sigma_points(double alpha, double beta, double kappa, int dimension, const Checker& check) {
  check.expect(alpha > 0 && alpha <= 1, "alpha",
               fmt::format("is {}, expected the sigma points' spread in (0, 1] (seed 003: 0.4)", alpha));
  check.expect(std::isfinite(beta) && beta >= 0, "beta",
               fmt::format("is {}, expected a finite value >= 0 (seed 003: 2)", beta));
  check.expect(std::isfinite(kappa) && dimension + kappa > 0, "kappa",
               fmt::format("is {}, expected a finite value > -{} (the estimated state's dimension; seed 003: 0)", kappa,
                           dimension));
}

}  // namespace rths
