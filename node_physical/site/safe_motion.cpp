#include "node_physical/site/safe_motion.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {

RampPlan::RampPlan(std::span<const double> from_m, std::span<const double> to_m, std::int64_t move_steps,
                   std::int64_t hold_steps, double dt_s, std::int64_t settle_steps)
    : from_(from_m.begin(), from_m.end()),
      to_(to_m.begin(), to_m.end()),
      move_steps_(move_steps),
      hold_steps_(hold_steps),
      settle_steps_(settle_steps),
      dt_s_(dt_s) {
  if (from_.size() != to_.size() || move_steps_ < 0 || hold_steps_ < 0 || settle_steps_ < 0 || !(dt_s_ > 0)) {
    throw std::invalid_argument("RampPlan: positions of different sizes, a negative step count or dt <= 0");
  }
}

void RampPlan::commands(std::int64_t k, std::span<InterfaceMotion> out) const {
  const std::int64_t m = k - hold_steps_;  // step of the move; negative while holding
  for (std::size_t c = 0; c < from_.size(); ++c) {
    if (m < 0 || m >= move_steps_) {
      out[c] = {m < 0 ? from_[c] : to_[c], 0.0, 0.0};
      continue;
    }
    const double s = static_cast<double>(std::min(m + 1, move_steps_)) / static_cast<double>(move_steps_);
    const double span = to_[c] - from_[c];
    const double duration = static_cast<double>(move_steps_) * dt_s_;
    const double phase = std::numbers::pi * s;
    out[c].displacement_m = m + 1 >= move_steps_ ? to_[c] : from_[c] + span * (1.0 - std::cos(phase)) / 2.0;
    out[c].velocity_m_per_s = span * std::numbers::pi * std::sin(phase) / (2.0 * duration);
    out[c].acceleration_m_per_s2 =
        span * std::numbers::pi * std::numbers::pi * std::cos(phase) / (2.0 * duration * duration);
  }
}

double RampPlan::peak_velocity_m_per_s(std::size_t c) const {
  if (move_steps_ == 0) {
    return from_[c] == to_[c] ? 0.0 : INFINITY;
  }
  return std::numbers::pi * std::abs(to_[c] - from_[c]) / (2.0 * static_cast<double>(move_steps_) * dt_s_);
}

RampPlan start_ramp(const config::SafeMotion& motion, std::span<const double> measured_m, double rate_hz) {
  const std::vector<double> initial(measured_m.size(), 0.0);
  return {measured_m, initial, std::llround(motion.start_ramp_s() * rate_hz), 0, 1.0 / rate_hz};
}

RampPlan stop_ramp(const config::SafeMotion& motion, std::span<const double> last_command_m, double rate_hz) {
  std::vector<double> safe(last_command_m.size(), 0.0);
  double longest_m = 0.0;
  for (std::size_t c = 0; c < safe.size(); ++c) {
    if (static_cast<int>(c) < motion.safe_position_m_size()) {
      safe[c] = motion.safe_position_m(static_cast<int>(c));
    }
    longest_m = std::max(longest_m, std::abs(safe[c] - last_command_m[c]));
  }
  // Peak velocity pi d / (2 T) = v for the longest way d: T = pi d / (2 v), whole steps, rounded up.
  const double move_s = std::numbers::pi * longest_m / (2.0 * motion.stop_velocity_m_per_s());
  const auto move_steps = static_cast<std::int64_t>(std::ceil(move_s * rate_hz));
  return {last_command_m, safe,
          move_steps,     std::llround(motion.stop_hold_s() * rate_hz),
          1.0 / rate_hz,  std::llround(kStopSettleS * rate_hz)};
}

// Why the start ramp cannot run (empty: it can): an actuator measured beyond its stroke, or a
// channel that would move faster than its velocity limit.
std::string start_ramp_refusal(const config::Site& site, const RampPlan& plan, std::span<const double> from_m) {
  for (std::size_t c = 0; c < plan.channels(); ++c) {
    const config::Channel& channel = site.channel(static_cast<int>(c));
    if (channel.stroke_limit_m() > 0 && !(std::abs(from_m[c]) <= channel.stroke_limit_m())) {
      return fmt::format("channel {} is measured at {:g} m, beyond its stroke limit {:g} m; refused before motion", c,
                         from_m[c], channel.stroke_limit_m());
    }
    const double limit = channel.velocity_limit_m_per_s();
    if (limit > 0 && plan.peak_velocity_m_per_s(c) > limit) {
      return fmt::format(
          "the start ramp would move channel {} at {:.4g} m/s, beyond its velocity limit {:g} m/s; expected a "
          "longer safe_motion.start_ramp_s; refused before motion",
          c, plan.peak_velocity_m_per_s(c), limit);
    }
  }
  return {};
}

}  // namespace rths
