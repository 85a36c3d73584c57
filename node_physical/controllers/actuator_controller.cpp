#include "node_physical/controllers/actuator_controller.hpp"

#include "node_physical/controllers/pass_through.hpp"

namespace rths {

std::unique_ptr<ActuatorController> make_controller(const config::Controller& controller, double rate_hz) {
  const ComponentContext context{.rate_hz = rate_hz};
  std::unique_ptr<ActuatorController> made =
      ComponentFactories<ActuatorController>::make_member(controller, "kind", context);
  return made != nullptr ? std::move(made) : std::make_unique<PassThroughController>();
}

}  // namespace rths
