#pragma once

#include "common/dynamics/linear_system.hpp"
#include "experiment.pb.h"
#include "node_physical/interfaces/actuator_dynamics.hpp"
#include "results.pb.h"

namespace rths {

// A linear command -> displacement model, ZOH-discretised at a fixed rate (config LinearActuator).
class LinearActuator final : public ActuatorDynamics {
 public:
  // The continuous model (continuous_model) discretised at the step dt_s > 0.
  LinearActuator(const ContinuousStateSpace& model, double dt_s);
  InterfaceMotion step(double command_m, double load_force_n, double dt_s) override;
  void reset() override;
  [[nodiscard]] double actuator_force_n() const override;
  void report(const ActuatorCounters& counters, const config::ActuatorLimits& limits, const config::SensorNoise& noise,
              results::PlantReport& out) const override;
  [[nodiscard]] const DiscreteStateSpace& discrete() const { return discrete_; }
  [[nodiscard]] const ContinuousStateSpace& continuous() const { return continuous_; }
  [[nodiscard]] double dt_s() const { return dt_s_; }

 private:
  ContinuousStateSpace continuous_;
  DiscreteStateSpace discrete_;
  double dt_s_;
  // C A and C B of the continuous model: y' = C (A x + B u) at the step's end when D = 0.
  OutputRow output_rate_row_;
  double output_rate_input_ = 0.0;
  StateVector x_;
  double displacement_m_ = 0.0;
  double velocity_m_per_s_ = 0.0;
};

// The continuous model a LinearActuator config describes (transfer function or state space), with
// its perturbation applied: a config that passed the rules of linear_actuator.cpp (validate). A
// transfer function comes back in the controllable canonical form of from_transfer_function. Throws
// std::invalid_argument only where the model's arrays would not hold it (more than kMaxStates states,
// a state space's matrices of other sizes than its states, an improper transfer function).
ContinuousStateSpace continuous_model(const config::LinearActuator& linear);

}  // namespace rths
