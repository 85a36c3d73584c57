#include "node_physical/interfaces/interlock_trip.hpp"

#include <cmath>
#include <initializer_list>

#include <fmt/format.h>

namespace rths {

std::string InterlockTrip::describe() const {
  using W = What;
  const std::size_t n = channel + 1;
  switch (what) {
    case W::kNone:
      return "no interlock tripped";
    case W::kTargetNotFinite:
      return fmt::format("channel {}: a target whose {} is not finite ({})", n, quantity, value);
    case W::kTargetStroke:
      return fmt::format("channel {}: target {} m beyond the stroke limit {} m", n, value, limit);
    case W::kTargetVelocity:
      return fmt::format("channel {}: target velocity {} m/s beyond the velocity limit {} m/s", n, value, limit);
    case W::kCommandNotFinite:
      return fmt::format("channel {}: the controller's actuator command's {} is not finite ({})", n, quantity, value);
    case W::kCommandStroke:
      return fmt::format("channel {}: the controller's actuator command {} m is beyond the stroke limit {} m", n, value,
                         limit);
    case W::kMeasurementNotFinite:
      return fmt::format("channel {}: a measured {} that is not finite ({})", n, quantity, value);
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
    case W::kActuatorNotFinite:
      return fmt::format("actuator {} of the setup: the command's {} is not finite ({})", channel, quantity, value);
    case W::kOutsideSetup:
      return fmt::format(
          "the commands leave the setup transformation's valid range (docs/setup-transformations.md): no actuator "
          "stroke reaches them");
  }
  return "interlock tripped";
}

namespace {
std::optional<NotFinite> first_not_finite(std::initializer_list<NotFinite> parts) {
  for (const NotFinite part : parts) {
    if (!std::isfinite(part.value)) return part;
  }
  return std::nullopt;
}
}  // namespace

std::optional<NotFinite> not_finite_part(const InterfaceMotion& m) {
  return first_not_finite({{"displacement", m.displacement_m},
                           {"velocity", m.velocity_m_per_s},
                           {"acceleration", m.acceleration_m_per_s2}});
}

std::optional<NotFinite> not_finite_part(const Measurement& m) {
  return first_not_finite({{"displacement", m.displacement_m}, {"velocity", m.velocity_m_per_s}, {"force", m.force_n}});
}

}  // namespace rths
