#pragma once

#include <memory>
#include <string>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/interfaces/measurement.hpp"
#include "results.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// Local actuator controller of one channel (docs/architecture.md §3 physical step 2): turns the
// target interface motion into the actuator command, using the previous measurement. One class per
// file of this folder, each registered with its config message (register_controller).
//
// command() runs in the site's step: no allocation, no locks, no I/O; a held measurement (no reading
// came) is no evidence of what the command did.
class ActuatorController {
 public:
  ActuatorController() = default;
  ActuatorController(const ActuatorController&) = delete;
  ActuatorController& operator=(const ActuatorController&) = delete;
  ActuatorController(ActuatorController&&) = delete;
  ActuatorController& operator=(ActuatorController&&) = delete;
  virtual ~ActuatorController() = default;

  virtual InterfaceMotion command(const InterfaceMotion& target, const Measurement& previous, double dt_s) = 0;
  // What the run summaries say about this controller (its kind's member of the report: settings,
  // adaptation state...); called after the run, off the hot path.
  virtual void report(results::ControllerReport& out) const = 0;
  // What went wrong during the run that the operator must hear of (empty: nothing); after the run.
  [[nodiscard]] virtual std::string warning() const { return {}; }
};

// The controller a validated config describes: the one registered for the message its oneof holds
// (pass-through when it holds none).
std::unique_ptr<ActuatorController> make_controller(const config::Controller& controller, double rate_hz);

// Registers a controller: its rules (the only statement of them) and its factory, keyed by its config
// message. One statement in the controller's source file.
template <class Config>
bool register_controller(void (*validate)(const Config&, const ComponentContext&, const Checker&),
                         std::unique_ptr<ActuatorController> (*make)(const Config&, const ComponentContext&)) noexcept {
  return register_component<Config, ActuatorController>(validate, make);
}

}  // namespace rths
