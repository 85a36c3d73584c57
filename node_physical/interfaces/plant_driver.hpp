#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "node_physical/interfaces/interlock_trip.hpp"
#include "node_physical/interfaces/measurement.hpp"
#include "results.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// A driver cannot reach or understand its equipment (no reply, a reply of the wrong size): the
// site refuses to start, or stops. what() names the address or the sizes.
class DriverError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Status bits a driver reports per channel in every step (recorded in the site's CSV as
// `status<c>`; 0: all well). Bits 0-15 are the driver's own (documented with the driver), bits
// 16-31 carry the equipment's status word where it sends one.
namespace driver_status {
inline constexpr std::uint32_t kReplyMissing = 1U << 0;  // no reply this step: the last measurement is held
inline constexpr std::uint32_t kReplyLate = 1U << 1;     // a stale reply (an earlier counter) was discarded
}  // namespace driver_status

// The actuators behind a setup transformation (SetupDriver): their number, and each one's last
// stroke target (from the setup), stroke command (what was sent, after an actuator controller) and
// reading. Recorded and evaluated per actuator, beside the site's channels.
class ActuatorSpace {
 public:
  ActuatorSpace() = default;
  ActuatorSpace(const ActuatorSpace&) = delete;
  ActuatorSpace& operator=(const ActuatorSpace&) = delete;
  ActuatorSpace(ActuatorSpace&&) = delete;
  ActuatorSpace& operator=(ActuatorSpace&&) = delete;
  virtual ~ActuatorSpace() = default;

  [[nodiscard]] virtual std::size_t actuators() const = 0;
  [[nodiscard]] virtual std::span<const InterfaceMotion> actuator_targets() const = 0;
  [[nodiscard]] virtual std::span<const InterfaceMotion> actuator_commands() const = 0;
  [[nodiscard]] virtual std::span<const Measurement> actuator_measured() const = 0;
  // What the run summaries say about actuator i's controller (nothing without one) and the warning
  // the operator must hear of (empty: none); after the run.
  virtual void report_actuator_controller(std::size_t actuator, results::ControllerReport& out) const = 0;
  [[nodiscard]] virtual std::string actuator_controller_warning() const = 0;
};

// Everything behind the actuator channels of one site, driven once per site step: the simulated
// plants (one per channel) or a driver to the laboratory's equipment (a real-time target over a
// UDP bridge, ...). The physical step around it -- interlock, controllers, Smith part 2, records --
// is the same code for both (OpenFresco's split of ExperimentalSetup and ExperimentalControl: the
// site decides what the actuators must do, the driver makes the equipment do it).
//
// Timing is hardware-true: exchange() writes the commands of step j, held over the step, and
// returns what the sensors read at step j's tick, before those commands act. A controller that
// needs feedback uses the measurement of the step before (what a controller on the site's computer
// has when it computes the command).
class PlantDriver {
 public:
  PlantDriver() = default;
  PlantDriver(const PlantDriver&) = delete;
  PlantDriver& operator=(const PlantDriver&) = delete;
  PlantDriver(PlantDriver&&) = delete;
  PlantDriver& operator=(PlantDriver&&) = delete;
  virtual ~PlantDriver() = default;

  [[nodiscard]] virtual std::size_t channels() const = 0;

  // Before the first step, off the step loop (may block for the driver's own timeouts): reach the
  // equipment and read where the actuators are, without moving them (a UDP bridge sends a read-only
  // probe). Throws DriverError when the equipment does not answer or answers wrongly.
  virtual void open(std::span<Measurement> measured) { (void)measured; }

  // The equipment's own limits on a step's commands, checked before exchange() and before a ramp's
  // move, so that nothing is sent when one is breached (the strokes a setup transformation computes
  // from the channels' commands, ...): the first breach (tripped() false: all inside). The site then
  // stops as on any interlock trip. Real-time: no allocation.
  [[nodiscard]] virtual InterlockTrip check(std::span<const InterfaceMotion> commands) {
    (void)commands;
    return {};
  }

  // One site step (real-time: no allocation, no locks, no blocking beyond the driver's bounded
  // reply wait). False when the driver cannot go on (fault() says why); measured then holds the
  // last measurements and the site must stop.
  virtual bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) = 0;

  // One step of a ramp outside the test (SafeMotion): as exchange(), but the commands go to the
  // actuators as they are, past any controller the driver holds (an actuator controller behind a setup).
  virtual bool move(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) {
    return exchange(commands, measured, dt_s);
  }

  // Why the last exchange() (or move()) returned false on a rule of the site's interlock rather than
  // a failure of the driver: a limit its own controller's commands breached (an actuator controller's
  // stroke beyond its limit; nothing was sent), or the equipment's reply says it holds another
  // command than the one just sent (a UDP bridge's APPLIED_COUNTER / APPLIED_COMMAND); tripped()
  // false otherwise. The site then stops as on any interlock trip, its stop ramp included.
  [[nodiscard]] virtual InterlockTrip refused() const { return {}; }

  // After the site's stop ramp brought the actuators to rest (the test is over, whatever ended it):
  // tells the equipment so, so that its watchdog does not trip on the silence that follows (a UDP
  // bridge sends its disarm datagram and waits for the answer). Off the step loop; may block for
  // the driver's own bounded wait. Empty when the equipment confirmed, or has nothing to disarm;
  // else one line, "not sent: ..." or "not confirmed: ...": expect the equipment's watchdog to trip.
  virtual std::string disarm() { return {}; }

  // The step's status bits of a channel (driver_status); 0 for simulated plants.
  [[nodiscard]] virtual std::uint32_t status(std::size_t channel) const {
    (void)channel;
    return 0;
  }
  // Why exchange() returned false; empty while all is well.
  [[nodiscard]] virtual std::string fault() const { return {}; }

  // What the run summaries say about the plant behind each channel (results::PlantReport); off the
  // hot path, after the run.
  virtual void report(std::size_t channel, results::PlantReport& out) const = 0;

  // The setup's actuators when the driver speaks them (a driver behind a setup transformation,
  // SetupDriver); nullptr when the channels are the actuators.
  [[nodiscard]] virtual const ActuatorSpace* actuator_space() const { return nullptr; }
};

// How many actuators a driver speaks beside its channels (0: the channels are the actuators).
inline std::size_t actuators_of(const PlantDriver& driver) {
  const ActuatorSpace* space = driver.actuator_space();
  return space == nullptr ? 0 : space->actuators();
}

}  // namespace rths
