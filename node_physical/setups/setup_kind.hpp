// What the setup kinds of this folder share: the site's DOFs and an actuator's length and angle for
// their rules, and the plain arithmetic of their steps (docs/setup-transformations.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <span>
#include <string>
#include <string_view>

#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"

namespace rths::setup_kind {

// An angle typed as the bound itself (80 degrees, 10 degrees) must pass although its cosine is not
// exact.
inline constexpr double kAngleToleranceDeg = 1e-9;

inline double to_radians(double deg) {
  return deg * std::numbers::pi / 180.0;
}
inline double to_degrees(double rad) {
  return rad * 180.0 / std::numbers::pi;
}

// An angle for a message: to the microdegree, without the 7e-15 of asin(sin(180 deg)).
inline double tidy_deg(double deg) {
  return std::round(deg * 1e6) / 1e6 + 0.0;
}
// A coordinate for a message: to the nanometre, without the -0 and 1e-17 of cos(90 deg).
inline double tidy_m(double value_m) {
  return std::round(value_m * 1e9) / 1e9 + 0.0;
}

// The interface DOFs a setup drives: the channels of the site it is part of (none without one).
std::size_t site_dofs(const ComponentContext& context);
// "1 channel", "2 channels".
std::string channels_text(std::size_t dofs);
// A kind that drives `dofs` interface DOFs (`drives` says which) on a site of as many channels, else
// what it `expected`.
void expect_site_dofs(const Checker& check, const ComponentContext& context, std::size_t dofs, std::string_view drives,
                      std::string_view expected);

// An actuator's pin-to-pin length at zero stroke, given and positive; true when it holds.
bool expect_length(const Checker& check, std::string_view field, bool given, double length_m);
// An actuator's angle, given (`missing` says what was expected) and from -180 to 180 degrees; true
// when it holds.
bool expect_angle(const Checker& check, std::string_view field, bool given, double angle_deg, const char* missing);

inline bool all_finite(std::span<const double> values) {
  return std::ranges::all_of(values, [](double v) { return std::isfinite(v); });
}

// Copies a scratch result out when every entry is finite (an overflow of finite inputs included).
inline bool write_if_finite(std::span<const double> result, std::span<double> out) {
  if (!all_finite(result)) return false;
  std::copy(result.begin(), result.end(), out.begin());
  return true;
}

}  // namespace rths::setup_kind
