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
    case W::kOutsideSetup:
      return fmt::format(
          "the commands leave the setup transformation's valid range (docs/setup-transformations.md): no actuator "
          "stroke reaches them");
  }
  return "interlock tripped";
}

Interlock::Interlock(std::vector<ChannelLimits> limits, double dt_s)
    : limits_(std::move(limits)), last_(limits_.size()), dt_s_(dt_s) {}

bool Interlock::fail(InterlockTrip::What what, std::size_t channel, double value, double limit) {
  if (!trip_.tripped()) {
    trip_ = {what, channel, value, limit};
  }
  return false;
}

bool Interlock::trip_on(const InterlockTrip& breach) {
  return fail(breach.what, breach.channel, breach.value, breach.limit);
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
