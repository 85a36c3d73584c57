#include "rths/node_physical/interlock.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace rths {

namespace {
// Written as !(|x| <= limit) so that a NaN, which compares false with everything, trips it too.
bool beyond(double value, double limit) {
  return limit > 0.0 && !(std::abs(value) <= limit);
}
}  // namespace

std::string InterlockTrip::describe() const {
  using W = What;
  const std::size_t n = channel + 1;
  switch (what) {
    case W::kNone:
      return "no interlock tripped";
    case W::kTargetNotFinite:
      return fmt::format("channel {}: a target that is not finite ({})", n, value);
    case W::kTargetStroke:
      return fmt::format("channel {}: target {} m beyond the stroke limit {} m", n, value, limit);
    case W::kTargetVelocity:
      return fmt::format("channel {}: target velocity {} m/s beyond the velocity limit {} m/s", n, value, limit);
    case W::kCommandNotFinite:
      return fmt::format("channel {}: the controller's actuator command is not finite ({})", n, value);
    case W::kCommandStroke:
      return fmt::format("channel {}: the controller's actuator command {} m is beyond the stroke limit {} m", n, value,
                         limit);
    case W::kMeasurementNotFinite:
      return fmt::format("channel {}: a measurement that is not finite ({})", n, value);
    case W::kMeasuredStroke:
      return fmt::format("channel {}: measured displacement {} m beyond the stroke limit {} m", n, value, limit);
    case W::kMeasuredForce:
      return fmt::format("channel {}: measured force {} N beyond the force limit {} N", n, value, limit);
    case W::kActuatorStroke:
      return fmt::format("actuator {} of the setup: stroke {} m beyond its limit setup.stroke_limit_m[{}] = {} m",
                         channel, value, channel, limit);
    case W::kTrackingError:
      return fmt::format(
          "channel {}: tracking error |target - measured| {} m above its limit {} m in {} steps in a row "
          "(tracking_limit_m, tracking_limit_steps): the actuator does not follow the site's targets",
          n, value, limit, steps);
    case W::kAppliedCounter:
      return fmt::format(
          "the equipment holds command {} in force, not command {} that the site just sent: it does not obey this "
          "site (another sender drives it, or it refused the command)",
          static_cast<std::uint64_t>(value), static_cast<std::uint64_t>(limit));
    case W::kAppliedCommand:
      return fmt::format(
          "the equipment applied {} m on its channel {} (from 0: the bridge's, a setup's actuator), not the {} m the "
          "site sent with the same counter: another sender drives it",
          value, channel, limit);
    case W::kOutsideSetup:
      return fmt::format(
          "the commands leave the setup transformation's valid range (docs/setup-transformations.md): no actuator "
          "stroke reaches them");
  }
  return "interlock tripped";
}

Interlock::Interlock(std::vector<ChannelLimits> limits, double dt_s)
    : limits_(std::move(limits)), last_(limits_.size()), beyond_tracking_(limits_.size(), 0), dt_s_(dt_s) {}

bool Interlock::fail(InterlockTrip::What what, std::size_t channel, double value, double limit) {
  if (!trip_.tripped()) {
    trip_ = {what, channel, value, limit};
  }
  return false;
}

bool Interlock::trip_on(const InterlockTrip& breach) {
  if (!trip_.tripped()) {
    trip_ = breach;
  }
  return false;
}

bool Interlock::check_tracking(std::size_t channel, double target_m, double measured_m) {
  const ChannelLimits& l = limits_[channel];
  if (!(l.tracking_m > 0.0)) {
    return !tripped();
  }
  const double error = std::abs(target_m - measured_m);
  // A NaN counts as beyond, as in every check here.
  beyond_tracking_[channel] = beyond(error, l.tracking_m) ? beyond_tracking_[channel] + 1 : 0;
  if (beyond_tracking_[channel] >= l.tracking_steps) {
    if (!trip_.tripped()) {
      trip_ = {InterlockTrip::What::kTrackingError, channel, error, l.tracking_m, beyond_tracking_[channel]};
    }
    return false;
  }
  return !tripped();
}

bool Interlock::admit(std::span<const InterfaceMotion> wanted, std::span<InterfaceMotion> admitted) {
  using W = InterlockTrip::What;
  if (tripped()) {
    std::copy(last_.begin(), last_.end(), admitted.begin());
    return false;
  }
  // Every channel is checked before any is admitted: a breach on one holds them all.
  for (std::size_t c = 0; c < limits_.size(); ++c) {
    const InterfaceMotion& w = wanted[c];
    const ChannelLimits& l = limits_[c];
    for (const double v : {w.displacement_m, w.velocity_m_per_s, w.acceleration_m_per_s2}) {
      if (!std::isfinite(v)) {
        std::copy(last_.begin(), last_.end(), admitted.begin());
        return fail(W::kTargetNotFinite, c, v, 0.0);
      }
    }
    if (beyond(w.displacement_m, l.stroke_m) || beyond(w.velocity_m_per_s, l.velocity_m_per_s)) {
      std::copy(last_.begin(), last_.end(), admitted.begin());
      return beyond(w.displacement_m, l.stroke_m) ? fail(W::kTargetStroke, c, w.displacement_m, l.stroke_m)
                                                  : fail(W::kTargetVelocity, c, w.velocity_m_per_s, l.velocity_m_per_s);
    }
  }
  for (std::size_t c = 0; c < limits_.size(); ++c) {
    const InterfaceMotion& w = wanted[c];
    const double max_step = limits_[c].velocity_m_per_s * dt_s_;
    const double change = w.displacement_m - last_[c].displacement_m;
    if (max_step > 0.0 && std::abs(change) > max_step) {
      // A jump (after a gap in the commands): ramp toward the newest target at the velocity limit.
      const double moved = std::copysign(max_step, change);
      last_[c] = {last_[c].displacement_m + moved, moved / dt_s_, 0.0};
    } else {
      last_[c] = w;
    }
    admitted[c] = last_[c];
  }
  return true;
}

bool Interlock::check_command(std::size_t channel, const InterfaceMotion& command) {
  using W = InterlockTrip::What;
  if (!std::isfinite(command.displacement_m)) {
    return fail(W::kCommandNotFinite, channel, command.displacement_m, 0.0);
  }
  if (beyond(command.displacement_m, limits_[channel].stroke_m)) {
    return fail(W::kCommandStroke, channel, command.displacement_m, limits_[channel].stroke_m);
  }
  return !tripped();
}

bool Interlock::command_inside(std::size_t channel, const InterfaceMotion& command) const {
  return std::isfinite(command.displacement_m) && !beyond(command.displacement_m, limits_[channel].stroke_m);
}

bool Interlock::check_measurement(std::size_t channel, const Measurement& measured) {
  using W = InterlockTrip::What;
  for (const double v : {measured.displacement_m, measured.velocity_m_per_s, measured.force_n}) {
    if (!std::isfinite(v)) {
      return fail(W::kMeasurementNotFinite, channel, v, 0.0);
    }
  }
  const ChannelLimits& l = limits_[channel];
  if (beyond(measured.displacement_m, l.stroke_m)) {
    return fail(W::kMeasuredStroke, channel, measured.displacement_m, l.stroke_m);
  }
  if (beyond(measured.force_n, l.force_n)) {
    return fail(W::kMeasuredForce, channel, measured.force_n, l.force_n);
  }
  return !tripped();
}

}  // namespace rths
