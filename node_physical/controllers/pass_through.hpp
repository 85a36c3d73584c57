#pragma once

#include "node_physical/controllers/actuator_controller.hpp"

namespace rths {

// The target is the command: right for an ideal actuator (config PassThrough, and no controller).
class PassThroughController final : public ActuatorController {
 public:
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& /*previous*/, double /*dt_s*/) override {
    return target;
  }
  void report(results::ControllerReport& out) const override { out.mutable_pass_through(); }
};

}  // namespace rths
