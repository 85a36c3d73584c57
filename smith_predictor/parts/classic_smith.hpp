#pragma once

#include <memory>
#include <vector>

#include "smith_predictor/interfaces/prediction_model.hpp"
#include "smith_predictor/parts/force_estimator.hpp"

namespace rths {

// Classic Smith predictor (seed 002 Eq. 1, Fig. 2a), for comparison: the site returns its measured
// force and the numerical side subtracts its own model output from an assumed round-trip delay
// ago: f_hat(t) = f_pm(t) + f_p(t - tau1 - tau2) - f_pm(t - tau1p - tau2p). Exact only when the
// assumed delay equals the real one and the delay is constant.
class ClassicSmithPredictor final : public ForceEstimator {
 public:
  ClassicSmithPredictor(std::unique_ptr<PredictionModel> model, int assumed_delay_steps);
  double estimate(const InterfaceMotion& motion, const ChannelFeedback& newest, double dt_s) override;

 private:
  std::unique_ptr<PredictionModel> model_;
  std::vector<double> history_;  // ring of past model outputs, sized once
  std::size_t head_ = 0;
};

// No compensation: the delayed measured force is fed back as it arrives.
class NoCompensation final : public ForceEstimator {
 public:
  double estimate(const InterfaceMotion& /*motion*/, const ChannelFeedback& newest, double /*dt_s*/) override {
    return newest.force_n;
  }
};

}  // namespace rths
