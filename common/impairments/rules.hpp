// The rule the loss models share: a probability.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "common/core/problems.hpp"

namespace rths::impairment_rules {

inline void expect_probability(const Checker& check, std::string_view field, double p, std::string_view what) {
  check.expect(p >= 0 && p <= 1, field, fmt::format("is {}, expected {} in [0, 1]", p, what));
}

}  // namespace rths::impairment_rules
