// The rules the delay and loss models share: a parameter that must be given and positive, and a
// probability.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "rths/common/problems.hpp"

namespace rths::impairment_rules {

// A parameter the model has no default for: given, and then > 0.
inline void expect_positive(const Checker& check, std::string_view field, bool given, double value,
                            std::string_view what) {
  if (check.expect(given, field, fmt::format("missing; expected {} > 0", what))) {
    check.expect(value > 0, field, fmt::format("is {}, expected {} > 0", value, what));
  }
}

inline void expect_probability(const Checker& check, std::string_view field, double p, std::string_view what) {
  check.expect(p >= 0 && p <= 1, field, fmt::format("is {}, expected {} in [0, 1]", p, what));
}

}  // namespace rths::impairment_rules
