#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "experiment.pb.h"
#include "smith_predictor/frame_model/frame_force_model.hpp"
#include "smith_predictor/interfaces/prediction_model.hpp"
#include "smith_predictor/parts/force_estimator.hpp"

namespace rths {

// The modified Smith predictor of a site whose channels are one specimen (a multi-axial site such as
// the maRTHS frame, whose translation and rotation share one node): its prediction model is a frame
// model of all channels at once (compensation.frame_prediction, a FrameForceModel), where a
// single-axis site has one PredictionModel per channel. Both parts hold the same model; only the
// model error of each channel crosses the network, as with ModifiedSmithPart1/2.
//
// The model's velocities and accelerations are backward differences of the displacements it is
// given (FrameForceModel), so each part must step exactly once per step, from the run's first step.
// Both run in the step: no allocation, no locks, no I/O.

// Numerical side: force_c = f_pm(motion)_c + e_c, e_c the newest model error of channel c.
class FrameSmithPart1 {
 public:
  // A model the validator accepted for this number of channels; throws std::invalid_argument otherwise.
  FrameSmithPart1(const config::FrameForceModel& model, std::size_t channels);

  // One step: false (force untouched) when the model refuses its input (not finite, wrong sizes).
  [[nodiscard]] bool estimate(std::span<const InterfaceMotion> motion, std::span<const ChannelFeedback> newest,
                              std::span<double> force, double dt_s);

 private:
  FrameForceModel model_;
  std::vector<double> displacement_;
  std::vector<double> predicted_;
};

// Physical side: e_c = f_measured_c - f_pm(target)_c, the model driven by the same target stream the
// actuators received (or by the measured displacement, compensation.part2_input).
class FrameSmithPart2 {
 public:
  FrameSmithPart2(const config::FrameForceModel& model, std::size_t channels);

  // One step: false (error untouched) when the model refuses its input.
  [[nodiscard]] bool model_error(std::span<const double> displacement_m, std::span<const double> measured_force_n,
                                 std::span<double> error, double dt_s);

 private:
  FrameForceModel model_;
  std::vector<double> predicted_;
};

}  // namespace rths
