#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "common/metrics/metrics.hpp"
#include "experiment.pb.h"
#include "node_physical/controllers/actuator_controller.hpp"
#include "node_physical/plants/plant.hpp"
#include "node_physical/plants/site_plants.hpp"
#include "node_physical/site/interlock.hpp"
#include "results.pb.h"

namespace rths {

// The channels of one physical site: a controller per actuator channel and the site's plant driver
// (simulated plants or the laboratory's equipment). The physical node drives it from the network;
// the numerical node drives a local site's directly (seed 002 Case III's physical substructure 2),
// so both run the same code.
class PhysicalSubstructure {
 public:
  PhysicalSubstructure(std::vector<std::unique_ptr<ActuatorController>> controllers,
                       std::unique_ptr<PlantDriver> plants, Interlock interlock);

  // One step of every channel: wanted targets in, measurement out (both sized channels()), every
  // value through the interlock first. The controllers compute every channel's command from its
  // admitted target and the measurement of the step before; the commands are checked, then written
  // to the plants in one exchange, which returns what the sensors read at this step's tick
  // (hardware-true, PlantDriver). False when the interlock tripped or the driver failed: then
  // nothing new reached an actuator in this step (a breach of a target or a command), or what was
  // measured is out of bounds or missing; measured holds the last measurements, and the test must
  // stop (stopped(), stop_reason()).
  bool step(std::span<const InterfaceMotion> wanted, std::span<Measurement> measured, double dt_s);
  // Reaches the equipment and reads where the actuators are without moving them (PlantDriver::open);
  // the reading becomes the controllers' feedback and measured(). Throws DriverError.
  void open();
  // One step of a ramp outside the test (SafeMotion): the commands go straight to the plants (no
  // controller), each finite and inside its channel's stroke limit, and inside the equipment's own
  // limits (PlantDriver::check: a setup's actuator strokes). False when a command is not (nothing is
  // written) or the driver failed.
  bool move(std::span<const InterfaceMotion> commands, double dt_s);
  // After a stop ramp that brought the actuators to rest under the site's control (whatever stopped
  // the test): tells the equipment the test is over (PlantDriver::disarm). The caller does not call
  // it when the ramp failed, and it sends nothing once the driver failed: the equipment's own
  // watchdog then takes over. Empty when confirmed, else why not ("not sent: ...", "not confirmed: ...").
  std::string disarm();
  // The last measurement of every channel (a step's, a ramp's or open()'s).
  [[nodiscard]] std::span<const Measurement> measured() const { return last_; }
  // The targets the actuators were given in the last step: the wanted ones, rate-limited.
  [[nodiscard]] std::span<const InterfaceMotion> admitted() const { return admitted_; }
  // The controllers' commands of the last step (what was written to the plants).
  [[nodiscard]] std::span<const InterfaceMotion> commands() const { return commands_; }
  [[nodiscard]] const Interlock& interlock() const { return interlock_; }
  [[nodiscard]] const PlantDriver& plants() const { return *plants_; }
  [[nodiscard]] PlantDriver& plants() { return *plants_; }
  [[nodiscard]] std::size_t channels() const { return controllers_.size(); }
  // The test must stop: the interlock tripped or the plant driver failed.
  [[nodiscard]] bool stopped() const { return interlock_.tripped() || driver_failed_; }
  [[nodiscard]] bool driver_failed() const { return driver_failed_; }
  // Why stopped() (off the hot path): "interlock: ..." or "equipment: ...".
  [[nodiscard]] std::string stop_reason() const;
  // One entry per channel: its tracking (J1-J3; tracking holds one entry per channel, or none) and
  // what its controller and plant report. Off the hot path.
  [[nodiscard]] google::protobuf::RepeatedPtrField<results::Channel> report(
      std::span<const TrackingMetrics> tracking) const;
  // Logs every controller's warning (e.g. a frozen RLS adaptation) for the named site.
  void log_warnings(const std::string& site) const;

 private:
  std::vector<std::unique_ptr<ActuatorController>> controllers_;
  std::unique_ptr<PlantDriver> plants_;
  Interlock interlock_;
  std::vector<InterfaceMotion> admitted_;
  std::vector<InterfaceMotion> commands_;
  std::vector<Measurement> last_;   // the measurement of the step before: the controllers' feedback
  std::vector<Measurement> moved_;  // a ramp step's reading
  bool driver_failed_ = false;
};

// The interlock limits of a site's channels from the config (absent: 0, none).
std::vector<ChannelLimits> channel_limits(const config::Site& site);

// What drives a site's channels.
enum class Plants : std::uint8_t {
  kSimulated,  // the channels' plant models (virtual time, in-process sites, calibration)
  kIdeal,      // every specimen behind an ideal actuator with pass-through control and no interlock:
               // the monolithic reference's view, where the structure and the specimens are one model
  kEquipment,  // the site's driver { } when it names one (rths-physical), else the plant models
};

// The site's channels from the config: each specimen behind its actuator model (or the equipment)
// and controller.
std::unique_ptr<PhysicalSubstructure> make_physical_substructure(const config::Site& site, double rate_hz,
                                                                 Plants plants = Plants::kSimulated);

}  // namespace rths
