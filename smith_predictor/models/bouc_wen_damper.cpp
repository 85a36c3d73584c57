#include "smith_predictor/models/bouc_wen_damper.hpp"

#include <google/protobuf/descriptor.h>

#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"

namespace rths {

BoucWenDamper::BoucWenDamper(const Parameters& parameters)
    : parameters_(parameters),
      n_is_two_(parameters.n == 2.0),
      at_command_(coefficients_at(parameters.voltage_v)),
      state_(initial_state()) {}

BoucWenDamper::State BoucWenDamper::initial_state() const {
  // At rest with y = z = 0; the filter state starts at the command so that a constant-voltage run
  // is at v from t = 0 (the convention of the seed 002 reference values).
  return State{0.0, 0.0, parameters_.voltage_v};
}

void BoucWenDamper::reset() {
  state_ = initial_state();
}

std::unique_ptr<PredictionModel> BoucWenDamper::clone() const {
  return std::make_unique<BoucWenDamper>(*this);
}

BoucWenDamper::Coefficients BoucWenDamper::coefficients_at(double u_v) const {
  const Parameters& p = parameters_;
  // seed 002 Eq. 14
  const double c0 = p.c0a_ns_per_m + p.c0b_ns_per_m_v * u_v;
  const double c1 = p.c1a_ns_per_m + p.c1b_ns_per_m_v * u_v;
  return Coefficients{p.alpha_a_n_per_m + p.alpha_b_n_per_m_v * u_v, c0, c1, 1.0 / (c0 + c1)};
}

BoucWenDamper::Coefficients BoucWenDamper::coefficients(double u_v) const {
  // With a constant command the filter state sits exactly at v (it starts there and u' is then
  // exactly 0), so the coefficients and the reciprocal of c0 + c1 come from the constructor rather
  // than 16 times per step: the division was the longest link in the RK4 dependency chain.
  return u_v == parameters_.voltage_v ? at_command_ : coefficients_at(u_v);
}

double BoucWenDamper::force_n(const State& state, double x_m, double xdot_m_per_s) const {
  const Parameters& p = parameters_;
  const Coefficients c = coefficients(state.u_v);
  const double spring_n = p.k0_n_per_m * (x_m - state.y_m);
  // Spencer 1997: force balance across the c1 dashpot.
  const double ydot = (c.alpha_n_per_m * state.z_m + c.c0_ns_per_m * xdot_m_per_s + spring_n) * c.inverse_c0_plus_c1;
  // seed 002 Eq. 12
  return c.alpha_n_per_m * state.z_m + c.c0_ns_per_m * (xdot_m_per_s - ydot) + spring_n + p.k1_n_per_m * (x_m - p.x0_m);
}

template <bool kNIsTwo>
BoucWenDamper::Rates BoucWenDamper::rates(const State& state, double x_m, double xdot_m_per_s) const {
  const Parameters& p = parameters_;
  const double z = state.z_m;
  const Coefficients c = coefficients(state.u_v);
  // Spencer 1997: force balance across the c1 dashpot.
  const double ydot =
      (c.alpha_n_per_m * z + c.c0_ns_per_m * xdot_m_per_s + p.k0_n_per_m * (x_m - state.y_m)) * c.inverse_c0_plus_c1;
  const double relative_velocity = xdot_m_per_s - ydot;
  // z|z|^(n-1) and |z|^n of seed 002 Eq. 13.
  double z_abs_z_n_minus_1 = 0.0;
  double abs_z_n = 0.0;
  if constexpr (kNIsTwo) {
    z_abs_z_n_minus_1 = z * std::abs(z);
    abs_z_n = z * z;
  } else {
    const double abs_z_n_minus_1 = std::pow(std::abs(z), p.n - 1.0);
    z_abs_z_n_minus_1 = z * abs_z_n_minus_1;
    abs_z_n = std::abs(z) * abs_z_n_minus_1;
  }
  const double zdot = -p.gamma_per_m2 * std::abs(relative_velocity) * z_abs_z_n_minus_1 -
                      p.beta_per_m2 * relative_velocity * abs_z_n + p.a * relative_velocity;
  const double udot = -p.eta_per_s * (state.u_v - p.voltage_v);  // seed 002 Eq. 14
  return Rates{ydot, zdot, udot};
}

template <bool kNIsTwo>
void BoucWenDamper::advance(double x_m, double xdot_m_per_s, double dt_s) {
  // Classical RK4, motion held over the step (docs/architecture.md §3).
  const double h = dt_s / static_cast<double>(parameters_.substeps);
  const double half_h = 0.5 * h;
  const double sixth_h = h / 6.0;
  State s = state_;
  for (unsigned i = 0; i < parameters_.substeps; ++i) {
    const Rates k1 = rates<kNIsTwo>(s, x_m, xdot_m_per_s);
    const Rates k2 = rates<kNIsTwo>(
        State{s.y_m + half_h * k1.y_m_per_s, s.z_m + half_h * k1.z_m_per_s, s.u_v + half_h * k1.u_v_per_s}, x_m,
        xdot_m_per_s);
    const Rates k3 = rates<kNIsTwo>(
        State{s.y_m + half_h * k2.y_m_per_s, s.z_m + half_h * k2.z_m_per_s, s.u_v + half_h * k2.u_v_per_s}, x_m,
        xdot_m_per_s);
    const Rates k4 = rates<kNIsTwo>(State{s.y_m + h * k3.y_m_per_s, s.z_m + h * k3.z_m_per_s, s.u_v + h * k3.u_v_per_s},
                                    x_m, xdot_m_per_s);
    s.y_m += sixth_h * (k1.y_m_per_s + 2.0 * (k2.y_m_per_s + k3.y_m_per_s) + k4.y_m_per_s);
    s.z_m += sixth_h * (k1.z_m_per_s + 2.0 * (k2.z_m_per_s + k3.z_m_per_s) + k4.z_m_per_s);
    s.u_v += sixth_h * (k1.u_v_per_s + 2.0 * (k2.u_v_per_s + k3.u_v_per_s) + k4.u_v_per_s);
  }
  state_ = s;
}

double BoucWenDamper::step(const InterfaceMotion& motion, double dt_s) {
  const double x = motion.displacement_m;
  const double xdot = motion.velocity_m_per_s;
  // Contract of PredictionModel::step: the state crosses the step under the held motion and the
  // force is read at its end, so the hysteretic force does not lag the motion by a step.
  if (n_is_two_) {
    advance<true>(x, xdot, dt_s);
  } else {
    advance<false>(x, xdot, dt_s);
  }
  return force_n(state_, x, xdot);
}

std::string BoucWenDamper::describe() const {
  const Parameters& p = parameters_;
  // %.17g round-trips a double, so equal text means equal parameters (the handshake digest);
  // + 0.0 folds -0 into +0. Substeps are included: they change the force history.
  return fmt::format(
      "BoucWenDamper alpha_a_n_per_m={:.17g} alpha_b_n_per_m_v={:.17g} c0a_ns_per_m={:.17g} "
      "c0b_ns_per_m_v={:.17g} c1a_ns_per_m={:.17g} c1b_ns_per_m_v={:.17g} k0_n_per_m={:.17g} "
      "k1_n_per_m={:.17g} x0_m={:.17g} gamma_per_m2={:.17g} beta_per_m2={:.17g} a={:.17g} "
      "n={:.17g} eta_per_s={:.17g} voltage_v={:.17g} substeps={}",
      p.alpha_a_n_per_m + 0.0, p.alpha_b_n_per_m_v + 0.0, p.c0a_ns_per_m + 0.0, p.c0b_ns_per_m_v + 0.0,
      p.c1a_ns_per_m + 0.0, p.c1b_ns_per_m_v + 0.0, p.k0_n_per_m + 0.0, p.k1_n_per_m + 0.0, p.x0_m + 0.0,
      p.gamma_per_m2 + 0.0, p.beta_per_m2 + 0.0, p.a + 0.0, p.n + 0.0, p.eta_per_s + 0.0, p.voltage_v + 0.0,
      p.substeps);
}

std::complex<double> BoucWenDamper::dynamic_stiffness(double omega_rad_s) const {
  const Parameters& p = parameters_;
  const Coefficients c = at_command_;
  const std::complex<double> s(0.0, omega_rad_s);
  const double stiff = c.alpha_n_per_m * p.a + p.k0_n_per_m;
  const std::complex<double> y_over_x = (stiff + c.c0_ns_per_m * s) / (stiff + (c.c0_ns_per_m + c.c1_ns_per_m) * s);
  return p.k1_n_per_m + c.c1_ns_per_m * s * y_over_x;
}

namespace {

// Every number is finite by the time a component's rules run: the config validator checks them all
// first. Each rule below stands alone and is reported (docs/architecture.md §9).
void validate(const config::BoucWenDamper& damper, const ComponentContext& /*context*/, const Checker& check) {
  // Seed 002 Eqs. 12-14 have no sensible default for these; only x0_m, n, voltage_v and substeps do.
  using Config = config::BoucWenDamper;
  constexpr std::array required{
      Config::kAlphaANPerMFieldNumber, Config::kAlphaBNPerMVFieldNumber,
      Config::kC0ANsPerMFieldNumber,   Config::kC0BNsPerMVFieldNumber,
      Config::kC1ANsPerMFieldNumber,   Config::kC1BNsPerMVFieldNumber,
      Config::kK0NPerMFieldNumber,     Config::kK1NPerMFieldNumber,
      Config::kGammaPerM2FieldNumber,  Config::kBetaPerM2FieldNumber,
      Config::kAFieldNumber,           Config::kEtaPerSFieldNumber,
  };
  const auto* descriptor = Config::descriptor();
  const auto* reflection = Config::GetReflection();
  std::vector<std::string> missing;
  for (const int number : required) {
    const auto* field = descriptor->FindFieldByNumber(number);
    if (!reflection->HasField(damper, field)) missing.push_back(field->name());
  }
  // An incomplete damper is one problem, on one line that names every missing parameter.
  constexpr std::string_view kWhy =
      "every Bouc-Wen parameter must be given except x0_m, n, voltage_v and substeps (seed 002 Eqs. 12-14)";
  if (missing.size() == 1) check.expect(false, missing.front(), fmt::format("missing; {}", kWhy));
  if (missing.size() > 1) check.expect(false, "", fmt::format("misses {}; {}", fmt::join(missing, ", "), kWhy));
  // The rules below compare the parameters; a missing one would be judged by its default of 0.
  if (!missing.empty()) return;
  // Eq. 13 divides by c0 + c1.
  const double c0_c1 = damper.c0a_ns_per_m() + damper.c1a_ns_per_m();
  const bool passive_ok = check.expect(
      c0_c1 > 0, "c1a_ns_per_m",
      fmt::format("c0a_ns_per_m + c1a_ns_per_m is {}, expected > 0 (seed 002 Eq. 13 divides by c0 + c1)", c0_c1));
  const bool voltage_ok = check.expect(damper.voltage_v() >= 0, "voltage_v",
                                       fmt::format("is {}, expected a command voltage >= 0 V", damper.voltage_v()));
  // At the command voltage too (the filter holds u at v); said once where the rules above already failed.
  const double at_voltage = c0_c1 + (damper.c0b_ns_per_m_v() + damper.c1b_ns_per_m_v()) * damper.voltage_v();
  check.expect(!passive_ok || !voltage_ok || at_voltage > 0, "voltage_v",
               fmt::format("gives c0 + c1 = {} N s/m at {} V, expected > 0 (seed 002 Eq. 13 divides by c0 + c1)",
                           at_voltage, damper.voltage_v()));
  check.expect(damper.eta_per_s() > 0, "eta_per_s",
               fmt::format("is {}, expected > 0 (the rate of the first-order voltage filter)", damper.eta_per_s()));
  check.expect(damper.n() >= 1, "n", fmt::format("is {}, expected an exponent >= 1", damper.n()));
  // z must stay bounded. For z > 0 (z < 0 is symmetric), Eq. 13 is z' = x' (A - (gamma + beta) z^n)
  // while x' > 0, which stops z at the plateau z^n = A / (gamma + beta), and z' = x' (A + (gamma - beta)
  // z^n) once x' < 0, which at the plateau is x' 2 gamma A / (gamma + beta): z comes back from it only
  // if gamma >= 0. With gamma < 0 it runs away after the first reversal (gamma = -1 with seed 002's beta:
  // not finite within 0.2 s of a 5 mm, 2.5 Hz sine, tests/smith_predictor/unit/test_model_contract.cpp); with
  // gamma + beta < 0 there is no plateau.
  check.expect(damper.gamma_per_m2() >= 0, "gamma_per_m2",
               fmt::format("is {}, expected >= 0 (with gamma < 0 the hysteretic variable z runs away after a "
                           "reversal of the motion)",
                           damper.gamma_per_m2()));
  const double gamma_beta = damper.gamma_per_m2() + damper.beta_per_m2();
  check.expect(gamma_beta >= 0, "beta_per_m2",
               fmt::format("gamma_per_m2 + beta_per_m2 is {}, expected >= 0 (the hysteretic variable z would grow "
                           "without bound)",
                           gamma_beta));
  check.expect(
      damper.substeps() >= 1 && damper.substeps() <= BoucWenDamper::kMaxSubsteps, "substeps",
      fmt::format("is {}, expected 1..{} RK4 substeps per step", damper.substeps(), BoucWenDamper::kMaxSubsteps));
}

std::unique_ptr<PredictionModel> make(const config::BoucWenDamper& c, const ComponentContext& /*context*/) {
  BoucWenDamper::Parameters p;
  p.alpha_a_n_per_m = c.alpha_a_n_per_m();
  p.alpha_b_n_per_m_v = c.alpha_b_n_per_m_v();
  p.c0a_ns_per_m = c.c0a_ns_per_m();
  p.c0b_ns_per_m_v = c.c0b_ns_per_m_v();
  p.c1a_ns_per_m = c.c1a_ns_per_m();
  p.c1b_ns_per_m_v = c.c1b_ns_per_m_v();
  p.k0_n_per_m = c.k0_n_per_m();
  p.k1_n_per_m = c.k1_n_per_m();
  p.x0_m = c.x0_m();
  p.gamma_per_m2 = c.gamma_per_m2();
  p.beta_per_m2 = c.beta_per_m2();
  p.a = c.a();
  p.n = c.n();
  p.eta_per_s = c.eta_per_s();
  p.voltage_v = c.voltage_v();
  p.substeps = c.substeps();
  return std::make_unique<BoucWenDamper>(p);
}

[[maybe_unused]] const bool kBoucWenDamperRegistered =
    register_component<config::BoucWenDamper, PredictionModel>(validate, make);

}  // namespace
}  // namespace rths
