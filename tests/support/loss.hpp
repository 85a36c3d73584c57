// What the tests of packet loss share: the seed 002 spring case, and the loss of both legs as --set
// overrides, independent or in Gilbert-Elliott bursts.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/test_support.hpp"

namespace rths::test {

inline const std::string kSpring = example("seed002/spring.textproto").string();
inline constexpr int kMeanBurst = 5;  // packets: Gilbert-Elliott p_bad_to_good = 1/5

struct LossCase {
  const char* kind;  // "independent" or "bursty"
  double rate;
};

// The loss of both legs, as --set overrides: independent with probability `rate`, or a Gilbert chain
// (loss 1 in the bad state) with mean burst kMeanBurst and long-run rate `rate`:
// pi_bad = p_gb / (p_gb + p_bg) = rate.
inline std::vector<std::string> loss_overrides(const LossCase& c) {
  std::string loss;
  if (std::string(c.kind) == "independent") {
    loss = fmt::format("{{ probability: {} }}", c.rate);
  } else {
    const double p_bg = 1.0 / kMeanBurst;
    loss = fmt::format("{{ gilbert_elliott {{ p_good_to_bad: {:.17g} p_bad_to_good: {} }} }}",
                       c.rate * p_bg / (1 - c.rate), p_bg);
  }
  return {"site[0].link.forward.loss=" + loss, "site[0].link.backward.loss=" + loss,
          "site[0].link.backward.seed=7"};  // the legs draw different packets
}

}  // namespace rths::test
