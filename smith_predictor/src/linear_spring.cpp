#include "rths/smith_predictor/linear_spring.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {

LinearSpring::LinearSpring(double stiffness_n_per_m) : stiffness_n_per_m_(stiffness_n_per_m) {
  if (!std::isfinite(stiffness_n_per_m)) {
    throw std::invalid_argument(
        fmt::format("LinearSpring: stiffness_n_per_m must be finite, got {}", stiffness_n_per_m));
  }
}

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

}  // namespace rths
