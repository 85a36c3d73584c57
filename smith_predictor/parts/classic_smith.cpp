#include "smith_predictor/parts/classic_smith.hpp"

#include <algorithm>
#include <stdexcept>

#include "smith_predictor/parts/modified_smith.hpp"

namespace rths {

ClassicSmithPredictor::ClassicSmithPredictor(std::unique_ptr<PredictionModel> model, int assumed_delay_steps)
    : model_(std::move(model)), history_(static_cast<std::size_t>(std::max(assumed_delay_steps, 0)) + 1, 0.0) {}

double ClassicSmithPredictor::estimate(const InterfaceMotion& motion, const ChannelFeedback& newest, double dt_s) {
  const double predicted = model_->step(motion, dt_s);
  // history_ holds the last assumed_delay_steps + 1 outputs; the oldest is the delayed one.
  history_[head_] = predicted;
  head_ = (head_ + 1) % history_.size();
  const double delayed = history_[head_];
  return predicted + newest.force_n - delayed;
}

std::unique_ptr<ForceEstimator> make_force_estimator(config::CompensationMode mode,
                                                     std::unique_ptr<PredictionModel> model, int assumed_delay_steps) {
  switch (mode) {
    case config::MODIFIED_SMITH:
      return std::make_unique<ModifiedSmithPart1>(std::move(model));
    case config::CLASSIC_SMITH:
      return std::make_unique<ClassicSmithPredictor>(std::move(model), assumed_delay_steps);
    case config::NONE:
      return std::make_unique<NoCompensation>();
  }
  throw std::invalid_argument("unknown compensation mode");
}

}  // namespace rths
