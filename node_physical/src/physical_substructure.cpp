#include "rths/node_physical/physical_substructure.hpp"

#include <spdlog/spdlog.h>

#include "rths/common/json_writer.hpp"
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

std::string PhysicalSubstructure::report_json(std::span<const TrackingMetrics> tracking) const {
  JsonWriter json;
  json.begin_array();
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    const Channel& ch = channels_[c];
    json.begin_object();
    if (c < tracking.size()) {
      json.key("tracking").begin_object();
      json.field("j1_delay_ms", tracking[c].j1_delay_ms);
      json.field("j2_nrms_pct", tracking[c].j2_nrms_pct);
      json.field("j3_peak_pct", tracking[c].j3_peak_pct);
      json.end_object();
    }
    json.key("controller").begin_object();
    ch.controller->report(json);
    json.end_object();
    json.key("plant").begin_object();
    ch.plant->report(json);
    json.end_object();
    json.end_object();
  }
  json.end_array();
  return json.str();
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
