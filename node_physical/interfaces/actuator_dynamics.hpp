#pragma once

#include <cstdint>

#include "experiment.pb.h"
#include "results.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// How often each limit of an actuator acted (ActuatorPlant counts them).
struct ActuatorCounters {
  std::uint64_t stroke_saturated = 0;    // steps with the command clamped to the stroke
  std::uint64_t velocity_saturated = 0;  // steps with the command's rate clamped
  std::uint64_t force_saturated = 0;     // steps with the force at (or, linear: beyond) the limit
};

// Dynamics of one actuator: the command in, the motion it imposes on the specimen out. Each kind is a
// class of node_physical/actuators/, registered with its config message (a member of
// config::Actuator's oneof `dynamics`, docs/architecture.md §9); the actuator plant holds this
// interface only.
class ActuatorDynamics {
 public:
  ActuatorDynamics() = default;
  ActuatorDynamics(const ActuatorDynamics&) = delete;
  ActuatorDynamics& operator=(const ActuatorDynamics&) = delete;
  ActuatorDynamics(ActuatorDynamics&&) = delete;
  ActuatorDynamics& operator=(ActuatorDynamics&&) = delete;
  virtual ~ActuatorDynamics() = default;

  // Holds command_m over one step with the specimen force load_force_n acting on the piston (held
  // over the step; ignored by models without interaction) and returns the motion at the step's end.
  virtual InterfaceMotion step(double command_m, double load_force_n, double dt_s) = 0;
  // One step with the specimen in the loop; specimen_force_n is the specimen's force at the step's
  // start (in) and at its end (out). This default holds that force over the step, then steps the
  // specimen once with the motion at the step's end. A model with control-structure interaction
  // overrides it to step the specimen at its own substeps, the force held over one substep only:
  // once per step, the held force of a stiff specimen acts as negative damping (about k dt) on the
  // oil column's mode and destabilises it (a 5e6 N/m spring on the servo-hydraulic example does).
  virtual InterfaceMotion step_with_specimen(double command_m, PredictionModel& specimen, double& specimen_force_n,
                                             double dt_s) {
    const InterfaceMotion motion = step(command_m, specimen_force_n, dt_s);
    specimen_force_n = specimen.step(motion, dt_s);
    return motion;
  }
  virtual void reset() = 0;
  // Force the actuator develops at the end of the last step (servo-hydraulic: A p); NaN if the
  // model does not know it.
  [[nodiscard]] virtual double actuator_force_n() const = 0;
  // The plant's report in the run summaries: the member of results::PlantReport named as this
  // dynamics' member of config::Actuator, filled by report_actuator.
  virtual void report(const ActuatorCounters& counters, const config::ActuatorLimits& limits,
                      const config::SensorNoise& noise, results::PlantReport& out) const = 0;
};

// What every actuator's plant report holds (results::LinearActuatorPlant, ServoHydraulicPlant...):
// the counters, and the limits and noise as configured.
template <typename Report>
void report_actuator(Report& out, const ActuatorCounters& counters, const config::ActuatorLimits& limits,
                     const config::SensorNoise& noise) {
  out.set_stroke_saturated(counters.stroke_saturated);
  out.set_velocity_saturated(counters.velocity_saturated);
  out.set_force_saturated(counters.force_saturated);
  out.mutable_limits()->set_stroke_m(limits.stroke_m());
  out.mutable_limits()->set_velocity_m_per_s(limits.velocity_m_per_s());
  out.mutable_limits()->set_force_n(limits.force_n());
  out.mutable_noise()->set_displacement_sd_m(noise.displacement_sd_m());
  out.mutable_noise()->set_force_sd_n(noise.force_sd_n());
  out.mutable_noise()->set_seed(noise.seed());
}

}  // namespace rths
