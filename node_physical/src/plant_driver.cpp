#include "rths/node_physical/plant_driver.hpp"

#include "rths/node_physical/actuator_plant.hpp"
#include "rths/node_physical/setup_driver.hpp"
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
  // A driver to equipment is added here: one case per member of config::Driver's oneof
  // (docs/plant-drivers.md). With a setup transformation it drives the setup's actuators.
  std::unique_ptr<PlantDriver> equipment;
  switch (site.driver().kind_case()) {
    case config::Driver::kUdpBridge:
      equipment = make_udp_bridge(site.driver().udp_bridge(), site, rate_hz);
      break;
    case config::Driver::KIND_NOT_SET:
      // Simulated plants model the interface DOFs themselves: a setup has nothing to map.
      return make_simulated_plants(site, rate_hz);
  }
  if (!site.has_setup()) {
    return equipment;
  }
  const auto channels = static_cast<std::size_t>(site.channel_size());
  std::vector<double> limits(site.setup().stroke_limit_m().begin(), site.setup().stroke_limit_m().end());
  return std::make_unique<SetupDriver>(make_setup_transform(site.setup(), channels), std::move(limits),
                                       std::move(equipment));
}

}  // namespace rths
