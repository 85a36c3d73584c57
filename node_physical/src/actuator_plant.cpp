#include "rths/node_physical/actuator_plant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rths {

namespace {

// The force-noise stream's seed: the displacement stream uses the noise seed itself, so adding
// force noise never changes the displacement noise of a run (Rng's splitmix64 seeding decorrelates
// the two streams).
constexpr std::uint64_t kForceStream = 0xd1b54a32d192ed03ULL;

// A step length must match the rate a LinearActuator was discretised at to this relative precision.
constexpr double kDtTolerance = 1e-9;

// A clamped pressure gives |A p| = limit to the rounding of A (limit / A).
constexpr double kLimitTolerance = 1e-9;

// A perturbed complex pair keeps a damping ratio below this, so it stays a complex pair.
constexpr double kMaxPerturbedDamping = 0.999;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

double horner(std::span<const double> coefficients, double s) {
  double value = 0.0;
  for (const double c : coefficients) value = value * s + c;
  return value;
}

// Every pole of a model that drives an actuator must lie in the open left half-plane.
void require_stable(const std::vector<std::complex<double>>& poles, const char* what) {
  for (const auto& p : poles) {
    require(p.real() < 0.0,
            fmt::format("actuator {}: pole {}{:+}j is not in the open left half-plane (unstable or marginal model)",
                        what, p.real(), p.imag()));
  }
}

// PlantPerturbation on a set of roots (closed under conjugation): each complex pair's natural
// frequency |p| and damping ratio -Re(p)/|p| times their own factor 1 + relative U(-1, 1), each real
// root's magnitude times one. Fixed order of draws from `rng`: the groups in the order of
// polynomial_roots (by magnitude, then imaginary part; a pair is met at its negative-imaginary
// member), a pair drawing its frequency factor and then its damping factor.
std::vector<std::complex<double>> perturb(const std::vector<std::complex<double>>& roots, double relative, Rng& rng) {
  const auto factor = [&] { return 1.0 + relative * (2.0 * rng.uniform() - 1.0); };
  std::vector<std::complex<double>> out;
  out.reserve(roots.size());
  for (const auto& r : roots) {
    if (r.imag() > 0.0) continue;  // the upper member of a pair: made with the lower one
    if (r.imag() == 0.0) {
      out.push_back(r * factor());
      continue;
    }
    const double omega = std::abs(r) * factor();
    const double zeta = std::clamp(-r.real() / std::abs(r) * factor(), -kMaxPerturbedDamping, kMaxPerturbedDamping);
    const std::complex<double> p(-zeta * omega, omega * std::sqrt(1.0 - zeta * zeta));
    out.push_back(p);
    out.push_back(std::conj(p));
  }
  return out;
}

ContinuousStateSpace from_state_space(const config::StateSpaceModel& ss) {
  const int n = static_cast<int>(ss.states());
  require(n >= 1 && n <= kMaxStates,
          fmt::format("actuator state_space: states is {}, expected 1 to {}", ss.states(), kMaxStates));
  const auto nn = static_cast<std::size_t>(n);
  require(static_cast<std::size_t>(ss.a_size()) == nn * nn && static_cast<std::size_t>(ss.b_size()) == nn &&
              static_cast<std::size_t>(ss.c_size()) == nn,
          fmt::format("actuator state_space: a, b, c have {}, {}, {} entries, expected {}, {}, {} for {} states",
                      ss.a_size(), ss.b_size(), ss.c_size(), nn * nn, nn, nn, n));
  ContinuousStateSpace model;
  model.a = StateMatrix::Zero(n, n);
  model.b = StateVector::Zero(n);
  model.c = OutputRow::Zero(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) model.a(i, j) = ss.a(i * n + j);
    model.b(i) = ss.b(i);
    model.c(i) = ss.c(i);
  }
  model.d = ss.d();
  require(model.a.allFinite() && model.b.allFinite() && model.c.allFinite() && std::isfinite(model.d),
          "actuator state_space: a value is not finite");
  return model;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ActuatorDynamics

InterfaceMotion ActuatorDynamics::step_with_specimen(double command_m, PredictionModel& specimen,
                                                     double& specimen_force_n, double dt_s) {
  const InterfaceMotion motion = step(command_m, specimen_force_n, dt_s);
  specimen_force_n = specimen.step(motion, dt_s);
  return motion;
}

// ---------------------------------------------------------------------------------------------
// LinearActuator

LinearActuator::LinearActuator(const ContinuousStateSpace& model, double dt_s)
    : continuous_(model), discrete_(zero_order_hold(model, dt_s)), dt_s_(dt_s) {
  output_rate_row_ = continuous_.c * continuous_.a;
  output_rate_input_ = (continuous_.c * continuous_.b)(0);
  reset();
}

InterfaceMotion LinearActuator::step(double command_m, double /*load_force_n*/, double dt_s) {
  if (!(std::abs(dt_s - dt_s_) <= kDtTolerance * dt_s_)) {  // negated: a NaN dt fails it too
    throw std::invalid_argument(
        fmt::format("LinearActuator: stepped with dt {} s, discretised at {} s (the site rate)", dt_s, dt_s_));
  }
  x_ = discrete_.a * x_ + discrete_.b * command_m;
  // The output at the step's end, the command still held (the specimen's timing contract).
  const double displacement = (discrete_.c * x_)(0) + discrete_.d * command_m;
  // With D = 0 the output is continuous and y' = C (A x + B u) exactly at the step's end; a
  // biproper model's output jumps with the command, so it gets a backward difference.
  const double velocity = discrete_.d == 0.0 ? (output_rate_row_ * x_)(0) + output_rate_input_ * command_m
                                             : (displacement - displacement_m_) / dt_s_;
  const double acceleration = (velocity - velocity_m_per_s_) / dt_s_;
  displacement_m_ = displacement;
  velocity_m_per_s_ = velocity;
  return {displacement, velocity, acceleration};
}

void LinearActuator::reset() {
  x_ = StateVector::Zero(continuous_.a.rows());
  displacement_m_ = 0.0;
  velocity_m_per_s_ = 0.0;
}

double LinearActuator::actuator_force_n() const {
  return std::numeric_limits<double>::quiet_NaN();
}

// ---------------------------------------------------------------------------------------------
// ServoHydraulicActuator

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
  const auto positive = [](double v, const char* name) {
    require(v > 0.0 && std::isfinite(v),
            fmt::format("actuator servo_hydraulic: {} must be positive and finite, got {}", name, v));
  };
  const auto non_negative = [](double v, const char* name) {
    require(v >= 0.0 && std::isfinite(v),
            fmt::format("actuator servo_hydraulic: {} must be >= 0 and finite, got {}", name, v));
  };
  positive(area_m2_, "area_m2");
  positive(flow_gain_m2_per_s_, "flow_gain_m2_per_s");
  positive(compliance_m3_per_pa_, "compliance_m3_per_pa");
  positive(mass_kg_, "piston_mass_kg");
  non_negative(leakage_m3_per_s_per_pa_, "leakage_m3_per_s_per_pa");
  non_negative(damping_ns_per_m_, "piston_damping_ns_per_m");
  non_negative(valve_time_constant_s_, "valve_time_constant_s");
  non_negative(force_limit_n, "force limit (limits.force_n)");
  require(parameters.substeps() >= 1 && parameters.substeps() <= 1U << 16U,
          fmt::format("actuator servo_hydraulic: substeps must be 1 to 65536, got {}", parameters.substeps()));
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
  const auto non_negative = [](double v, const char* name) {
    require(v >= 0.0 && std::isfinite(v), fmt::format("actuator {} must be >= 0 and finite, got {}", name, v));
  };
  non_negative(noise_.displacement_sd_m(), "noise.displacement_sd_m");
  non_negative(noise_.force_sd_n(), "noise.force_sd_n");
  non_negative(limits_.stroke_m(), "limits.stroke_m");
  non_negative(limits_.velocity_m_per_s(), "limits.velocity_m_per_s");
  non_negative(limits_.force_n(), "limits.force_n");
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

namespace {

// LinearActuatorPlant and ServoHydraulicPlant share these fields; only what force_saturated counts
// differs (a count beyond the limit, or steps at the clamp).
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

}  // namespace

void ActuatorPlant::report(results::PlantReport& out) const {
  switch (dynamics_->kind()) {
    case ActuatorDynamics::Kind::kLinear:
      report_actuator(*out.mutable_linear(), counters_, limits_, noise_);
      break;
    case ActuatorDynamics::Kind::kServoHydraulic:
      report_actuator(*out.mutable_servo_hydraulic(), counters_, limits_, noise_);
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Building plants from the config

ContinuousStateSpace continuous_model(const config::LinearActuator& linear) {
  const bool has_tf = linear.numerator_size() > 0 || linear.denominator_size() > 0;
  require(has_tf != linear.has_state_space(),
          "actuator linear: give either numerator and denominator or state_space (exactly one)");
  if (linear.has_state_space()) {
    require(!linear.has_perturbation(), "actuator linear: perturbation applies to transfer functions only");
    ContinuousStateSpace model = from_state_space(linear.state_space());
    const Eigen::EigenSolver<Eigen::MatrixXd> solver(Eigen::MatrixXd(model.a), false);
    std::vector<std::complex<double>> poles(solver.eigenvalues().begin(), solver.eigenvalues().end());
    require_stable(poles, "state_space");
    return model;
  }
  require(linear.numerator_size() > 0 && linear.denominator_size() > 0,
          "actuator linear: a transfer function needs both numerator and denominator");
  const std::vector<double> num(linear.numerator().begin(), linear.numerator().end());
  const std::vector<double> den(linear.denominator().begin(), linear.denominator().end());
  // from_transfer_function checks properness, the state count and finiteness.
  ContinuousStateSpace nominal = from_transfer_function(num, den);
  const std::vector<std::complex<double>> poles = polynomial_roots(den);
  require_stable(poles, "transfer function");
  if (!linear.has_perturbation() || linear.perturbation().relative() == 0.0) return nominal;

  const double relative = linear.perturbation().relative();
  require(relative > 0.0 && relative < 1.0,
          fmt::format("actuator perturbation: relative must be in [0, 1), got {}", relative));
  Rng rng(linear.perturbation().seed());
  // Denominator roots first, then the numerator's.
  const std::vector<std::complex<double>> perturbed_poles = perturb(poles, relative, rng);
  const std::vector<std::complex<double>> zeros = polynomial_roots(num);
  const std::vector<std::complex<double>> perturbed_zeros = perturb(zeros, relative, rng);

  std::vector<double> new_den = polynomial_from_roots(perturbed_poles);  // monic
  std::vector<double> new_num = polynomial_from_roots(perturbed_zeros);  // monic
  // Keep the static gain num(0)/den(0); a zero at the origin has none, so then the leading
  // coefficients' ratio is kept instead.
  const double num0 = horner(num, 0.0);
  const double new_num0 = new_num.back();
  double scale = *std::find_if(num.begin(), num.end(), [](double c) { return c != 0.0; }) / den[0];
  if (num0 != 0.0 && new_num0 != 0.0) scale = num0 / horner(den, 0.0) * new_den.back() / new_num0;
  for (double& c : new_num) c *= scale;
  return from_transfer_function(new_num, new_den);
}

std::unique_ptr<Plant> make_plant(const config::Channel& channel, double rate_hz, bool ideal) {
  if (ideal || !channel.has_actuator()) return std::make_unique<IdealActuatorPlant>(make_model(channel.specimen()));
  require(rate_hz > 0.0 && std::isfinite(rate_hz),
          fmt::format("make_plant: rate_hz must be positive, got {}", rate_hz));
  const config::Actuator& actuator = channel.actuator();
  std::unique_ptr<ActuatorDynamics> dynamics;
  switch (actuator.dynamics_case()) {
    case config::Actuator::kLinear:
      dynamics = std::make_unique<LinearActuator>(continuous_model(actuator.linear()), 1.0 / rate_hz);
      break;
    case config::Actuator::kServoHydraulic:
      dynamics = std::make_unique<ServoHydraulicActuator>(actuator.servo_hydraulic(), actuator.limits().force_n());
      break;
    case config::Actuator::DYNAMICS_NOT_SET:
      throw std::invalid_argument("actuator: no dynamics given (expected linear or servo_hydraulic)");
  }
  return std::make_unique<ActuatorPlant>(std::move(dynamics), make_model(channel.specimen()), actuator);
}

}  // namespace rths
