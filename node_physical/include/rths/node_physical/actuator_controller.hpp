#pragma once

#include <string>

#include "results.pb.h"
#include "rths/node_physical/plant.hpp"

namespace rths {

// Local actuator controller of one channel (docs/architecture.md §3 physical step 2): turns the target interface
// motion into the actuator command, using the previous measurement.
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

// The target is the command: right for an ideal actuator.
class PassThroughController final : public ActuatorController {
 public:
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& /*previous*/, double /*dt_s*/) override {
    return target;
  }
  void report(results::ControllerReport& out) const override { out.mutable_pass_through(); }
};

}  // namespace rths
