// Gaussian jitter (config NormalJitter): delay_s + N(0, sd_s^2), never below 0.
#include <algorithm>
#include <memory>

#include "common/core/component_registry.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

// Standard-normal quantile of 1 - kDelayTailProbability.
constexpr double kNormalTailZ = 4.753424308822899;

class NormalJitter final : public JitterModel {
 public:
  explicit NormalJitter(double sd_s) : sd_s_(sd_s) {}
  double draw_s(double delay_s, Rng& rng, bool /*main*/) override {
    return std::max(delay_s + sd_s_ * rng.normal(), 0.0);
  }
  [[nodiscard]] double max_delay_s(double delay_s) const override { return delay_s + kNormalTailZ * sd_s_; }

 private:
  double sd_s_;
};

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::NormalJitter& normal, const ComponentContext& /*context*/, const Checker& check) {
  check.expect_positive("sd_s", normal.has_sd_s(), normal.sd_s(), "a standard deviation (s)");
}

std::unique_ptr<JitterModel> make(const config::NormalJitter& normal, const ComponentContext& /*context*/) {
  return std::make_unique<NormalJitter>(normal.sd_s());
}

[[maybe_unused]] const bool kNormalJitterRegistered =
    register_component<config::NormalJitter, JitterModel>(validate, make);

}  // namespace
}  // namespace rths
