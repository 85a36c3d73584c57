#include "rths/node_physical/plant_driver.hpp"

#include <fmt/format.h>

#include "rths/common/config.hpp"

#include "rths/node_physical/actuator_plant.hpp"
#include "rths/node_physical/udp_bridge.hpp"

namespace rths {

std::unique_ptr<SimulatedPlants> make_simulated_plants(const config::Site& site, double rate_hz, bool ideal) {
  std::vector<std::unique_ptr<Plant>> plants;
  for (const auto& channel : site.channel()) {
    plants.push_back(make_plant(channel, rate_hz, ideal));
  }
  return std::make_unique<SimulatedPlants>(std::move(plants));
}

std::unique_ptr<PlantDriver> make_plant_driver(const config::Site& site, double rate_hz) {
  if (site.has_setup()) {
    // Built and tested (docs/setup-transformations.md), but no driver maps its commands and readings
    // through one yet: refused at the rig rather than silently ignored. (A simulated plant models the
    // interface DOFs themselves, so virtual time needs none.)
    throw ConfigError(
        fmt::format("site[{}].setup: no plant driver applies a setup transformation yet; expected no "
                    "setup at a site process (lay the actuators along the channels)",
                    site.name()));
  }
  // A driver to equipment is added here: one case per member of config::Driver's oneof
  // (docs/plant-drivers.md).
  switch (site.driver().kind_case()) {
    case config::Driver::kUdpBridge:
      return make_udp_bridge(site.driver().udp_bridge(), site, rate_hz);
    case config::Driver::KIND_NOT_SET:
      break;
  }
  return make_simulated_plants(site, rate_hz);
}

}  // namespace rths
