#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// A move of every channel from one position to another along a raised cosine,
//   x(s) = from + (to - from) (1 - cos(pi s)) / 2,  s = (k + 1) / steps,
// so it starts and ends at rest (no velocity jump on a hydraulic rig) and its peak velocity is
// pi |to - from| / (2 T) at mid-time, T = steps dt. An optional hold of hold_steps at `from` comes
// first, an optional settle of settle_steps at `to` last (a reading is the state before the step's
// command acts, so the actuator is read at its target only after the move). Used for the site's start ramp (measured
// position -> initial position) and stop ramp (last command -> safe position). Allocation-free after construction.
class RampPlan {
 public:
  RampPlan() = default;
  RampPlan(std::span<const double> from_m, std::span<const double> to_m, std::int64_t move_steps,
           std::int64_t hold_steps, double dt_s, std::int64_t settle_steps = 0);

  // Steps in all: the hold, the move, the settle.
  [[nodiscard]] std::int64_t steps() const { return hold_steps_ + move_steps_ + settle_steps_; }
  [[nodiscard]] std::size_t channels() const { return from_.size(); }
  // The command of step k (0 <= k < steps()) for every channel; the last step commands `to` exactly.
  void commands(std::int64_t k, std::span<InterfaceMotion> out) const;
  // The largest velocity of channel c along the move (m/s).
  [[nodiscard]] double peak_velocity_m_per_s(std::size_t c) const;

 private:
  std::vector<double> from_;
  std::vector<double> to_;
  std::int64_t move_steps_ = 0;
  std::int64_t hold_steps_ = 0;
  std::int64_t settle_steps_ = 0;
  double dt_s_ = 0.0;
};

// The start ramp of a site: from the measured positions to the initial position (interface
// displacement 0) over safe_motion.start_ramp_s.
RampPlan start_ramp(const config::SafeMotion& motion, std::span<const double> measured_m, double rate_hz);
// The stop ramp of a site: hold the last command for stop_hold_s, then move to the safe positions
// with a peak velocity of stop_velocity_m_per_s (the channel with the longest way sets the time),
// then hold there for kStopSettleS, so the last reading is the actuator at rest at its safe position.
inline constexpr double kStopSettleS = 0.05;
RampPlan stop_ramp(const config::SafeMotion& motion, std::span<const double> last_command_m, double rate_hz);

// Why a site must not run its start ramp (empty: it may): an actuator measured beyond its channel's
// stroke limit, or a channel the ramp would move faster than its velocity limit.
std::string start_ramp_refusal(const config::Site& site, const RampPlan& plan, std::span<const double> from_m);

}  // namespace rths
