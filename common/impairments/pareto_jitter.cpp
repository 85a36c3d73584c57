// Heavy-tailed jitter, a shifted Pareto (config ParetoJitter): delay_s + scale_s (U^(-1/shape) - 1).
#include <cmath>
#include <memory>

#include "common/core/component_registry.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

class ParetoJitter final : public JitterModel {
 public:
  ParetoJitter(double scale_s, double shape) : scale_s_(scale_s), shape_(shape) {}
  double draw_s(double delay_s, Rng& rng, bool /*main*/) override {
    // Inverse CDF of the Lomax distribution; 1 - U is in (0, 1].
    return delay_s + scale_s_ * (std::pow(1.0 - rng.uniform(), -1.0 / shape_) - 1.0);
  }
  [[nodiscard]] double max_delay_s(double delay_s) const override {
    // P(excess > x) = (scale / (scale + x))^shape = kDelayTailProbability.
    return delay_s + scale_s_ * (std::pow(kDelayTailProbability, -1.0 / shape_) - 1.0);
  }

 private:
  double scale_s_;
  double shape_;
};

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::ParetoJitter& pareto, const ComponentContext& /*context*/, const Checker& check) {
  check.expect_positive("scale_s", pareto.has_scale_s(), pareto.scale_s(), "a scale (s)");
  check.expect_positive("shape", pareto.has_shape(), pareto.shape(), "a tail index");
}

std::unique_ptr<JitterModel> make(const config::ParetoJitter& pareto, const ComponentContext& /*context*/) {
  return std::make_unique<ParetoJitter>(pareto.scale_s(), pareto.shape());
}

[[maybe_unused]] const bool kParetoJitterRegistered =
    register_component<config::ParetoJitter, JitterModel>(validate, make);

}  // namespace
}  // namespace rths
