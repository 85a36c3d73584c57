#include "smith_predictor/models/linear_spring.hpp"

#include <fmt/format.h>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"

namespace rths {

double LinearSpring::step(const InterfaceMotion& motion, double /*dt_s*/) {
  return stiffness_n_per_m_ * motion.displacement_m;  // seed 002 Eq. 11
}

std::unique_ptr<PredictionModel> LinearSpring::clone() const {
  return std::make_unique<LinearSpring>(*this);
}

std::string LinearSpring::describe() const {
  // %.17g round-trips a double, so equal text means equal parameters (the handshake digest).
  // Adding 0.0 folds -0 into +0: they are the same stiffness and must give the same digest.
  return fmt::format("LinearSpring stiffness_n_per_m={:.17g}", stiffness_n_per_m_ + 0.0);
}

namespace {

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::LinearSpring& spring, const ComponentContext& /*context*/, const Checker& check) {
  check.expect(spring.has_stiffness_n_per_m(), "stiffness_n_per_m",
               "missing; expected the spring stiffness (N/m, >= 0)");
  check.expect(spring.stiffness_n_per_m() >= 0, "stiffness_n_per_m",
               fmt::format("is {}, expected a stiffness >= 0 N/m", spring.stiffness_n_per_m()));
}

std::unique_ptr<PredictionModel> make(const config::LinearSpring& spring, const ComponentContext& /*context*/) {
  return std::make_unique<LinearSpring>(spring.stiffness_n_per_m());
}

[[maybe_unused]] const bool kLinearSpringRegistered =
    register_component<config::LinearSpring, PredictionModel>(validate, make);

}  // namespace
}  // namespace rths
