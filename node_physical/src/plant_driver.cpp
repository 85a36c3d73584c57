#include "rths/node_physical/plant_driver.hpp"

#include "rths/node_physical/actuator_plant.hpp"

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
  // (docs/plant-drivers.md).
  return make_simulated_plants(site, rate_hz);
}

}  // namespace rths
