#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "node_physical/controllers/actuator_controller.hpp"

namespace rths {

// Inverse of a low-order actuator model applied to the target (config ModelFeedforward).
class ModelFeedforwardController final : public ActuatorController {
 public:
  static constexpr int kMaxModelOrder = 3;
  ModelFeedforwardController(std::span<const double> denominator, double dt_s);
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& previous, double dt_s) override;
  void report(results::ControllerReport& out) const override;
  // The FIR the inverse reduces to: command = sum_j fir()[j] * target(i - j).
  [[nodiscard]] std::span<const double> fir() const { return {fir_.data(), static_cast<std::size_t>(order_) + 1}; }

 private:
  int order_;
  std::array<double, kMaxModelOrder + 1> denominator_{};  // a_n .. a0 as configured
  std::array<double, kMaxModelOrder + 1> fir_{};
  std::array<InterfaceMotion, kMaxModelOrder + 1> past_{};  // targets, newest first
  bool started_ = false;
};

}  // namespace rths
