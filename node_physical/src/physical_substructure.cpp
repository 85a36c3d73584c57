#include "rths/node_physical/physical_substructure.hpp"

namespace rths {

void PhysicalSubstructure::step(std::span<const InterfaceMotion> targets, std::span<Measurement> measured,
                                double dt_s) {
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    Channel& ch = channels_[c];
    const InterfaceMotion command = ch.controller->command(targets[c], ch.last, dt_s);
    ch.last = ch.plant->step(command, dt_s);
    measured[c] = ch.last;
  }
}

std::unique_ptr<PhysicalSubstructure> make_physical_substructure(const config::Site& site) {
  std::vector<PhysicalSubstructure::Channel> channels;
  for (const auto& channel : site.channel()) {
    channels.push_back({std::make_unique<PassThroughController>(),
                        std::make_unique<IdealActuatorPlant>(make_model(channel.specimen())), Measurement{}});
  }
  return std::make_unique<PhysicalSubstructure>(std::move(channels));
}

}  // namespace rths
