#pragma once

#include <memory>

#include "experiment.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// What one channel of a remote site sent back, as the numerical node holds it between packets.
struct ChannelFeedback {
  double model_error_n = 0.0;   // Smith part 2: f_measured - f_pm(target)
  double force_n = 0.0;         // measured force
  double displacement_m = 0.0;  // measured actuator displacement
};

// Numerical side of one remote channel: turns the newest feedback and the current interface
// motion into the force estimate the integrator uses over the step (docs/architecture.md §3 numerical step 2).
class ForceEstimator {
 public:
  ForceEstimator() = default;
  ForceEstimator(const ForceEstimator&) = delete;
  ForceEstimator& operator=(const ForceEstimator&) = delete;
  ForceEstimator(ForceEstimator&&) = delete;
  ForceEstimator& operator=(ForceEstimator&&) = delete;
  virtual ~ForceEstimator() = default;

  // Called exactly once per step with the motion at t_k and the newest feedback held so far.
  virtual double estimate(const InterfaceMotion& motion, const ChannelFeedback& newest, double dt_s) = 0;
};

// Builds the numerical-side estimator for a compensation mode; `model` is the channel's
// prediction model (unused by NONE). assumed_delay_steps is used by CLASSIC_SMITH only.
std::unique_ptr<ForceEstimator> make_force_estimator(config::CompensationMode mode,
                                                     std::unique_ptr<PredictionModel> model, int assumed_delay_steps);

}  // namespace rths
