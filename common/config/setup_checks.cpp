// Which setup transformations can be built (docs/setup-transformations.md): each kind's own rules are
// its file's in node_physical/setups/, asked through the registry; the stroke limits are the setup's.
#include "common/config/setup_checks.hpp"

#include <fmt/format.h>

#include <cmath>

#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"

namespace rths {

bool check_setup(const config::SetupTransform& setup, const ComponentContext& context, const Checker& check) {
  const bool kind_ok = check.section([&] {
    if (!check_component(setup, "kind", context, check)) {
      check.fail("", fmt::format("has no transformation; expected {}",
                                 registry::member_sketches(*config::SetupTransform::descriptor(), "kind")));
    }
  });
  // The limits are counted against the kind's actuators, which a kind with a problem may miscount.
  if (!kind_ok) return false;
  return check.section([&] {
    const std::size_t actuators = setup_actuators(setup);
    const auto limits = static_cast<std::size_t>(setup.stroke_limit_m_size());
    check.require(
        limits == 0 || limits == actuators, "stroke_limit_m",
        fmt::format("has {} value{}, expected one per actuator ({})", limits, limits == 1 ? "" : "s", actuators));
    for (int i = 0; i < setup.stroke_limit_m_size(); ++i) {
      const double limit = setup.stroke_limit_m(i);
      check.expect(std::isfinite(limit) && limit > 0, fmt::format("stroke_limit_m[{}]", i),
                   fmt::format("is {}, expected actuator {}'s stroke limit (m, > 0)", limit, i));
    }
  });
}

std::size_t setup_actuators(const config::SetupTransform& setup) {
  return ComponentFacts<SetupActuators>::of_member(setup, "kind").value_or(0);
}

std::size_t driven_channels(const config::Site& site) {
  return site.has_setup() ? setup_actuators(site.setup()) : static_cast<std::size_t>(site.channel_size());
}

}  // namespace rths
