#include "node_physical/controllers/pass_through.hpp"

namespace rths {
namespace {

void validate(const config::PassThrough& /*config*/, const ComponentContext& /*context*/, const Checker& /*check*/) {
}  // no settings, no rules

std::unique_ptr<ActuatorController> make(const config::PassThrough& /*config*/, const ComponentContext& /*context*/) {
  return std::make_unique<PassThroughController>();
}

[[maybe_unused]] const bool kPassThroughRegistered = register_controller<config::PassThrough>(validate, make);

}  // namespace
}  // namespace rths
