#include "node_physical/plants/setup_driver.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {
namespace {

// The interface velocity is the inverse's derivative along the measured stroke velocities, by a
// central difference over this time: short enough that the geometry's curvature adds nothing
// measurable (an error of order (v h)^2 / L^2 of v), long enough that rounding does not (1e-17 m over
// 2e-4 s is 5e-14 m/s).
constexpr double kVelocityProbeS = 1e-4;

}  // namespace

SetupDriver::SetupDriver(std::unique_ptr<SetupTransform> setup, std::vector<double> stroke_limits_m,
                         std::unique_ptr<PlantDriver> actuators, std::unique_ptr<SiteController> controller,
                         std::unique_ptr<InterfaceForceSource> forces)
    : setup_(std::move(setup)),
      stroke_limits_m_(std::move(stroke_limits_m)),
      actuators_(std::move(actuators)),
      controller_(std::move(controller)),
      forces_(std::move(forces)) {
  const std::size_t n = setup_->actuators();
  if (stroke_limits_m_.size() != n || actuators_->channels() != n || (controller_ && controller_->actuators() != n)) {
    throw std::invalid_argument(
        fmt::format("a setup of {} actuators with {} stroke limits, a driver of {} and a "
                    "controller of {}",
                    n, stroke_limits_m_.size(), actuators_->channels(), controller_ ? controller_->actuators() : n));
  }
  actuator_targets_.resize(n);
  const std::size_t dofs = setup_->dofs();
  for (auto* v : {&u_, &v_, &a_, &probe_u_, &probe_rate_, &measured_u_, &measured_f_, &shifted_u_}) v->resize(dofs);
  for (auto* v : {&strokes_, &stroke_v_, &stroke_a_, &shifted_s_, &read_s_, &read_f_, &filtered_s_}) v->resize(n);
  actuator_commands_.resize(n);
  actuator_measured_.resize(n);
  last_.resize(dofs);
}

void SetupDriver::open(std::span<Measurement> measured) {
  actuators_->open(actuator_measured_);
  if (!to_interface(measured, 0.0)) {
    std::string strokes;
    for (const Measurement& m : actuator_measured_) {
      strokes += fmt::format("{}{:g} m", strokes.empty() ? "" : ", ", m.displacement_m);
    }
    throw DriverError(
        fmt::format("the actuators read strokes {} at the start, outside the setup transformation's "
                    "valid range: {}",
                    strokes, setup_->valid_range()));
  }
  std::copy(measured.begin(), measured.end(), last_.begin());
}

InterlockTrip SetupDriver::check(std::span<const InterfaceMotion> commands) {
  for (std::size_t c = 0; c < u_.size(); ++c) u_[c] = commands[c].displacement_m;
  if (!setup_->strokes(u_, strokes_)) {
    return InterlockTrip{InterlockTrip::What::kOutsideSetup, 0, 0.0, 0.0};
  }
  for (std::size_t i = 0; i < strokes_.size(); ++i) {
    // !(|s| <= limit): a NaN trips too.
    if (!(std::abs(strokes_[i]) <= stroke_limits_m_[i])) {
      return InterlockTrip{InterlockTrip::What::kActuatorStroke, i, strokes_[i], stroke_limits_m_[i]};
    }
  }
  return {};
}

bool SetupDriver::stroke_accelerations(double dt_s) {
  // J a ...
  if (!setup_->stroke_velocities(u_, a_, stroke_a_)) return false;
  // ... + (dJ/dt) v = (J(u + v h) v - J(u - v h) v) / 2h, h one step: 0 for a matrix (J constant).
  if (dt_s <= 0) return true;
  for (std::size_t c = 0; c < u_.size(); ++c) shifted_u_[c] = u_[c] + v_[c] * dt_s;
  if (!setup_->stroke_velocities(shifted_u_, v_, shifted_s_)) return true;  // at the range's edge: J a alone
  for (std::size_t c = 0; c < u_.size(); ++c) shifted_u_[c] = u_[c] - v_[c] * dt_s;
  if (!setup_->stroke_velocities(shifted_u_, v_, read_s_)) return true;
  for (std::size_t i = 0; i < stroke_a_.size(); ++i) stroke_a_[i] += (shifted_s_[i] - read_s_[i]) / (2.0 * dt_s);
  return true;
}

bool SetupDriver::exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) {
  return step(commands, measured, dt_s, true);
}

bool SetupDriver::move(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) {
  return step(commands, measured, dt_s, false);
}

