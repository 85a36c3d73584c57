#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "experiment.pb.h"
#include "results.pb.h"
#include "rths/common/metrics.hpp"
#include "rths/node_physical/actuator_controller.hpp"
#include "rths/node_physical/interlock.hpp"
#include "rths/node_physical/plant.hpp"

namespace rths {

// The channels of one physical site: a controller and a plant per actuator. The physical node
// drives it from the network; the numerical node drives a local site's directly (seed 002
// Case III's physical substructure 2), so both run the same code.
class PhysicalSubstructure {
 public:
  struct Channel {
    std::unique_ptr<ActuatorController> controller;
    std::unique_ptr<Plant> plant;
    Measurement last;
  };

  PhysicalSubstructure(std::vector<Channel> channels, Interlock interlock)
      : channels_(std::move(channels)), interlock_(std::move(interlock)), admitted_(channels_.size()) {}

  // One step of every channel: wanted targets in, measurement out (both sized channels()), every
  // value through the interlock first. False when the interlock tripped: then nothing new reached
  // an actuator in this step (a breach of a target or a command) or what was measured is out of
  // bounds; measured holds the last measurements, and the test must stop.
  bool step(std::span<const InterfaceMotion> wanted, std::span<Measurement> measured, double dt_s);
  // The targets the actuators were given in the last step: the wanted ones, rate-limited.
  [[nodiscard]] std::span<const InterfaceMotion> admitted() const { return admitted_; }
  [[nodiscard]] const Interlock& interlock() const { return interlock_; }
  [[nodiscard]] std::size_t channels() const { return channels_.size(); }
  // One entry per channel: its tracking (J1-J3; tracking holds one entry per channel, or none) and
  // what its controller and plant report. Off the hot path.
  [[nodiscard]] google::protobuf::RepeatedPtrField<results::Channel> report(
      std::span<const TrackingMetrics> tracking) const;
  // Logs every controller's warning (e.g. a frozen RLS adaptation) for the named site.
  void log_warnings(const std::string& site) const;

 private:
  std::vector<Channel> channels_;
  Interlock interlock_;
  std::vector<InterfaceMotion> admitted_;
};

// The interlock limits of a site's channels from the config (absent: 0, none).
std::vector<ChannelLimits> channel_limits(const config::Site& site);

// The site's channels from the config: each specimen behind its actuator model and controller.
// ideal: every specimen behind an ideal actuator with pass-through control and no interlock (the
// monolithic reference's view, where the structure and the specimens are one model).
std::unique_ptr<PhysicalSubstructure> make_physical_substructure(const config::Site& site, double rate_hz,
                                                                 bool ideal = false);

}  // namespace rths
