#include "node_physical/plants/actuator_plant.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/core/component_registry.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths {

namespace {

// The force-noise stream's seed: the displacement stream uses the noise seed itself, so adding
// force noise never changes the displacement noise of a run (Rng's splitmix64 seeding decorrelates
// the two streams).
constexpr std::uint64_t kForceStream = 0xd1b54a32d192ed03ULL;

// A clamped pressure gives |A p| = limit to the rounding of A (limit / A).
constexpr double kLimitTolerance = 1e-9;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ActuatorPlant

ActuatorPlant::ActuatorPlant(std::unique_ptr<ActuatorDynamics> dynamics, std::unique_ptr<PredictionModel> specimen,
                             const config::Actuator& actuator)
    : dynamics_(std::move(dynamics)),
      specimen_(std::move(specimen)),
      noise_(actuator.noise()),
      limits_(actuator.limits()),
      displacement_noise_(noise_.seed()),
      force_noise_(noise_.seed() ^ kForceStream) {
  require(dynamics_ != nullptr && specimen_ != nullptr, "ActuatorPlant: needs actuator dynamics and a specimen");
}

Measurement ActuatorPlant::step(const InterfaceMotion& actuator_command, double dt_s) {
  // The sensors read at the tick, before this step's command acts (Plant::step): a reading taken
  // after the step would report the command's effect one step before any sensor could see it.
  Measurement measured = at_tick_;
  if (noise_.displacement_sd_m() > 0.0)
    measured.displacement_m += noise_.displacement_sd_m() * displacement_noise_.normal();
  if (noise_.force_sd_n() > 0.0) measured.force_n += noise_.force_sd_n() * force_noise_.normal();

  // Limits on the command: its rate first, then the stroke (a clamped command is what the servo
  // loop sees, and the next step's rate limit starts from it).
  double command = actuator_command.displacement_m;
  const double max_change = limits_.velocity_m_per_s() * dt_s;
  if (limits_.velocity_m_per_s() > 0.0 && std::abs(command - command_m_) > max_change) {
    command = command_m_ + std::copysign(max_change, command - command_m_);
    ++counters_.velocity_saturated;
  }
  if (limits_.stroke_m() > 0.0 && std::abs(command) > limits_.stroke_m()) {
    command = std::copysign(limits_.stroke_m(), command);
    ++counters_.stroke_saturated;
  }
  command_m_ = command;

  // The actuator moves under the specimen's force, the specimen follows the actuator's true motion
  // (noise is only in what the sensors report): once per step, the previous step's force held, or
  // at the substeps of a model with control-structure interaction.
  const InterfaceMotion motion = dynamics_->step_with_specimen(command, *specimen_, specimen_force_n_, dt_s);
  const double force = specimen_force_n_;
  at_tick_ = {motion.displacement_m, motion.velocity_m_per_s, force};

  // Counted for the step in which the force reached the limit (the next step's reading shows it).
  if (limits_.force_n() > 0.0) {
    const double actuator_force = dynamics_->actuator_force_n();
    // Servo-hydraulic: a clamped pressure puts the force at the limit; linear: nothing caps the
    // force, a step beyond the limit is counted.
    const bool saturated = std::isnan(actuator_force)
                               ? std::abs(force) > limits_.force_n()
                               : std::abs(actuator_force) >= limits_.force_n() * (1.0 - kLimitTolerance);
    if (saturated) ++counters_.force_saturated;
  }
  return measured;
}

void ActuatorPlant::report(results::PlantReport& out) const {
  dynamics_->report(counters_, limits_, noise_, out);
}

// ---------------------------------------------------------------------------------------------
// Building plants from the config

std::unique_ptr<Plant> make_plant(const config::Channel& channel, double rate_hz, bool ideal) {
  if (ideal || !channel.has_actuator()) return std::make_unique<IdealActuatorPlant>(make_model(channel.specimen()));
  require(rate_hz > 0.0 && std::isfinite(rate_hz),
          fmt::format("make_plant: rate_hz must be positive, got {}", rate_hz));
  const config::Actuator& actuator = channel.actuator();
  std::unique_ptr<ActuatorDynamics> dynamics = ComponentFactories<ActuatorDynamics>::make_member(
      actuator, "dynamics", ComponentContext{.rate_hz = rate_hz, .channel = &channel});
  if (dynamics == nullptr) {
    throw std::invalid_argument(fmt::format("actuator: no dynamics given (expected {})",
                                            registry::member_names(*config::Actuator::descriptor(), "dynamics")));
  }
  return std::make_unique<ActuatorPlant>(std::move(dynamics), make_model(channel.specimen()), actuator);
}

}  // namespace rths
