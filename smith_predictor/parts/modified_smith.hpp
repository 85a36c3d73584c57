#pragma once

#include <memory>

#include "smith_predictor/interfaces/prediction_model.hpp"
#include "smith_predictor/parts/force_estimator.hpp"

namespace rths {

// Modified Smith predictor, part 1 (numerical side; seed 002 Eq. 5, Fig. 2b):
// f_hat(t) = f_pm(t) + e(t - tau1 - tau2). The local model runs on the current interface motion;
// the error e is whatever the site measured last, held until a newer packet arrives. The network
// delay never appears: when the model is exact, e is zero and so is its delay.
class ModifiedSmithPart1 final : public ForceEstimator {
 public:
  explicit ModifiedSmithPart1(std::unique_ptr<PredictionModel> model) : model_(std::move(model)) {}
  double estimate(const InterfaceMotion& motion, const ChannelFeedback& newest, double dt_s) override {
    return model_->step(motion, dt_s) + newest.model_error_n;
  }

 private:
  std::unique_ptr<PredictionModel> model_;
};

// Modified Smith predictor, part 2 (physical side): the same model driven by the same command
// stream the specimen received, so e = f_measured - f_pm(target) is the model error alone.
class ModifiedSmithPart2 {
 public:
  explicit ModifiedSmithPart2(std::unique_ptr<PredictionModel> model) : model_(std::move(model)) {}
  double model_error(const InterfaceMotion& target, double measured_force_n, double dt_s) {
    return measured_force_n - model_->step(target, dt_s);
  }
  [[nodiscard]] const PredictionModel& model() const { return *model_; }

 private:
  std::unique_ptr<PredictionModel> model_;
};

}  // namespace rths
