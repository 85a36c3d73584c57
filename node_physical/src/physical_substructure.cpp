#include "rths/node_physical/physical_substructure.hpp"

#include <spdlog/spdlog.h>

#include "rths/common/results.hpp"
#include "rths/node_physical/actuator_plant.hpp"
#include "rths/node_physical/controllers.hpp"

namespace rths {

bool PhysicalSubstructure::step(std::span<const InterfaceMotion> wanted, std::span<Measurement> measured, double dt_s) {
  if (!interlock_.admit(wanted, admitted_)) {
    return false;
  }
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    Channel& ch = channels_[c];
    const InterfaceMotion command = ch.controller->command(admitted_[c], ch.last, dt_s);
    if (!interlock_.check_command(c, command)) {
      return false;  // the channels stepped before this one moved; the test stops either way
    }
    ch.last = ch.plant->step(command, dt_s);
    measured[c] = ch.last;
    if (!interlock_.check_measurement(c, ch.last)) {
      return false;
    }
  }
  return true;
}

std::vector<ChannelLimits> channel_limits(const config::Site& site) {
  std::vector<ChannelLimits> limits;
  for (const auto& channel : site.channel()) {
    limits.push_back({channel.stroke_limit_m(), channel.velocity_limit_m_per_s(), channel.force_limit_n()});
  }
  return limits;
}

google::protobuf::RepeatedPtrField<results::Channel> PhysicalSubstructure::report(
    std::span<const TrackingMetrics> tracking) const {
  google::protobuf::RepeatedPtrField<results::Channel> channels;
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    results::Channel& out = *channels.Add();
    if (c < tracking.size()) {
      *out.mutable_tracking() = to_results(tracking[c]);
    }
    channels_[c].controller->report(*out.mutable_controller());
    channels_[c].plant->report(*out.mutable_plant());
  }
  return channels;
}

void PhysicalSubstructure::log_warnings(const std::string& site) const {
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    if (const std::string w = channels_[c].controller->warning(); !w.empty()) {
      spdlog::warn("site {} channel {}: {}", site, c, w);
    }
  }
}

std::unique_ptr<PhysicalSubstructure> make_physical_substructure(const config::Site& site, double rate_hz, bool ideal) {
  std::vector<PhysicalSubstructure::Channel> channels;
  for (const auto& channel : site.channel()) {
    channels.push_back(
        {ideal ? std::make_unique<PassThroughController>() : make_controller(channel.controller(), rate_hz),
         make_plant(channel, rate_hz, ideal), Measurement{}});
  }
  std::vector<ChannelLimits> limits = ideal ? std::vector<ChannelLimits>(channels.size()) : channel_limits(site);
  return std::make_unique<PhysicalSubstructure>(std::move(channels), Interlock(std::move(limits), 1.0 / rate_hz));
}

}  // namespace rths
