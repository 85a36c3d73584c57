#pragma once

#include <memory>

#include "node_physical/interfaces/measurement.hpp"
#include "results.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// Whatever sits behind one actuator channel: actuator dynamics, the specimen, the sensors. A
// virtual plant in software now; hardware adapters implement the same interface later.
class Plant {
 public:
  Plant() = default;
  Plant(const Plant&) = delete;
  Plant& operator=(const Plant&) = delete;
  Plant(Plant&&) = delete;
  Plant& operator=(Plant&&) = delete;
  virtual ~Plant() = default;

  // One step [t_j, t_j + dt) with hardware-true timing (as PlantDriver::exchange): returns what the
  // sensors read at the step's tick t_j -- the state the earlier steps left, before this command
  // acts -- then moves the plant over the step with the command held, so that the next step's
  // reading is the first to show it. A controller that needs feedback uses the measurement of the
  // step before (what a controller on the site's computer has when it computes the command).
  // IdealActuatorPlant is the one exception (see there).
  virtual Measurement step(const InterfaceMotion& actuator_command, double dt_s) = 0;
  // What the run summaries say about this plant (its kind's member of the report: limit counters,
  // noise...); called after the run, off the hot path.
  virtual void report(results::PlantReport& out) const = 0;
};

// An ideal actuator: the specimen sees the command exactly, sensors are noiseless (the actuator
// models with dynamics, noise and limits are in actuator_plant.hpp). Not hardware-true: a step
// returns the specimen under that same step's command (its force at the step's end, the
// PredictionModel contract), with no sampling delay at all. This is the idealisation the monolithic
// reference, the seed 002 virtual studies and their reference values (docs/reference-values.md)
// assume, and what makes e = 0 exactly with an exact prediction model (docs/architecture.md §3).
class IdealActuatorPlant final : public Plant {
 public:
  explicit IdealActuatorPlant(std::unique_ptr<PredictionModel> specimen) : specimen_(std::move(specimen)) {}
  Measurement step(const InterfaceMotion& actuator_command, double dt_s) override {
    return {actuator_command.displacement_m, actuator_command.velocity_m_per_s,
            specimen_->step(actuator_command, dt_s)};
  }
  void report(results::PlantReport& out) const override { out.mutable_ideal(); }

 private:
  std::unique_ptr<PredictionModel> specimen_;
};

}  // namespace rths
