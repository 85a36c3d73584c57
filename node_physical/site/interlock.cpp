#include "node_physical/site/interlock.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

namespace rths {

namespace {
// Written as !(|x| <= limit) so that a NaN, which compares false with everything, trips it too.
bool beyond(double value, double limit) {
  return limit > 0.0 && !(std::abs(value) <= limit);
}
}  // namespace

Interlock::Interlock(std::vector<ChannelLimits> limits, double dt_s)
    : limits_(std::move(limits)), last_(limits_.size()), beyond_tracking_(limits_.size(), 0), dt_s_(dt_s) {}

bool Interlock::fail(InterlockTrip::What what, std::size_t channel, double value, double limit, const char* quantity) {
  if (!trip_.tripped()) {
    trip_ = {.what = what, .channel = channel, .value = value, .limit = limit, .quantity = quantity};
  }
  return false;
}

bool Interlock::fail(InterlockTrip::What what, std::size_t channel, const NotFinite& part) {
  return fail(what, channel, part.value, 0.0, part.quantity);
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
    if (const std::optional<NotFinite> part = not_finite_part(w)) {
      std::copy(last_.begin(), last_.end(), admitted.begin());
      return fail(W::kTargetNotFinite, c, *part);
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
  if (const std::optional<NotFinite> part = not_finite_part(command)) {
    return fail(W::kCommandNotFinite, channel, *part);
  }
  if (beyond(command.displacement_m, limits_[channel].stroke_m)) {
    return fail(W::kCommandStroke, channel, command.displacement_m, limits_[channel].stroke_m);
  }
  return !tripped();
}

bool Interlock::command_inside(std::size_t channel, const InterfaceMotion& command) const {
  return !not_finite_part(command) && !beyond(command.displacement_m, limits_[channel].stroke_m);
}

bool Interlock::check_measurement(std::size_t channel, const Measurement& measured) {
  using W = InterlockTrip::What;
  if (const std::optional<NotFinite> part = not_finite_part(measured)) {
    return fail(W::kMeasurementNotFinite, channel, *part);
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
