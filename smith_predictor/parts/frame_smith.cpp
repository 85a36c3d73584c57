#include "smith_predictor/parts/frame_smith.hpp"

namespace rths {

FrameSmithPart1::FrameSmithPart1(const config::FrameForceModel& model, std::size_t channels)
    : model_(model, channels), displacement_(channels, 0.0), predicted_(channels, 0.0) {}

bool FrameSmithPart1::estimate(std::span<const InterfaceMotion> motion, std::span<const ChannelFeedback> newest,
                               std::span<double> force, double dt_s) {
  if (motion.size() != displacement_.size() || newest.size() != displacement_.size() ||
      force.size() != displacement_.size()) {
    return false;
  }
  for (std::size_t c = 0; c < motion.size(); ++c) {
    displacement_[c] = motion[c].displacement_m;
  }
  if (!model_.step(displacement_, predicted_, dt_s)) {
    return false;
  }
  for (std::size_t c = 0; c < force.size(); ++c) {
    force[c] = predicted_[c] + newest[c].model_error_n;
  }
  return true;
}

FrameSmithPart2::FrameSmithPart2(const config::FrameForceModel& model, std::size_t channels)
    : model_(model, channels), predicted_(channels, 0.0) {}

bool FrameSmithPart2::model_error(std::span<const double> displacement_m, std::span<const double> measured_force_n,
                                  std::span<double> error, double dt_s) {
  if (measured_force_n.size() != predicted_.size() || error.size() != predicted_.size() ||
      !model_.step(displacement_m, predicted_, dt_s)) {
    return false;
  }
  for (std::size_t c = 0; c < error.size(); ++c) {
    error[c] = measured_force_n[c] - predicted_[c];
  }
  return true;
}

}  // namespace rths
