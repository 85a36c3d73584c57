#include "node_physical/site/physical_substructure.hpp"

#include <algorithm>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/records/results.hpp"
#include "node_physical/controllers/pass_through.hpp"
#include "node_physical/plants/actuator_plant.hpp"

namespace rths {

PhysicalSubstructure::PhysicalSubstructure(std::vector<std::unique_ptr<ActuatorController>> controllers,
                                           std::unique_ptr<PlantDriver> plants, Interlock interlock)
    : controllers_(std::move(controllers)),
      plants_(std::move(plants)),
      interlock_(std::move(interlock)),
      admitted_(controllers_.size()),
      commands_(controllers_.size()),
      last_(controllers_.size()),
      moved_(controllers_.size()) {
  if (plants_->channels() != controllers_.size()) {
    throw std::logic_error("PhysicalSubstructure: the plant driver and the controllers disagree on the channels");
  }
}

bool PhysicalSubstructure::step(std::span<const InterfaceMotion> wanted, std::span<Measurement> measured, double dt_s) {
  if (stopped() || !interlock_.admit(wanted, admitted_)) {
    return false;
  }
  for (std::size_t c = 0; c < controllers_.size(); ++c) {
    commands_[c] = controllers_[c]->command(admitted_[c], last_[c], dt_s);
    if (!interlock_.check_command(c, commands_[c])) {
      return false;  // checked before the exchange: no channel moves on a bad command
    }
  }
  if (const InterlockTrip breach = plants_->check(commands_); breach.tripped()) {
    return interlock_.trip_on(breach);  // the equipment's own limits (a setup's actuator strokes)
  }
  if (!plants_->exchange(commands_, measured, dt_s)) {
    std::copy(last_.begin(), last_.end(), measured.begin());
    if (const InterlockTrip refused = plants_->refused(); refused.tripped()) {
      // A limit (nothing was sent), or the equipment applied another command than the one sent: the
      // interlock's to report, not a failed driver.
      return interlock_.trip_on(refused);
    }
    driver_failed_ = true;
    return false;
  }
  for (std::size_t c = 0; c < controllers_.size(); ++c) {
    if (!interlock_.check_measurement(c, measured[c]) ||
        !interlock_.check_tracking(c, admitted_[c].displacement_m, measured[c].displacement_m)) {
      return false;
    }
  }
  std::copy(measured.begin(), measured.end(), last_.begin());
  return true;
}

void PhysicalSubstructure::open() {
  plants_->open(last_);
}

bool PhysicalSubstructure::move(std::span<const InterfaceMotion> commands, double dt_s) {
  if (driver_failed_) {
    return false;
  }
  for (std::size_t c = 0; c < controllers_.size(); ++c) {
    if (!interlock_.command_inside(c, commands[c])) {
      return false;
    }
    commands_[c] = commands[c];
  }
  if (const InterlockTrip breach = plants_->check(commands_); breach.tripped()) {
    return interlock_.trip_on(breach);  // as in a step: the stop says which actuator and why
  }
  if (!plants_->move(commands_, moved_, dt_s)) {
    if (const InterlockTrip refused = plants_->refused(); refused.tripped()) {
      return interlock_.trip_on(refused);
    }
    driver_failed_ = true;
    return false;
  }
  std::copy(moved_.begin(), moved_.end(), last_.begin());
  return true;
}

std::string PhysicalSubstructure::disarm() {
  if (driver_failed_) {
    return "not sent: " + stop_reason();
  }
  return plants_->disarm();
}

std::string PhysicalSubstructure::stop_reason() const {
  if (interlock_.tripped()) {
    return "interlock: " + interlock_.trip().describe();
  }
  if (driver_failed_) {
    return "equipment: " + plants_->fault();
  }
  return {};
}

std::vector<ChannelLimits> channel_limits(const config::Site& site) {
  std::vector<ChannelLimits> limits;
  for (const auto& channel : site.channel()) {
    limits.push_back({channel.stroke_limit_m(), channel.velocity_limit_m_per_s(), channel.force_limit_n(),
                      channel.tracking_limit_m(), channel.tracking_limit_steps()});
  }
  return limits;
}

google::protobuf::RepeatedPtrField<results::Channel> PhysicalSubstructure::report(
    std::span<const TrackingMetrics> tracking) const {
  google::protobuf::RepeatedPtrField<results::Channel> channels;
  for (std::size_t c = 0; c < controllers_.size(); ++c) {
    results::Channel& out = *channels.Add();
    if (c < tracking.size()) {
      *out.mutable_tracking() = to_results(tracking[c]);
    }
    controllers_[c]->report(*out.mutable_controller());
    plants_->report(c, *out.mutable_plant());
  }
  return channels;
}

void PhysicalSubstructure::log_warnings(const std::string& site) const {
  for (std::size_t c = 0; c < controllers_.size(); ++c) {
    if (const std::string w = controllers_[c]->warning(); !w.empty()) {
      spdlog::warn("site {} channel {}: {}", site, c, w);
    }
  }
  if (const ActuatorSpace* space = plants().actuator_space(); space != nullptr) {
    if (const std::string w = space->actuator_controller_warning(); !w.empty()) spdlog::warn("site {}: {}", site, w);
  }
}

std::unique_ptr<PhysicalSubstructure> make_physical_substructure(const config::Site& site, double rate_hz,
                                                                 Plants plants) {
  const bool ideal = plants == Plants::kIdeal;
  std::vector<std::unique_ptr<ActuatorController>> controllers;
  for (const auto& channel : site.channel()) {
    controllers.push_back(ideal ? std::make_unique<PassThroughController>()
                                : make_controller(channel.controller(), rate_hz));
  }
  std::vector<ChannelLimits> limits = ideal ? std::vector<ChannelLimits>(controllers.size()) : channel_limits(site);
  std::unique_ptr<PlantDriver> driver =
      plants == Plants::kEquipment ? make_plant_driver(site, rate_hz) : make_site_plants(site, rate_hz, ideal);
  return std::make_unique<PhysicalSubstructure>(std::move(controllers), std::move(driver),
                                                Interlock(std::move(limits), 1.0 / rate_hz));
}

}  // namespace rths
