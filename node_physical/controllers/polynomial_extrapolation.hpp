#pragma once

#include <array>

#include "node_physical/controllers/actuator_controller.hpp"

namespace rths {

// Horiuchi et al. (1999) polynomial extrapolation of the target over a delay. The weights are fixed
// for the dt_s given here, the site's step, which every command() call is expected to repeat.
class PolynomialExtrapolationController final : public ActuatorController {
 public:
  // Beyond 5 the extrapolation amplifies the targets' rounding more than it removes delay.
  static constexpr int kMaxOrder = 5;
  PolynomialExtrapolationController(double delay_s, int order, double dt_s);
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& previous, double dt_s) override;
  void report(results::ControllerReport& out) const override;

 private:
  using Weights = std::array<double, kMaxOrder + 1>;
  double delay_s_;
  int order_;
  int count_ = 0;                             // targets seen, up to order + 1
  std::array<double, kMaxOrder + 1> past_{};  // targets, newest first
  // Per polynomial degree m (row m): Lagrange weights of the value, first and second derivative at
  // delay_s ahead of the newest of m + 1 equally spaced targets, derivatives already divided by dt^k.
  std::array<Weights, kMaxOrder + 1> value_{};
  std::array<Weights, kMaxOrder + 1> velocity_{};
  std::array<Weights, kMaxOrder + 1> acceleration_{};
};

}  // namespace rths
