#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "node_physical/interfaces/interlock_trip.hpp"
#include "node_physical/plants/plant.hpp"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// The limits of one actuator channel; 0 means none (only a channel without an actuator may have none).
// The tracking limit is optional everywhere: |target - measured| above tracking_m in tracking_steps
// consecutive steps.
struct ChannelLimits {
  double stroke_m = 0.0;
  double velocity_m_per_s = 0.0;
  double force_n = 0.0;
  double tracking_m = 0.0;
  std::uint32_t tracking_steps = 1;
};

// The site's interlock, as a servo-controller's: checked in every step before anything reaches an
// actuator. Every target (a new command, a held or an extrapolated one) must be finite, inside the
// stroke and below the velocity limit; the target the actuator gets moves toward it at no more than
// the velocity limit (so after a gap the actuator ramps to the newest command instead of jumping);
// the controller's command must be finite (displacement, velocity and acceleration) and inside the
// stroke; every measurement must be finite, inside the stroke and below the force limit. The first
// breach trips it for good: the actuator keeps its last admitted target and the test stops.
// Allocation-free after construction.
class Interlock {
 public:
  Interlock(std::vector<ChannelLimits> limits, double dt_s);

  // Checks the wanted targets; on success writes what the actuators may be given into admitted
  // (the wanted targets, rate-limited) and returns true. On a breach trips, leaves admitted at the
  // last admitted targets and returns false.
  bool admit(std::span<const InterfaceMotion> wanted, std::span<InterfaceMotion> admitted);
  bool check_command(std::size_t channel, const InterfaceMotion& command);
  // The rule check_command applies (displacement, velocity and acceleration finite, inside the
  // stroke), without tripping: for commands outside the test's steps (the site's ramps), which a
  // caller refuses on its own.
  [[nodiscard]] bool command_inside(std::size_t channel, const InterfaceMotion& command) const;
  bool check_measurement(std::size_t channel, const Measurement& measured);
  // The tracking interlock of a channel with a tracking limit: trips when |target - measured| has been
  // above it in tracking_steps consecutive calls (one per step); true otherwise.
  bool check_tracking(std::size_t channel, double target_m, double measured_m);

  // Trips on a breach found outside the interlock (a plant driver's own limits); false, as every
  // check that trips. A trip already recorded stays the first.
  bool trip_on(const InterlockTrip& breach);
  [[nodiscard]] const InterlockTrip& trip() const { return trip_; }
  [[nodiscard]] bool tripped() const { return trip_.tripped(); }
  [[nodiscard]] const std::vector<ChannelLimits>& limits() const { return limits_; }

 private:
  // Records the first breach; false, as every check that trips.
  bool fail(InterlockTrip::What what, std::size_t channel, double value, double limit, const char* quantity = "");
  bool fail(InterlockTrip::What what, std::size_t channel, const NotFinite& part);

  std::vector<ChannelLimits> limits_;
  std::vector<InterfaceMotion> last_;           // last admitted targets (at rest before the first)
  std::vector<std::uint32_t> beyond_tracking_;  // consecutive steps above the tracking limit
  double dt_s_;
  InterlockTrip trip_;
};

}  // namespace rths
