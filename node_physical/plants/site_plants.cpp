#include "node_physical/plants/site_plants.hpp"

#include <limits>

#include "node_physical/plants/actuator_plant.hpp"
#include "node_physical/plants/setup_driver.hpp"
#include "node_physical/plants/two_actuator_frame_plant.hpp"
#include "smith_predictor/frame_model/frame_force_model.hpp"

namespace rths {

std::unique_ptr<SimulatedPlants> make_simulated_plants(const config::Site& site, double rate_hz, bool ideal) {
  std::vector<std::unique_ptr<Plant>> plants;
  for (const auto& channel : site.channel()) {
    plants.push_back(make_plant(channel, rate_hz, ideal));
  }
  return std::make_unique<SimulatedPlants>(std::move(plants));
}

namespace {

// The frame force model as the setup driver's force source, stepped at the site's rate: the reading
// at the start (open) is its first sample, taken as at rest, so its derivatives start there.
class FrameForces final : public InterfaceForceSource {
 public:
  FrameForces(const config::FrameForceModel& model, std::size_t channels, double rate_hz)
      : model_(model, channels), dt_s_(1.0 / rate_hz) {}
  [[nodiscard]] bool step(std::span<const double> interface_displacement_m, std::span<double> forces_n,
                          double /*dt_s*/) override {
    return model_.step(interface_displacement_m, forces_n, dt_s_);
  }

 private:
  FrameForceModel model_;
  double dt_s_;
};

// A driver of a setup's actuators behind the site's setup, with its actuator controller and force
// model when the site names them. Without stroke limits (a simulated site may go without; a driver
// needs them, the validator says) every stroke is allowed.
std::unique_ptr<PlantDriver> through_setup(const config::Site& site, double rate_hz,
                                           std::unique_ptr<PlantDriver> actuators) {
  const auto channels = static_cast<std::size_t>(site.channel_size());
  std::unique_ptr<SetupTransform> setup = make_setup_transform(site);
  std::vector<double> limits(site.setup().stroke_limit_m().begin(), site.setup().stroke_limit_m().end());
  if (limits.empty()) limits.assign(setup->actuators(), std::numeric_limits<double>::infinity());
  std::unique_ptr<SiteController> controller =
      site.has_actuator_controller() ? make_site_controller(site, rate_hz) : nullptr;
  std::unique_ptr<InterfaceForceSource> forces =
      site.has_force_model() ? std::make_unique<FrameForces>(site.force_model(), channels, rate_hz) : nullptr;
  return std::make_unique<SetupDriver>(std::move(setup), std::move(limits), std::move(actuators), std::move(controller),
                                       std::move(forces));
}

}  // namespace

std::unique_ptr<PlantDriver> make_site_plants(const config::Site& site, double rate_hz, bool ideal) {
  if (site.has_actuator_plant() && !ideal) {
    return through_setup(site, rate_hz, make_actuator_plant(site.actuator_plant(), rate_hz));
  }
  return make_simulated_plants(site, rate_hz, ideal);
}

std::unique_ptr<PlantDriver> make_plant_driver(const config::Site& site, double rate_hz) {
  // The driver to equipment the site names, by the registry (node_physical/drivers/): with a setup
  // transformation it drives the setup's actuators.
  std::unique_ptr<PlantDriver> equipment =
      ComponentFactories<PlantDriver>::make_member(site.driver(), "kind", ComponentContext{rate_hz, nullptr, &site});
  if (equipment == nullptr) {
    // Simulated channel plants model the interface DOFs themselves: a setup has nothing to map;
    // a multi-axial site's actuator plant sits behind it.
    return make_site_plants(site, rate_hz);
  }
  if (!site.has_setup()) {
    return equipment;
  }
  return through_setup(site, rate_hz, std::move(equipment));
}

}  // namespace rths
