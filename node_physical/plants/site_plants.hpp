#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "experiment.pb.h"
#include "node_physical/interfaces/plant_driver.hpp"
#include "node_physical/plants/plant.hpp"
#include "results.pb.h"

namespace rths {

// The simulated plants of a site, one per channel, stepped in turn.
class SimulatedPlants final : public PlantDriver {
 public:
  explicit SimulatedPlants(std::vector<std::unique_ptr<Plant>> plants) : plants_(std::move(plants)) {}
  [[nodiscard]] std::size_t channels() const override { return plants_.size(); }
  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) override {
    for (std::size_t c = 0; c < plants_.size(); ++c) {
      measured[c] = plants_[c]->step(commands[c], dt_s);
    }
    return true;
  }
  void report(std::size_t channel, results::PlantReport& out) const override { plants_[channel]->report(out); }
  [[nodiscard]] const Plant& plant(std::size_t channel) const { return *plants_[channel]; }

 private:
  std::vector<std::unique_ptr<Plant>> plants_;
};

// The simulated plants of a site's channels (ideal: every specimen behind an ideal actuator, the
// monolithic reference's view).
std::unique_ptr<SimulatedPlants> make_simulated_plants(const config::Site& site, double rate_hz, bool ideal = false);
// What a site simulates: a multi-axial site's actuator plant behind its setup (with its actuator
// controller and force model), else its channels' simulated plants.
std::unique_ptr<PlantDriver> make_site_plants(const config::Site& site, double rate_hz, bool ideal = false);
// The site's plant driver from its config: the driver to equipment the site names, else its
// channels' simulated plants. Only a site process (rths-physical) drives equipment: virtual time,
// in-process sites and calibration always simulate.
std::unique_ptr<PlantDriver> make_plant_driver(const config::Site& site, double rate_hz);

}  // namespace rths
