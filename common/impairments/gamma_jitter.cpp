// Gamma-distributed queueing delay (config GammaJitter): delay_s + Gamma(shape, scale_s).
#include <cmath>
#include <memory>

#include "common/core/component_registry.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

class GammaJitter final : public JitterModel {
 public:
  GammaJitter(double shape, double scale_s) : shape_(shape), scale_s_(scale_s) {}
  double draw_s(double delay_s, Rng& rng, bool /*main*/) override { return delay_s + scale_s_ * rng.gamma(shape_); }
  [[nodiscard]] double max_delay_s(double delay_s) const override {
    // Chernoff bound P(X >= y) <= exp(-(y - k) + k ln(y / k)) of X ~ Gamma(k, 1), solved for y > k.
    const double k = shape_;
    const double target = -std::log(kDelayTailProbability);
    const auto exponent = [k](double y) { return y - k - k * std::log(y / k); };
    double lo = k;
    double hi = k + 1.0;
    while (exponent(hi) < target) hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      (exponent(mid) < target ? lo : hi) = mid;
    }
    return delay_s + scale_s_ * hi;
  }

 private:
  double shape_;
  double scale_s_;
};

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::GammaJitter& gamma, const ComponentContext& /*context*/, const Checker& check) {
  check.expect_positive("shape", gamma.has_shape(), gamma.shape(), "a shape");
  check.expect_positive("scale_s", gamma.has_scale_s(), gamma.scale_s(), "a scale (s)");
}

std::unique_ptr<JitterModel> make(const config::GammaJitter& gamma, const ComponentContext& /*context*/) {
  return std::make_unique<GammaJitter>(gamma.shape(), gamma.scale_s());
}

[[maybe_unused]] const bool kGammaJitterRegistered =
    register_component<config::GammaJitter, JitterModel>(validate, make);

}  // namespace
}  // namespace rths
