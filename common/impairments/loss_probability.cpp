// Independent (Bernoulli) loss (config Loss's probability, a number rather than a message: registered
// by its field): each packet is lost with the same probability.
#include <memory>

#include "common/core/component_registry.hpp"
#include "common/impairments/rules.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

class IndependentLoss final : public LossModel {
 public:
  explicit IndependentLoss(double probability) : probability_(probability) {}
  bool lost(Rng& rng) override { return probability_ > 0 && rng.uniform() < probability_; }

 private:
  double probability_;
};

// The checker stands at loss.probability itself.
void validate(const config::Loss& loss, const ComponentContext& /*context*/, const Checker& check) {
  impairment_rules::expect_probability(check, "", loss.probability(), "a loss probability");
}

std::unique_ptr<LossModel> make(const config::Loss& loss, const ComponentContext& /*context*/) {
  return std::make_unique<IndependentLoss>(loss.probability());
}

[[maybe_unused]] const bool kLossProbabilityRegistered =
    register_scalar_component<config::Loss, config::Loss::kProbabilityFieldNumber, LossModel>(validate, make);

}  // namespace
}  // namespace rths
