#pragma once

#include "experiment.pb.h"
#include "node_physical/interfaces/actuator_dynamics.hpp"
#include "results.pb.h"

namespace rths {

// Servo-valve, oil column and piston with the specimen force on the piston (config
// ServoHydraulicActuator): control-structure interaction. The linearised servo-hydraulic model of
// Dyke, Spencer, Quast & Sain (1995), "Role of control-structure interaction in protective system
// design", J. Eng. Mech. 121(2), in the displacement-controlled form used for hybrid testing by
// Carrion & Spencer (2007), "Model-based strategies for real-time hybrid testing", NSEL report 006:
//   valve flow      q = g (x_cmd - x)                 (or tau_v q' = g (x_cmd - x) - q)
//   oil column      C p' = q - A v - L p              (load pressure p, C = V_t / (4 beta))
//   piston          m v' = A p - c v - f_load,  x' = v
// with g the flow gain (proportional gain x valve gain), A the piston area, L the cross-port leakage.
// Under a linear spring specimen f_load = k x this closes to (ideal valve)
//   X / X_cmd = g A / [(C s + L)(m s^2 + c s + k) + A^2 s + g A]
// (the valve lag multiplies the bracket without g A by tau_v s + 1): the specimen's stiffness enters
// the actuator's own dynamics (control-structure interaction, Dyke et al. 1995): a stiffer specimen
// lowers the DC gain through the leakage and adds lag (A^2 + C k + L c) / (g A + L k).
// Integrated with RK4 over `substeps` per step, the command held; in a plant the specimen is stepped
// at every substep (step_with_specimen). A force limit caps |A p| (pressure saturation, a relief
// valve): p is clamped to +-limit / A after every substep.
class ServoHydraulicActuator final : public ActuatorDynamics {
 public:
  // Parameters that passed the rules of servo_hydraulic_actuator.cpp (validate); the force limit of
  // the actuator's limits (0: none).
  ServoHydraulicActuator(const config::ServoHydraulicActuator& parameters, double force_limit_n);
  InterfaceMotion step(double command_m, double load_force_n, double dt_s) override;
  // The specimen stepped at every RK4 substep (dt / substeps) with the piston's motion, its force
  // held over the next substep.
  InterfaceMotion step_with_specimen(double command_m, PredictionModel& specimen, double& specimen_force_n,
                                     double dt_s) override;
  void reset() override;
  [[nodiscard]] double actuator_force_n() const override;
  void report(const ActuatorCounters& counters, const config::ActuatorLimits& limits, const config::SensorNoise& noise,
              results::PlantReport& out) const override;
  // Load pressure times area (N) at which the pressure saturates; infinite without a limit.
  [[nodiscard]] double force_limit_n() const { return area_m2_ * max_pressure_pa_; }

 private:
  struct State {
    double x = 0.0;  // piston displacement (m)
    double v = 0.0;  // piston velocity (m/s)
    double p = 0.0;  // load pressure (Pa)
    double q = 0.0;  // valve flow (m^3/s), a state only with a valve lag
  };
  [[nodiscard]] State derivative(const State& s, double command_m, double load_force_n) const;
  // One RK4 substep of length h, command and load held, then the pressure limit.
  void advance(double command_m, double load_force_n, double h);
  [[nodiscard]] InterfaceMotion motion(double command_m, double load_force_n) const;

  double area_m2_;
  double flow_gain_m2_per_s_;
  double compliance_m3_per_pa_;
  double leakage_m3_per_s_per_pa_;
  double mass_kg_;
  double damping_ns_per_m_;
  double valve_time_constant_s_;
  int substeps_;
  double max_pressure_pa_;
  State state_;
};

}  // namespace rths
