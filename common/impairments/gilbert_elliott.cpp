// Bursty loss (config GilbertElliott): a two-state Markov chain stepped once per packet, each state
// with its own loss probability.
#include <fmt/format.h>

#include <memory>

#include "common/core/component_registry.hpp"
#include "common/impairments/rules.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

class GilbertElliottLoss final : public LossModel {
 public:
  explicit GilbertElliottLoss(const config::GilbertElliott& ge)
      : p_good_to_bad_(ge.p_good_to_bad()),
        p_bad_to_good_(ge.p_bad_to_good()),
        loss_in_good_(ge.loss_in_good()),
        loss_in_bad_(ge.loss_in_bad()) {}
  // The first packet's state, from the chain's long-run distribution.
  void start(Rng& rng) override {
    const double rate = p_good_to_bad_ + p_bad_to_good_;
    bad_ = rate > 0 && rng.uniform() < p_good_to_bad_ / rate;
  }
  // Lost with the probability of the current state, then one step of the chain.
  bool lost(Rng& rng) override {
    const bool lost = rng.uniform() < (bad_ ? loss_in_bad_ : loss_in_good_);
    const double u = rng.uniform();
    bad_ = bad_ ? u >= p_bad_to_good_ : u < p_good_to_bad_;
    return lost;
  }

 private:
  double p_good_to_bad_;
  double p_bad_to_good_;
  double loss_in_good_;
  double loss_in_bad_;
  bool bad_ = false;
};

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::GilbertElliott& ge, const ComponentContext& /*context*/, const Checker& check) {
  if (check.expect(ge.has_p_good_to_bad(), "p_good_to_bad",
                   "missing; expected the per-packet probability of going from good to bad, in [0, 1]")) {
    impairment_rules::expect_probability(check, "p_good_to_bad", ge.p_good_to_bad(),
                                         "a per-packet transition probability");
  }
  if (check.expect(ge.has_p_bad_to_good(), "p_bad_to_good",
                   "missing; expected the per-packet probability of going from bad to good, in (0, 1] (1 / the "
                   "mean time in the bad state, in packets)")) {
    check.expect(ge.p_bad_to_good() > 0 && ge.p_bad_to_good() <= 1, "p_bad_to_good",
                 fmt::format("is {}, expected a per-packet transition probability in (0, 1] (0 would stay in the "
                             "bad state forever)",
                             ge.p_bad_to_good()));
  }
  impairment_rules::expect_probability(check, "loss_in_good", ge.loss_in_good(), "a loss probability");
  impairment_rules::expect_probability(check, "loss_in_bad", ge.loss_in_bad(), "a loss probability");
}

std::unique_ptr<LossModel> make(const config::GilbertElliott& ge, const ComponentContext& /*context*/) {
  return std::make_unique<GilbertElliottLoss>(ge);
}

[[maybe_unused]] const bool kGilbertElliottRegistered =
    register_component<config::GilbertElliott, LossModel>(validate, make);

}  // namespace
}  // namespace rths
