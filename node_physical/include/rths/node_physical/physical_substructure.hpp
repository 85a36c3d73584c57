#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "rths/common/metrics.hpp"
#include "rths/node_physical/actuator_controller.hpp"
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

  explicit PhysicalSubstructure(std::vector<Channel> channels) : channels_(std::move(channels)) {}

  // One step of every channel: target in, measurement out (both sized channels()).
  void step(std::span<const InterfaceMotion> targets, std::span<Measurement> measured, double dt_s);
  [[nodiscard]] std::size_t channels() const { return channels_.size(); }
  // A JSON array, one object per channel: its tracking (J1-J3, one entry per channel) and what its
  // controller and plant report. Off the hot path.
  [[nodiscard]] std::string report_json(std::span<const TrackingMetrics> tracking) const;
  // Logs every controller's warning (e.g. a frozen RLS adaptation) for the named site.
  void log_warnings(const std::string& site) const;

 private:
  std::vector<Channel> channels_;
};

// The site's channels from the config: each specimen behind its actuator model and controller.
// ideal: every specimen behind an ideal actuator with pass-through control (the monolithic
// reference's view, where the structure and the specimens are one model).
std::unique_ptr<PhysicalSubstructure> make_physical_substructure(const config::Site& site, double rate_hz,
                                                                 bool ideal = false);

}  // namespace rths
