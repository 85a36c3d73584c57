// A ground motion made from its parameters (config SyntheticMotion): Kanai-Tajimi filtered white
// noise under an envelope, seeded, so that a run needs no data file.
#include "common/ground_motions/synthetic_motion.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/core/component_registry.hpp"
#include "common/core/random.hpp"
#include "common/dynamics/linear_system.hpp"

namespace rths {
namespace {

// A motion starts at rest and has its mean removed (make_synthetic): from fewer samples it comes out
// zero.
constexpr double kMinSamples = 3;

// Jennings-Housner-Paulsen style intensity envelope: quadratic build-up, constant strong phase,
// exponential decay.
double envelope(double t_s, const config::SyntheticMotion& spec) {
  const double rise_s = spec.rise_s();
  const double strong_end_s = rise_s + spec.strong_s();
  if (t_s < rise_s) {
    const double r = t_s / rise_s;
    return r * r;
  }
  if (t_s <= strong_end_s) {
    return 1.0;
  }
  return std::exp(-spec.decay_per_s() * (t_s - strong_end_s));
}

// The samples of the motion: both the rules and the guard of memory bound this one number.
double sample_count(const config::SyntheticMotion& spec) {
  return std::round(spec.duration_s() * spec.sample_rate_hz()) + 1;
}

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::SyntheticMotion& synthetic, const ComponentContext& context, const Checker& check) {
  for (const auto& [name, value] :
       {std::pair{"duration_s", synthetic.duration_s()}, std::pair{"pga_m_per_s2", synthetic.pga_m_per_s2()},
        std::pair{"ground_frequency_hz", synthetic.ground_frequency_hz()},
        std::pair{"sample_rate_hz", synthetic.sample_rate_hz()},
        std::pair{"ground_damping", synthetic.ground_damping()}}) {
    check.expect(value > 0, name, fmt::format("is {}, expected > 0", value));
  }
  for (const auto& [name, value] :
       {std::pair{"rise_s", synthetic.rise_s()}, std::pair{"strong_s", synthetic.strong_s()},
        std::pair{"decay_per_s", synthetic.decay_per_s()}}) {
    check.expect(value >= 0, name, fmt::format("is {}, expected >= 0", value));
  }
  // A recorded motion's values are checked as its file is read; a synthetic one peaks at exactly
  // pga_m_per_s2 x the ground motion's scale.
  const double scale = ground_motion_scale(context);
  const double peak = synthetic.pga_m_per_s2() * std::abs(scale);
  (scale == 1.0 ? check : check.holder())
      .expect(peak <= kMaxGroundAccelerationMPerS2, scale == 1.0 ? "pga_m_per_s2" : "scale",
              fmt::format("{:g} m/s^2 (pga_m_per_s2) x {:g} = {:g} m/s^2 is beyond the {:g} m/s^2 ({:.1f} g) a "
                          "ground motion may reach; expected a peak in m/s^2 after scale (a unit mistake?)",
                          synthetic.pga_m_per_s2(), scale, peak, kMaxGroundAccelerationMPerS2,
                          kMaxGroundAccelerationMPerS2 / kStandardGravity));
  if (!(synthetic.duration_s() > 0 && synthetic.sample_rate_hz() > 0)) return;  // a count of nothing
  const double samples = sample_count(synthetic);
  check.expect(samples <= static_cast<double>(kMaxGroundMotionSamples), "duration_s",
               fmt::format("{:g} s at {:g} Hz is {:.0f} samples, more than a ground motion may hold ({}); expected "
                           "a shorter duration_s or a lower sample_rate_hz",
                           synthetic.duration_s(), synthetic.sample_rate_hz(), samples, kMaxGroundMotionSamples));
  check.expect(samples >= kMinSamples, "duration_s",
               fmt::format("{:g} s at {:g} Hz is {:.0f} sample(s); expected at least {:g} (the motion starts at "
                           "rest and its mean is removed): a longer duration_s or a higher sample_rate_hz",
                           synthetic.duration_s(), synthetic.sample_rate_hz(), samples, kMinSamples));
}

std::unique_ptr<GroundMotion> make(const config::SyntheticMotion& synthetic, const ComponentContext& context) {
  const double scale = ground_motion_scale(context);
  const GroundMotion unscaled = make_synthetic(synthetic);
  std::vector<double> samples = unscaled.samples();
  for (double& a : samples) {
    a *= scale;
  }
  return std::make_unique<GroundMotion>(std::move(samples), unscaled.dt_s(), unscaled.source(), unscaled.start_s());
}

[[maybe_unused]] const bool kSyntheticMotionRegistered =
    register_component<config::SyntheticMotion, GroundMotion>(validate, make);

}  // namespace

