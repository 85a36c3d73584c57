#pragma once

#include <cstdint>
#include <memory>

#include "experiment.pb.h"
#include "rths/common/linear_system.hpp"
#include "rths/common/random.hpp"
#include "rths/node_physical/plant.hpp"

namespace rths {

// Dynamics of one actuator: the command in, the motion it imposes on the specimen out.
class ActuatorDynamics {
 public:
  // Each kind has its own report in the run summaries (results::PlantReport).
  enum class Kind : std::uint8_t { kLinear, kServoHydraulic };

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
                                             double dt_s);
  virtual void reset() = 0;
  // Force the actuator develops at the end of the last step (servo-hydraulic: A p); NaN if the
  // model does not know it.
  [[nodiscard]] virtual double actuator_force_n() const = 0;
  [[nodiscard]] virtual Kind kind() const = 0;
};

// A linear command -> displacement model, ZOH-discretised at a fixed rate (config LinearActuator).
class LinearActuator final : public ActuatorDynamics {
 public:
  LinearActuator(const ContinuousStateSpace& model, double dt_s);
  InterfaceMotion step(double command_m, double load_force_n, double dt_s) override;
  void reset() override;
  [[nodiscard]] double actuator_force_n() const override;
  [[nodiscard]] Kind kind() const override { return Kind::kLinear; }
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
  ServoHydraulicActuator(const config::ServoHydraulicActuator& parameters, double force_limit_n);
  InterfaceMotion step(double command_m, double load_force_n, double dt_s) override;
  // The specimen stepped at every RK4 substep (dt / substeps) with the piston's motion, its force
  // held over the next substep.
  InterfaceMotion step_with_specimen(double command_m, PredictionModel& specimen, double& specimen_force_n,
                                     double dt_s) override;
  void reset() override;
  [[nodiscard]] double actuator_force_n() const override;
  [[nodiscard]] Kind kind() const override { return Kind::kServoHydraulic; }
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

// How often each limit acted.
struct ActuatorCounters {
  std::uint64_t stroke_saturated = 0;    // steps with the command clamped to the stroke
  std::uint64_t velocity_saturated = 0;  // steps with the command's rate clamped
  std::uint64_t force_saturated = 0;     // steps with the force at (or, linear: beyond) the limit
};

// Actuator + specimen + sensors behind one channel (config Actuator): limits on the command,
// the dynamics, the specimen under the actuator's motion, seeded noise on what the sensors report.
// Hardware-true timing (Plant::step): step j returns the sensors' reading of the state at t_j, then
// the dynamics advance over the step under command j. The discrete plant is thereby strictly proper
// like a real one, and its measured lag behind the command is the continuous actuator's plus the
// hold's half sample (seed 004 Eq. 7: 13.36 + 0.49 = 13.85 ms at 1024 Hz).
class ActuatorPlant final : public Plant {
 public:
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

// The continuous model a LinearActuator config describes (transfer function or state space), with
// its perturbation applied. Throws std::invalid_argument on a bad model. A transfer function comes
// back in the controllable canonical form of from_transfer_function.
ContinuousStateSpace continuous_model(const config::LinearActuator& linear);

// The plant of one channel: ActuatorPlant when the channel has an actuator, IdealActuatorPlant
// otherwise (or when ideal is true: the monolithic reference's view of the specimen).
std::unique_ptr<Plant> make_plant(const config::Channel& channel, double rate_hz, bool ideal = false);

}  // namespace rths
