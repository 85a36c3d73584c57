// The zero-order hold of common/dynamics/linear_system.hpp (Eigen's matrix exponential) against the closed
// form of a damped oscillator: the discretisation the Kanai-Tajimi ground filter and the actuator
// plants step with.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "common/dynamics/linear_system.hpp"

namespace rths::test_linear_system {
namespace {

// x'' + 2 zeta omega x' + omega^2 x = -u, state (x, x'), input held over dt: with omega_d =
// omega sqrt(1 - zeta^2) and e = exp(-zeta omega dt), c = cos(omega_d dt), s = sin(omega_d dt),
//   Ad = e [[c + zeta omega / omega_d s, s / omega_d], [-omega^2 / omega_d s, c - zeta omega / omega_d s]]
// and Bd = -(x, x') of the unit step response at dt:
//   x = (1 - e (c + zeta omega / omega_d s)) / omega^2,  x' = e s / omega_d.
void expect_closed_form(double omega, double zeta, double dt) {
  ContinuousStateSpace oscillator;
  oscillator.a.resize(2, 2);
  oscillator.a << 0.0, 1.0, -omega * omega, -2.0 * zeta * omega;
  oscillator.b.resize(2);
  oscillator.b << 0.0, -1.0;
  oscillator.c.resize(2);
  oscillator.c << 1.0, 0.0;
  const DiscreteStateSpace held = zero_order_hold(oscillator, dt);

  const double wd = omega * std::sqrt(1.0 - zeta * zeta);
  const double e = std::exp(-zeta * omega * dt);
  const double c = std::cos(wd * dt);
  const double s = std::sin(wd * dt);
  const double r = zeta * omega / wd;
  const double ad[2][2] = {{e * (c + r * s), e * s / wd}, {-e * omega * omega / wd * s, e * (c - r * s)}};
  const double bd[2] = {-(1.0 - e * (c + r * s)) / (omega * omega), -e * s / wd};
  // Relative to each matrix's largest entry: the exponential is accurate to rounding of that scale.
  const double a_scale = std::max({std::abs(ad[0][0]), std::abs(ad[0][1]), std::abs(ad[1][0]), std::abs(ad[1][1])});
  const double b_scale = std::max(std::abs(bd[0]), std::abs(bd[1]));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_NEAR(held.a(i, j), ad[i][j], 1e-13 * a_scale) << "Ad(" << i << "," << j << ") at dt " << dt;
    }
    EXPECT_NEAR(held.b(i), bd[i], 1e-13 * b_scale) << "Bd(" << i << ") at dt " << dt;
  }
}

TEST(LinearSystem, ZeroOrderHoldOfADampedOscillatorIsTheClosedForm) {
  const double omega = 2.0 * std::numbers::pi * 2.5;  // the Kanai-Tajimi defaults: 2.5 Hz, 0.6
  expect_closed_form(omega, 0.6, 0.01);               // 100 Hz, the synthetic motion's rate
  expect_closed_form(omega, 0.3, 1.0 / 1024.0);
  expect_closed_form(omega, 0.05, 0.5);  // several periods in one step: scaling and squaring at work
}

}  // namespace
}  // namespace rths::test_linear_system