bool SetupDriver::step(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s,
                       bool controlled) {
  refused_ = {};
  filtered_ = false;
  if (fault_ != Fault::kNone) {
    std::copy(last_.begin(), last_.end(), measured.begin());
    return false;
  }
  // The site checked these commands; check() again computes their strokes into strokes_ (and u_), and
  // stops a caller that did not check them all the same.
  for (std::size_t c = 0; c < u_.size(); ++c) {
    v_[c] = commands[c].velocity_m_per_s;
    a_[c] = commands[c].acceleration_m_per_s2;
  }
  if (check(commands).tripped() || !setup_->stroke_velocities(u_, v_, stroke_v_) || !stroke_accelerations(dt_s)) {
    fault_ = Fault::kCommandOutside;
    std::copy(last_.begin(), last_.end(), measured.begin());
    return false;
  }
  for (std::size_t i = 0; i < strokes_.size(); ++i) {
    actuator_targets_[i] = InterfaceMotion{strokes_[i], stroke_v_[i], stroke_a_[i]};
  }
  if (controller_ && controlled) {
    // The controller's commands from the targets and the reading of the step before.
    controller_->command(actuator_targets_, actuator_measured_, actuator_commands_, dt_s);
  } else {
    std::copy(actuator_targets_.begin(), actuator_targets_.end(), actuator_commands_.begin());
  }
  // Each actuator's command is checked before anything is sent, the controller's and the setup's own
  // alike: a wild controller, or a rate or an acceleration that the geometry overflowed (its dJ/dt
  // term), stops the site instead of an actuator.
  for (std::size_t i = 0; i < actuator_commands_.size(); ++i) {
    const InterfaceMotion& c = actuator_commands_[i];
    if (const std::optional<NotFinite> part = not_finite_part(c)) {
      refused_ = InterlockTrip{.what = InterlockTrip::What::kActuatorNotFinite,
                               .channel = i,
                               .value = part->value,
                               .quantity = part->quantity};
    } else if (!(std::abs(c.displacement_m) <= stroke_limits_m_[i])) {
      refused_ = InterlockTrip{InterlockTrip::What::kActuatorStroke, i, c.displacement_m, stroke_limits_m_[i]};
    }
    if (refused_.tripped()) {
      std::copy(last_.begin(), last_.end(), measured.begin());
      return false;
    }
  }
  const bool alive = actuators_->exchange(actuator_commands_, actuator_measured_, dt_s);
  if (!alive) {
    // The actuators' driver stopped on a rule of the interlock (its equipment holds another command):
    // the site's to report, per actuator.
    refused_ = actuators_->refused();
  }
  filtered_ = controller_ && controlled && controller_->filtered_strokes(actuator_measured_, filtered_s_);
  if (!to_interface(measured, dt_s)) {
    fault_ = Fault::kMeasuredOutside;
    std::copy(last_.begin(), last_.end(), measured.begin());
    return false;
  }
  std::copy(measured.begin(), measured.end(), last_.begin());
  return alive;
}

bool SetupDriver::to_interface(std::span<Measurement> measured, double dt_s) {
  for (std::size_t i = 0; i < read_s_.size(); ++i) {
    read_s_[i] = filtered_ ? filtered_s_[i] : actuator_measured_[i].displacement_m;
    read_f_[i] = actuator_measured_[i].force_n;
  }
  if (!setup_->interface_displacements(read_s_, measured_u_)) return false;
  if (forces_ ? !forces_->step(measured_u_, measured_f_, dt_s)
              : !setup_->interface_forces(read_s_, read_f_, measured_f_)) {
    return false;
  }
  // du = d(inverse)/ds . ds: the inverse at s +- (ds/dt) h, central where both lie in range, else
  // one-sided from the reading itself.
  const auto probe = [&](double sign) {
    for (std::size_t i = 0; i < read_s_.size(); ++i) {
      shifted_s_[i] = read_s_[i] + sign * actuator_measured_[i].velocity_m_per_s * kVelocityProbeS;
    }
    return setup_->interface_displacements(shifted_s_, sign > 0 ? probe_u_ : shifted_u_);
  };
  const bool ahead = probe(+1.0);
  const bool behind = probe(-1.0);
  for (std::size_t c = 0; c < measured_u_.size(); ++c) {
    const double later = ahead ? probe_u_[c] : measured_u_[c];
    const double earlier = behind ? shifted_u_[c] : measured_u_[c];
    const double span_s = (ahead ? kVelocityProbeS : 0.0) + (behind ? kVelocityProbeS : 0.0);
    probe_rate_[c] = span_s > 0 ? (later - earlier) / span_s : 0.0;
  }
  // Every interface DOF is computed from every actuator: one held reading holds them all.
  const bool held =
      std::any_of(actuator_measured_.begin(), actuator_measured_.end(), [](const Measurement& m) { return m.held; });
  for (std::size_t c = 0; c < measured_u_.size(); ++c) {
    measured[c] = Measurement{measured_u_[c], probe_rate_[c], measured_f_[c], held};
  }
  return true;
}

std::uint32_t SetupDriver::status(std::size_t channel) const {
  (void)channel;
  std::uint32_t bits = 0;
  for (std::size_t i = 0; i < actuator_measured_.size(); ++i) bits |= actuators_->status(i);
  return bits;
}

std::string SetupDriver::fault() const {
  switch (fault_) {
    case Fault::kNone:
      return actuators_->fault();
    case Fault::kCommandOutside:
      return fmt::format(
          "a command outside the setup transformation's valid range or its actuators' stroke limits "
          "reached the driver unchecked: {}",
          setup_->valid_range());
    case Fault::kMeasuredOutside: {
      std::string strokes;
      for (const Measurement& m : actuator_measured_) {
        strokes += fmt::format("{}{:g} m", strokes.empty() ? "" : ", ", m.displacement_m);
      }
      return fmt::format("the actuators read strokes {}, outside the setup transformation's valid range: {}", strokes,
                         setup_->valid_range());
    }
  }
  return {};
}

void SetupDriver::report(std::size_t channel, results::PlantReport& out) const {
  actuators_->report(std::min(channel, actuator_measured_.size() - 1), out);
}

void SetupDriver::report_actuator_controller(std::size_t actuator, results::ControllerReport& out) const {
  if (controller_) {
    controller_->report(actuator, out);
  } else {
    out.mutable_pass_through();
  }
}

std::string SetupDriver::actuator_controller_warning() const {
  return controller_ ? controller_->warning() : std::string();
}

}  // namespace rths
