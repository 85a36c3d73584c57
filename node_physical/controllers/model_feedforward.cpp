#include "node_physical/controllers/model_feedforward.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "node_physical/controllers/iir_filter.hpp"

namespace rths {
// Inverse of G(s) = a0 / (a_n s^n + ... + a0): x_cmd = sum_i a_i D^i x_t / a0. With D^i the i-th
// backward difference over dt^i this is an FIR filter of the last n + 1 targets, so the realisation
// is stable whatever the model's zeros and poles (an exact inverse of a strictly proper G would be
// improper). The price is that a backward difference is centred half a step back: the i-th
// difference estimates the i-th derivative at t - i dt / 2, so each derivative term comes i dt / 2
// late and the inverse holds only to O(dt). For a first-order model the rate term x' / a0 is dt / 2
// late, an error of dt |x''| / (2 a0), small beside the lag 1 / a0 it removes.
ModelFeedforwardController::ModelFeedforwardController(std::span<const double> denominator, double dt_s)
    : order_(static_cast<int>(denominator.size()) - 1) {
  if (denominator.size() < 2 || order_ > kMaxModelOrder) {  // the arrays' size; the rules are in validate()
    throw std::invalid_argument(fmt::format("feedforward model with {} denominator coefficients; expected 2..{}",
                                            denominator.size(), kMaxModelOrder + 1));
  }
  const double a0 = denominator.back();
  std::copy(denominator.begin(), denominator.end(), denominator_.begin());
  for (int i = 0; i <= order_; ++i) {
    const double a_i = denominator[order_ - i];  // coefficient of s^i
    const double scale = a_i / (std::pow(dt_s, i) * a0);
    for (int j = 0; j <= i; ++j) fir_[j] += scale * ((j % 2 == 0) ? 1.0 : -1.0) * binomial(i, j);
  }
}

// The FIR is linear and time invariant, so the command's velocity and acceleration are the same
// FIR applied to the target's.
InterfaceMotion ModelFeedforwardController::command(const InterfaceMotion& target, const Measurement& /*previous*/,
                                                    double /*dt_s*/) {
  if (!started_) {
    past_.fill(target);  // at rest at the first target before the run
    started_ = true;
  }
  for (int j = order_; j > 0; --j) past_[j] = past_[j - 1];
  past_[0] = target;
  InterfaceMotion out;
  for (int j = 0; j <= order_; ++j) {
    out.displacement_m += fir_[j] * past_[j].displacement_m;
    out.velocity_m_per_s += fir_[j] * past_[j].velocity_m_per_s;
    out.acceleration_m_per_s2 += fir_[j] * past_[j].acceleration_m_per_s2;
  }
  return out;
}

void ModelFeedforwardController::report(results::ControllerReport& out) const {
  results::FeedforwardController& r = *out.mutable_feedforward();
  for (int j = 0; j <= order_; ++j) r.add_denominator(denominator_[j]);
}

namespace {

void validate(const config::ModelFeedforward& config, const ComponentContext& /*context*/, const Checker& check) {
  const int size = config.denominator_size();
  check.require(
      size >= 2 && size <= ModelFeedforwardController::kMaxModelOrder + 1, "denominator",
      fmt::format("has {} coefficients, expected 2..{} (a model of order 1..{}, highest power first)", size,
                  ModelFeedforwardController::kMaxModelOrder + 1, ModelFeedforwardController::kMaxModelOrder));
  check.expect(config.denominator(size - 1) != 0, "denominator", "ends in 0; expected a0 != 0 (static gain)");
}

std::unique_ptr<ActuatorController> make(const config::ModelFeedforward& config, const ComponentContext& context) {
  const auto& denominator = config.denominator();
  return std::make_unique<ModelFeedforwardController>(
      std::span<const double>(denominator.data(), static_cast<std::size_t>(denominator.size())), 1.0 / context.rate_hz);
}

[[maybe_unused]] const bool kModelFeedforwardRegistered = register_controller<config::ModelFeedforward>(validate, make);

}  // namespace
}  // namespace rths