GroundMotion make_synthetic(const config::SyntheticMotion& spec) {
  // The one guard beside the rules above: no more samples than memory is allowed to hold.
  const double samples = sample_count(spec);
  if (!(samples >= 1 && samples <= static_cast<double>(kMaxGroundMotionSamples))) {
    throw std::invalid_argument(
        fmt::format("ground_motion.synthetic: {:g} s at {:g} Hz is {:.0f} samples; expected "
                    "1 to {}",
                    spec.duration_s(), spec.sample_rate_hz(), samples, kMaxGroundMotionSamples));
  }
  const double dt_s = 1.0 / spec.sample_rate_hz();
  const auto count = static_cast<std::size_t>(samples);
  const double omega_g = 2.0 * std::numbers::pi * spec.ground_frequency_hz();
  const double zeta_g = spec.ground_damping();

  // Kanai-Tajimi ground filter (Kanai 1957, Tajimi 1960): x'' + 2 zeta_g omega_g x' + omega_g^2 x = -w,
  // ground acceleration = -(2 zeta_g omega_g x' + omega_g^2 x). The noise is held over each sample
  // interval and the filter discretised exactly for that held input (zero-order hold), so the
  // spectrum does not depend on an integrator's step.
  ContinuousStateSpace filter;
  filter.a = StateMatrix::Zero(2, 2);
  filter.a(0, 1) = 1.0;
  filter.a(1, 0) = -omega_g * omega_g;
  filter.a(1, 1) = -2.0 * zeta_g * omega_g;
  filter.b = StateVector::Zero(2);
  filter.b(1) = -1.0;
  filter.c = OutputRow::Zero(2);
  const DiscreteStateSpace held = zero_order_hold(filter, dt_s);
  const Eigen::Matrix2d phi = held.a;
  const Eigen::Vector2d gamma = held.b;

  Rng noise(spec.seed());
  std::vector<double> acceleration(count);
  std::vector<double> shape(count);
  Eigen::Vector2d filter_state = Eigen::Vector2d::Zero();
  double sum_acceleration = 0.0;
  double sum_shape = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double t_s = static_cast<double>(i) * dt_s;
    shape[i] = envelope(t_s, spec);
    const double stationary = -(2.0 * zeta_g * omega_g * filter_state(1) + omega_g * omega_g * filter_state(0));
    acceleration[i] = shape[i] * stationary;
    sum_acceleration += acceleration[i];
    sum_shape += shape[i];
    filter_state = (phi * filter_state + gamma * noise.normal()).eval();
  }
  // Remove the mean (no net velocity change over the record) in the shape of the envelope rather
  // than as a constant, so the motion still starts from exactly zero and fades out with it.
  if (sum_shape > 0.0) {
    const double offset = sum_acceleration / sum_shape;
    for (std::size_t i = 0; i < count; ++i) {
      acceleration[i] -= offset * shape[i];
    }
  }
  double peak = 0.0;
  for (const double a : acceleration) {
    peak = std::isnan(a) || std::isnan(peak) ? std::numeric_limits<double>::quiet_NaN() : std::max(peak, std::abs(a));
  }
  if (!(peak > 0.0)) {
    throw std::invalid_argument("ground_motion.synthetic: the envelope is zero over the whole record");
  }
  const double gain = spec.pga_m_per_s2() / peak;
  for (double& a : acceleration) {
    a *= gain;
  }
  return {std::move(acceleration), dt_s, "synthetic Kanai-Tajimi seed " + std::to_string(spec.seed())};
}

}  // namespace rths
