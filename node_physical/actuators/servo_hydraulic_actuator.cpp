// Servo-valve, oil column and piston with the specimen on the piston (config ServoHydraulicActuator):
// control-structure interaction.
#include "node_physical/actuators/servo_hydraulic_actuator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"

namespace rths {

ServoHydraulicActuator::ServoHydraulicActuator(const config::ServoHydraulicActuator& parameters, double force_limit_n)
    : area_m2_(parameters.area_m2()),
      flow_gain_m2_per_s_(parameters.flow_gain_m2_per_s()),
      compliance_m3_per_pa_(parameters.compliance_m3_per_pa()),
      leakage_m3_per_s_per_pa_(parameters.leakage_m3_per_s_per_pa()),
      mass_kg_(parameters.piston_mass_kg()),
      damping_ns_per_m_(parameters.piston_damping_ns_per_m()),
      valve_time_constant_s_(parameters.valve_time_constant_s()),
      substeps_(static_cast<int>(parameters.substeps())),
      max_pressure_pa_(std::numeric_limits<double>::infinity()) {
  if (force_limit_n > 0.0) max_pressure_pa_ = force_limit_n / area_m2_;
}

ServoHydraulicActuator::State ServoHydraulicActuator::derivative(const State& s, double command_m,
                                                                 double load_force_n) const {
  const double valve_flow = flow_gain_m2_per_s_ * (command_m - s.x);
  const double q = valve_time_constant_s_ > 0.0 ? s.q : valve_flow;
  // Pressure saturation as a relief valve: the pressure never acts beyond the limit, and at the
  // limit the flow that would raise it further is relieved (p' = 0). Clamping only after each
  // substep would let the RK4 stages see pressures beyond the limit (about h p' / 2: 2 % of the
  // limit in the force-saturation test).
  const double p = std::clamp(s.p, -max_pressure_pa_, max_pressure_pa_);
  State d;
  d.x = s.v;
  d.v = (area_m2_ * p - damping_ns_per_m_ * s.v - load_force_n) / mass_kg_;
  d.p = (q - area_m2_ * s.v - leakage_m3_per_s_per_pa_ * p) / compliance_m3_per_pa_;
  if ((p >= max_pressure_pa_ && d.p > 0.0) || (p <= -max_pressure_pa_ && d.p < 0.0)) d.p = 0.0;
  d.q = valve_time_constant_s_ > 0.0 ? (valve_flow - s.q) / valve_time_constant_s_ : 0.0;
  return d;
}

void ServoHydraulicActuator::advance(double command_m, double load_force_n, double h) {
  const auto along = [](const State& s, const State& d, double t) {
    return State{s.x + t * d.x, s.v + t * d.v, s.p + t * d.p, s.q + t * d.q};
  };
  State& s = state_;
  const State k1 = derivative(s, command_m, load_force_n);
  const State k2 = derivative(along(s, k1, h / 2), command_m, load_force_n);
  const State k3 = derivative(along(s, k2, h / 2), command_m, load_force_n);
  const State k4 = derivative(along(s, k3, h), command_m, load_force_n);
  s.x += h / 6 * (k1.x + 2 * k2.x + 2 * k3.x + k4.x);
  s.v += h / 6 * (k1.v + 2 * k2.v + 2 * k3.v + k4.v);
  s.p += h / 6 * (k1.p + 2 * k2.p + 2 * k3.p + k4.p);
  s.q += h / 6 * (k1.q + 2 * k2.q + 2 * k3.q + k4.q);
  s.p = std::clamp(s.p, -max_pressure_pa_, max_pressure_pa_);
}

InterfaceMotion ServoHydraulicActuator::motion(double command_m, double load_force_n) const {
  return {state_.x, state_.v, derivative(state_, command_m, load_force_n).v};
}

InterfaceMotion ServoHydraulicActuator::step(double command_m, double load_force_n, double dt_s) {
  const double h = dt_s / substeps_;
  for (int i = 0; i < substeps_; ++i) advance(command_m, load_force_n, h);
  return motion(command_m, load_force_n);
}

InterfaceMotion ServoHydraulicActuator::step_with_specimen(double command_m, PredictionModel& specimen,
                                                           double& specimen_force_n, double dt_s) {
  const double h = dt_s / substeps_;
  for (int i = 0; i < substeps_; ++i) {
    advance(command_m, specimen_force_n, h);
    specimen_force_n = specimen.step(motion(command_m, specimen_force_n), h);
  }
  return motion(command_m, specimen_force_n);
}

void ServoHydraulicActuator::reset() {
  state_ = State{};
}

double ServoHydraulicActuator::actuator_force_n() const {
  return area_m2_ * state_.p;
}

void ServoHydraulicActuator::report(const ActuatorCounters& counters, const config::ActuatorLimits& limits,
                                    const config::SensorNoise& noise, results::PlantReport& out) const {
  report_actuator(*out.mutable_servo_hydraulic(), counters, limits, noise);
}

namespace {

// A positive area, flow gain, compliance and piston mass; a leakage, damping and valve time constant
// of 0 or more; 1 to 65536 RK4 substeps.
void validate(const config::ServoHydraulicActuator& servo, const ComponentContext& /*context*/, const Checker& check) {
  check.expect_positive("area_m2", servo.has_area_m2(), servo.area_m2(), "a piston area (m^2)");
  check.expect_positive("flow_gain_m2_per_s", servo.has_flow_gain_m2_per_s(), servo.flow_gain_m2_per_s(),
                        "a flow gain (m^3/s per m)");
  check.expect_positive("compliance_m3_per_pa", servo.has_compliance_m3_per_pa(), servo.compliance_m3_per_pa(),
                        "an oil-column compliance V/(4 beta) (m^3/Pa)");
  check.expect_positive("piston_mass_kg", servo.has_piston_mass_kg(), servo.piston_mass_kg(), "a piston mass (kg)");
  check.expect(servo.leakage_m3_per_s_per_pa() >= 0, "leakage_m3_per_s_per_pa",
               fmt::format("is {}, expected >= 0", servo.leakage_m3_per_s_per_pa()));
  check.expect(servo.piston_damping_ns_per_m() >= 0, "piston_damping_ns_per_m",
               fmt::format("is {}, expected >= 0", servo.piston_damping_ns_per_m()));
  check.expect(servo.valve_time_constant_s() >= 0, "valve_time_constant_s",
               fmt::format("is {}, expected >= 0 s (0: ideal valve)", servo.valve_time_constant_s()));
  check.expect(servo.substeps() >= 1 && servo.substeps() <= 65536, "substeps",
               fmt::format("is {}, expected 1..65536 RK4 substeps per step", servo.substeps()));
}

// The pressure saturates at the force limit of the channel's actuator (the central rules hold it >= 0;
// none for a servo-hydraulic actuator built outside a channel).
std::unique_ptr<ActuatorDynamics> make(const config::ServoHydraulicActuator& servo, const ComponentContext& context) {
  const double force_limit_n = context.channel == nullptr ? 0.0 : context.channel->actuator().limits().force_n();
  return std::make_unique<ServoHydraulicActuator>(servo, force_limit_n);
}

[[maybe_unused]] const bool kServoHydraulicActuatorRegistered =
    register_component<config::ServoHydraulicActuator, ActuatorDynamics>(validate, make);

}  // namespace
}  // namespace rths
