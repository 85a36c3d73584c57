#pragma once

#include <memory>

#include "common/core/random.hpp"
#include "experiment.pb.h"
#include "node_physical/interfaces/actuator_dynamics.hpp"
#include "node_physical/plants/plant.hpp"

namespace rths {

// Actuator + specimen + sensors behind one channel (config Actuator): limits on the command,
// the dynamics, the specimen under the actuator's motion, seeded noise on what the sensors report.
// Hardware-true timing (Plant::step): step j returns the sensors' reading of the state at t_j, then
// the dynamics advance over the step under command j. The discrete plant is thereby strictly proper
// like a real one, and its measured lag behind the command is the continuous actuator's plus the
// hold's half sample (seed 004 Eq. 7: 13.36 + 0.49 = 13.85 ms at 1024 Hz).
class ActuatorPlant final : public Plant {
 public:
  // The dynamics (node_physical/actuators/) and the specimen of an actuator that passed the config's
  // rules (its noise and limits the central validator's); both must be given (std::invalid_argument).
  ActuatorPlant(std::unique_ptr<ActuatorDynamics> dynamics, std::unique_ptr<PredictionModel> specimen,
                const config::Actuator& actuator);
  Measurement step(const InterfaceMotion& actuator_command, double dt_s) override;
  // The three counters, the limits and the noise used, in the member of the dynamics' kind.
  void report(results::PlantReport& out) const override;
  [[nodiscard]] const ActuatorCounters& counters() const { return counters_; }
  [[nodiscard]] const ActuatorDynamics& dynamics() const { return *dynamics_; }

 private:
  std::unique_ptr<ActuatorDynamics> dynamics_;
  std::unique_ptr<PredictionModel> specimen_;
  config::SensorNoise noise_;
  config::ActuatorLimits limits_;
  Rng displacement_noise_;
  Rng force_noise_;
  double command_m_ = 0.0;         // the last command after the limits
  double specimen_force_n_ = 0.0;  // the specimen's force at the end of the last step (true, noiseless)
  // The true (noiseless) state at the next step's tick: where the last step left the actuator and
  // the specimen; at rest before the first step.
  Measurement at_tick_;
  ActuatorCounters counters_;
};

// The plant of one channel: ActuatorPlant when the channel has an actuator, its dynamics built by the
// registry from the member of `dynamics` its config names, IdealActuatorPlant otherwise (or when
// ideal is true: the monolithic reference's view of the specimen).
std::unique_ptr<Plant> make_plant(const config::Channel& channel, double rate_hz, bool ideal = false);

}  // namespace rths
