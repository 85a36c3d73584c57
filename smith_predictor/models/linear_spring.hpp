#pragma once

#include <memory>
#include <string>

#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// Linear spring specimen, f = k x (seed 002 Eq. 11; config LinearSpring): the linear case of seed
// 002, where the prediction model's stiffness is scaled by ±10, 20, 30 % to study model error.
// Stateless, so step() does not depend on dt and reset() has nothing to do.
class LinearSpring final : public PredictionModel {
 public:
  // A stiffness the rules of linear_spring.cpp accepted (docs/architecture.md §9).
  explicit LinearSpring(double stiffness_n_per_m) : stiffness_n_per_m_(stiffness_n_per_m) {}

  double step(const InterfaceMotion& motion, double dt_s) override;
  void reset() override {}
  [[nodiscard]] std::unique_ptr<PredictionModel> clone() const override;
  [[nodiscard]] std::string describe() const override;
  // k at every frequency.
  [[nodiscard]] std::complex<double> dynamic_stiffness(double /*omega_rad_s*/) const override {
    return {stiffness_n_per_m_, 0.0};
  }

  [[nodiscard]] double stiffness_n_per_m() const { return stiffness_n_per_m_; }

 private:
  double stiffness_n_per_m_;
};

}  // namespace rths
