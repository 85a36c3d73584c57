#include "node_physical/controllers/polynomial_extrapolation.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "node_physical/controllers/polynomial_weights.hpp"

namespace rths {

// The targets sit at s = 0, -1, ..., -m in units of dt (newest first) and the command is the
// polynomial through them at s = delay / dt. The weights depend on nothing but m and that s, so
// they are computed here once per degree m = 0 .. order (the lower degrees serve the first steps,
// while fewer than order + 1 targets exist).
PolynomialExtrapolationController::PolynomialExtrapolationController(double delay_s, int order, double dt_s)
    : delay_s_(delay_s), order_(order) {
  if (order < 0 || order > kMaxOrder) {  // the weight tables' size; the config's rules are in validate()
    throw std::invalid_argument(fmt::format("extrapolation order {}; expected 0..{}", order, kMaxOrder));
  }
  const double s = delay_s / dt_s;
  for (int m = 0; m <= order; ++m) {
    for (int k = 0; k <= m; ++k) {
      const auto basis = lagrange_basis<kMaxOrder + 1>(k, m + 1);
      value_[m][k] = polynomial_derivative(basis, m, 0, s);
      velocity_[m][k] = polynomial_derivative(basis, m, 1, s) / dt_s;
      acceleration_[m][k] = polynomial_derivative(basis, m, 2, s) / (dt_s * dt_s);
    }
  }
}

InterfaceMotion PolynomialExtrapolationController::command(const InterfaceMotion& target,
                                                           const Measurement& /*previous*/, double /*dt_s*/) {
  for (int j = order_; j > 0; --j) past_[j] = past_[j - 1];
  past_[0] = target.displacement_m;
  count_ = std::min(count_ + 1, order_ + 1);
  const int m = count_ - 1;
  InterfaceMotion out;
  for (int k = 0; k <= m; ++k) {
    out.displacement_m += value_[m][k] * past_[k];
    out.velocity_m_per_s += velocity_[m][k] * past_[k];
    out.acceleration_m_per_s2 += acceleration_[m][k] * past_[k];
  }
  return out;
}

void PolynomialExtrapolationController::report(results::ControllerReport& out) const {
  results::ExtrapolationController& r = *out.mutable_extrapolation();
  r.set_delay_s(delay_s_);
  r.set_order(static_cast<std::uint32_t>(order_));
}

namespace {

void validate(const config::PolynomialExtrapolation& config, const ComponentContext& /*context*/,
              const Checker& check) {
  check.expect(config.has_delay_s() && config.delay_s() >= 0, "delay_s",
               fmt::format("is {}, expected the delay to compensate (s, >= 0)", config.delay_s()));
  check.expect(config.order() >= 1 && config.order() <= PolynomialExtrapolationController::kMaxOrder, "order",
               fmt::format("is {}, expected a polynomial order 1..{}", config.order(),
                           PolynomialExtrapolationController::kMaxOrder));
}

std::unique_ptr<ActuatorController> make(const config::PolynomialExtrapolation& config,
                                         const ComponentContext& context) {
  return std::make_unique<PolynomialExtrapolationController>(config.delay_s(), static_cast<int>(config.order()),
                                                             1.0 / context.rate_hz);
}

[[maybe_unused]] const bool kPolynomialExtrapolationRegistered =
    register_controller<config::PolynomialExtrapolation>(validate, make);

}  // namespace
}  // namespace rths
