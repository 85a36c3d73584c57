#include "node_physical/setups/setup_kind.hpp"

#include <fmt/format.h>

#include "experiment.pb.h"

namespace rths::setup_kind {

std::size_t site_dofs(const ComponentContext& context) {
  return context.site == nullptr ? 0 : static_cast<std::size_t>(context.site->channel_size());
}

std::string channels_text(std::size_t dofs) {
  return fmt::format("{} channel{}", dofs, dofs == 1 ? "" : "s");
}

void expect_site_dofs(const Checker& check, const ComponentContext& context, std::size_t dofs, std::string_view drives,
                      std::string_view expected) {
  const std::size_t channels = site_dofs(context);
  check.expect(channels == dofs, "",
               fmt::format("drives {}, but the site has {}; expected {}", drives, channels_text(channels), expected));
}

bool expect_length(const Checker& check, std::string_view field, bool given, double length_m) {
  constexpr std::string_view kExpected = "expected the actuator's pin-to-pin length at zero stroke (m, > 0)";
  if (!given) return check.expect(false, field, fmt::format("missing; {}", kExpected));
  return check.expect(std::isfinite(length_m) && length_m > 0, field, fmt::format("is {}, {}", length_m, kExpected));
}

bool expect_angle(const Checker& check, std::string_view field, bool given, double angle_deg, const char* missing) {
  if (!given) return check.expect(false, field, fmt::format("missing; expected {}", missing));
  return check.expect(angle_deg >= -180.0 && angle_deg <= 180.0, field,
                      fmt::format("is {}, expected an angle from -180 to 180 degrees", angle_deg));
}

}  // namespace rths::setup_kind
