// Prediction models (smith_predictor/models/): the linear spring of seed 002 Eq. 11 and the Spencer et al.
// (1997) MR-damper model of seed 002 Eqs. 12-14, checked against physics, against an independent
// integration written here from the equations, and against the seed's Eq. 15 model-error levels.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "smith_predictor/models/bouc_wen_damper.hpp"
#include "smith_predictor/models/linear_spring.hpp"
#include "smith_predictor/site_models/site_models.hpp"
#include "support/test_support.hpp"

namespace rths::test_prediction_models {
namespace {

constexpr double kSeedRateHz = 1024.0;  // seed 002 step rate

// Seed 002 Table 1 (model A, the nominal damper), converted once from N and cm to SI:
// N/cm -> x100 N/m, N s/cm -> x100 N s/m, cm^-2 -> x1e4 m^-2. k0 is printed "N/cm/V" in the table
// but it is a stiffness (Spencer 1997). n is not in the table; Spencer 1997 uses n = 2.
BoucWenDamper::Parameters model_a(double voltage_v) {
  BoucWenDamper::Parameters p;
  p.alpha_a_n_per_m = 35.84e2;
  p.alpha_b_n_per_m_v = 83.04e2;
  p.c0a_ns_per_m = 1.539e2;
  p.c0b_ns_per_m_v = 32.82e2;
  p.c1a_ns_per_m = 99.47e2;
  p.c1b_ns_per_m_v = 403.86e2;
  p.k0_n_per_m = 5.86e2;
  p.k1_n_per_m = 0.016e2;
  p.x0_m = 0.0;
  p.gamma_per_m2 = 3.62e4;
  p.beta_per_m2 = 3.62e4;
  p.a = 154.60;
  p.n = 2.0;
  p.eta_per_s = 60.0;
  p.voltage_v = voltage_v;
  p.substeps = 4;
  return p;
}

// Seed 002 Table 2: models B1-B6 change only alpha_a and alpha_b (N/cm, N/cm/V), meant to give
// normalised RMS force errors of -30, -20, -10, +10, +20, +30 % against model A (Eq. 15).
struct AlphaPair {
  double alpha_a_n_per_cm;
  double alpha_b_n_per_cm_v;
  double nominal_error_percent;
};
constexpr std::array<AlphaPair, 6> kModelsB{{{22.35, 48.00, -30.0},
                                             {26.70, 59.00, -20.0},
                                             {31.00, 70.00, -10.0},
                                             {40.84, 93.60, 10.0},
                                             {45.84, 104.50, 20.0},
                                             {51.00, 116.50, 30.0}}};

BoucWenDamper::Parameters model_b(std::size_t index, double voltage_v) {
  BoucWenDamper::Parameters p = model_a(voltage_v);
  p.alpha_a_n_per_m = kModelsB.at(index).alpha_a_n_per_cm * 1e2;
  p.alpha_b_n_per_m_v = kModelsB.at(index).alpha_b_n_per_cm_v * 1e2;
  return p;
}

// The config of a model with these parameters, every field given.
config::Model config_of(const BoucWenDamper::Parameters& p) {
  config::Model model;
  config::BoucWenDamper& c = *model.mutable_bouc_wen();
  c.set_alpha_a_n_per_m(p.alpha_a_n_per_m);
  c.set_alpha_b_n_per_m_v(p.alpha_b_n_per_m_v);
  c.set_c0a_ns_per_m(p.c0a_ns_per_m);
  c.set_c0b_ns_per_m_v(p.c0b_ns_per_m_v);
  c.set_c1a_ns_per_m(p.c1a_ns_per_m);
  c.set_c1b_ns_per_m_v(p.c1b_ns_per_m_v);
  c.set_k0_n_per_m(p.k0_n_per_m);
  c.set_k1_n_per_m(p.k1_n_per_m);
  c.set_x0_m(p.x0_m);
  c.set_gamma_per_m2(p.gamma_per_m2);
  c.set_beta_per_m2(p.beta_per_m2);
  c.set_a(p.a);
  c.set_n(p.n);
  c.set_eta_per_s(p.eta_per_s);
  c.set_voltage_v(p.voltage_v);
  c.set_substeps(p.substeps);
  return model;
}

// The problems the registered rules find in a model (empty: valid), paths under "specimen".
std::vector<std::string> problems_of(const config::Model& model) {
  return test::component_problems(model, ComponentContext{.rate_hz = kSeedRateHz}, "specimen");
}

// The characterisation motion of seed 002 Fig. 11: x(t) = X sin(2 pi f t).
struct Sine {
  double amplitude_m = 0.005;
  double frequency_hz = 2.5;

  [[nodiscard]] double omega() const { return 2.0 * std::numbers::pi * frequency_hz; }
  [[nodiscard]] double x(double t_s) const { return amplitude_m * std::sin(omega() * t_s); }
  [[nodiscard]] double xdot(double t_s) const { return amplitude_m * omega() * std::cos(omega() * t_s); }
};

// The model as the nodes use it: motion sampled at each step start, force returned per step.
std::vector<double> model_forces(PredictionModel& model, const Sine& sine, double rate_hz, std::size_t steps) {
  const double dt_s = 1.0 / rate_hz;
  std::vector<double> forces(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    const double t_s = static_cast<double>(k) * dt_s;
    forces[k] = model.step(InterfaceMotion{sine.x(t_s), sine.xdot(t_s), 0.0}, dt_s);
  }
  return forces;
}

std::vector<double> model_forces(const BoucWenDamper::Parameters& p, const Sine& sine, double rate_hz,
                                 std::size_t steps) {
  BoucWenDamper damper(p);
  return model_forces(damper, sine, rate_hz, steps);
}

// Independent reference: Spencer et al. 1997 written out again, integrated by Heun's method
// (explicit trapezoid, a different scheme from the model's RK4) at dt/200 with the continuous
// x(t), x'(t) of the sine instead of values held over the step, and the general |z|^n form with
// std::pow. The force is read at the grid times t_k in Spencer's second form F = c1 y' + k1 (x - x0).
std::vector<double> reference_forces(const BoucWenDamper::Parameters& p, const Sine& sine, double rate_hz,
                                     std::size_t steps) {
  constexpr int kSubsteps = 200;
  const double h = 1.0 / (rate_hz * kSubsteps);
  struct Derivative {
    double ydot, zdot, udot, c1;
  };
  auto derivative = [&p](double y, double z, double u, double x, double xdot) {
    const double alpha = p.alpha_a_n_per_m + p.alpha_b_n_per_m_v * u;
    const double c0 = p.c0a_ns_per_m + p.c0b_ns_per_m_v * u;
    const double c1 = p.c1a_ns_per_m + p.c1b_ns_per_m_v * u;
    const double ydot = (alpha * z + c0 * xdot + p.k0_n_per_m * (x - y)) / (c0 + c1);
    const double w = xdot - ydot;
    const double zdot = -p.gamma_per_m2 * std::abs(w) * z * std::pow(std::abs(z), p.n - 1.0) -
                        p.beta_per_m2 * w * std::pow(std::abs(z), p.n) + p.a * w;
    const double udot = -p.eta_per_s * (u - p.voltage_v);
    return Derivative{ydot, zdot, udot, c1};
  };
  double y = 0.0;
  double z = 0.0;
  double u = p.voltage_v;
  std::vector<double> forces(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    const double t_k = static_cast<double>(k) / rate_hz;
    const Derivative d = derivative(y, z, u, sine.x(t_k), sine.xdot(t_k));
    forces[k] = d.c1 * d.ydot + p.k1_n_per_m * (sine.x(t_k) - p.x0_m);
    for (int i = 0; i < kSubsteps; ++i) {
      const double t = t_k + i * h;
      const Derivative k1 = derivative(y, z, u, sine.x(t), sine.xdot(t));
      const Derivative k2 =
          derivative(y + h * k1.ydot, z + h * k1.zdot, u + h * k1.udot, sine.x(t + h), sine.xdot(t + h));
      y += 0.5 * h * (k1.ydot + k2.ydot);
      z += 0.5 * h * (k1.zdot + k2.zdot);
      u += 0.5 * h * (k1.udot + k2.udot);
    }
  }
  return forces;
}

double rms(const std::vector<double>& v, std::size_t first) {
  double sum = 0.0;
  for (std::size_t i = first; i < v.size(); ++i) {
    sum += v[i] * v[i];
  }
  return std::sqrt(sum / static_cast<double>(v.size() - first));
}

// RMS of (a - b) over [first, end) divided by the RMS of b there.
double normalised_rms_difference(const std::vector<double>& a, const std::vector<double>& b, std::size_t first) {
  std::vector<double> difference(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference[i] = a[i] - b[i];
  }
  return rms(difference, first) / rms(b, first);
}

double peak_abs(const std::vector<double>& v, std::size_t first) {
  double peak = 0.0;
  for (std::size_t i = first; i < v.size(); ++i) {
    peak = std::max(peak, std::abs(v[i]));
  }
  return peak;
}

double max_value(const std::vector<double>& v, std::size_t first) {
  double m = v.at(first);
  for (std::size_t i = first; i < v.size(); ++i) {
    m = std::max(m, v[i]);
  }
  return m;
}

// Seed 002 Eq. 15 (printed as "Eq. 14" in its text), in percent.
double force_error_percent(const std::vector<double>& f_b, const std::vector<double>& f_a, std::size_t first) {
  const double sign = max_value(f_b, first) > max_value(f_a, first) ? 1.0 : -1.0;
  return sign * normalised_rms_difference(f_b, f_a, first) * 100.0;
}

// ---------------------------------------------------------------------------------------------
// LinearSpring

TEST(LinearSpring, ForceIsStiffnessTimesDisplacement) {
  LinearSpring spring(2.0e5);
  // Exact to rounding: one multiplication (seed 002 Eq. 11); velocity and dt play no part.
  EXPECT_DOUBLE_EQ(spring.step(InterfaceMotion{0.01, 0.3, 5.0}, 1.0 / kSeedRateHz), 2.0e3);
  EXPECT_DOUBLE_EQ(spring.step(InterfaceMotion{-0.002, -1.0, 0.0}, 1.0 / 4096.0), -400.0);
  EXPECT_DOUBLE_EQ(spring.step(InterfaceMotion{0.0, 10.0, 0.0}, 0.1), 0.0);
}

TEST(LinearSpring, StepInvariantAndStateless) {
  LinearSpring spring(1.5e4);
  const InterfaceMotion motion{0.0123, 0.0, 0.0};
  const double first = spring.step(motion, 1.0 / kSeedRateHz);
  // The spring holds no state: any number of steps of any length at the same x gives the same f,
  // bit for bit.
  for (int i = 0; i < 100; ++i) {
    spring.step(InterfaceMotion{0.05 * i, 1.0, 0.0}, 1.0e-3 * (i + 1));
  }
  EXPECT_EQ(spring.step(motion, 0.5), first);
  spring.reset();
  EXPECT_EQ(spring.clone()->step(motion, 1.0 / kSeedRateHz), first);
}

TEST(LinearSpring, DigestFollowsParameters) {
  // Equal stiffness, equal digest: both Smith parts must agree exactly when their models agree.
  EXPECT_EQ(model_digest(LinearSpring(1.2e4)), model_digest(LinearSpring(1.2e4)));
  // One ulp apart is a different model: the digest sees every bit (%.17g round-trips).
  EXPECT_NE(model_digest(LinearSpring(1.2e4)), model_digest(LinearSpring(std::nextafter(1.2e4, 2.0e4))));
  EXPECT_NE(model_digest(LinearSpring(1.2e4)), model_digest(LinearSpring(1.3e4)));
  // -0 and +0 are the same spring.
  EXPECT_EQ(model_digest(LinearSpring(0.0)), model_digest(LinearSpring(-0.0)));
  EXPECT_EQ(LinearSpring(1.2e4).describe(), "LinearSpring stiffness_n_per_m=12000");
}

// The rules of linear_spring.cpp (a non-finite number is refused for every field of a config by the
// config validator, before any component's rules).
TEST(LinearSpring, TheRulesRefuseAMissingOrNegativeStiffness) {
  config::Model model;
  model.mutable_spring()->set_stiffness_n_per_m(0.0);
  EXPECT_TRUE(problems_of(model).empty());
  model.mutable_spring()->set_stiffness_n_per_m(-1.0);
  EXPECT_EQ(problems_of(model),
            std::vector<std::string>{"specimen.spring.stiffness_n_per_m: is -1, expected a stiffness >= 0 N/m"});
  model.mutable_spring()->clear_stiffness_n_per_m();
  EXPECT_EQ(problems_of(model), std::vector<std::string>{"specimen.spring.stiffness_n_per_m: missing; expected the "
                                                         "spring stiffness (N/m, >= 0)"});
}

// ---------------------------------------------------------------------------------------------
// make_model and the digest

TEST(MakeModel, BuildsEachKindFromConfig) {
  config::Model spring_config;
  spring_config.mutable_spring()->set_stiffness_n_per_m(3.0e4);
  const auto spring = make_model(spring_config);
  EXPECT_EQ(spring->describe(), LinearSpring(3.0e4).describe());

  config::Model damper_config = config_of(model_a(3.0));
  // x0, n and substeps left at the schema defaults (0, 2, 4), which are model A's values.
  damper_config.mutable_bouc_wen()->clear_x0_m();
  damper_config.mutable_bouc_wen()->clear_n();
  damper_config.mutable_bouc_wen()->clear_substeps();
  const BoucWenDamper::Parameters a = model_a(3.0);
  const auto damper = make_model(damper_config);
  EXPECT_EQ(damper->describe(), BoucWenDamper(a).describe());
  EXPECT_EQ(model_digest(*damper), model_digest(BoucWenDamper(a)));
}

TEST(MakeModel, RejectsModelWithoutKind) {
  EXPECT_THROW(make_model(config::Model{}), std::invalid_argument);
}

TEST(ModelDigest, IsFnv1a64OfDescribe) {
  // The published FNV-1a 64 test vectors (empty string = offset basis, "a", "foobar"): both Smith
  // parts, possibly built by different compilers on different hosts, must compute the same hash.
  class Fixed final : public PredictionModel {
   public:
    explicit Fixed(std::string text) : text_(std::move(text)) {}
    double step(const InterfaceMotion& /*motion*/, double /*dt_s*/) override { return 0.0; }
    void reset() override {}
    [[nodiscard]] std::unique_ptr<PredictionModel> clone() const override { return std::make_unique<Fixed>(*this); }
    [[nodiscard]] std::string describe() const override { return text_; }
    [[nodiscard]] std::complex<double> dynamic_stiffness(double /*omega_rad_s*/) const override { return {}; }

   private:
    std::string text_;
  };
  EXPECT_EQ(model_digest(Fixed("")), 0xcbf29ce484222325ULL);
  EXPECT_EQ(model_digest(Fixed("a")), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(model_digest(Fixed("foobar")), 0x85944171f73967e8ULL);
}

// ---------------------------------------------------------------------------------------------
// BoucWenDamper

TEST(BoucWenDamper, DigestSeesEveryParameter) {
  const BoucWenDamper::Parameters a = model_a(0.0);
  const std::uint64_t nominal = model_digest(BoucWenDamper(a));
  EXPECT_EQ(nominal, model_digest(BoucWenDamper(model_a(0.0))));
  // Each of the 16 fields, nudged, must change the digest: a Smith pair differing in any one of
  // them would otherwise pass the handshake with different models.
  std::vector<BoucWenDamper::Parameters> changed(16, a);
  changed[0].alpha_a_n_per_m *= 1.001;
  changed[1].alpha_b_n_per_m_v *= 1.001;
  changed[2].c0a_ns_per_m *= 1.001;
  changed[3].c0b_ns_per_m_v *= 1.001;
  changed[4].c1a_ns_per_m *= 1.001;
  changed[5].c1b_ns_per_m_v *= 1.001;
  changed[6].k0_n_per_m *= 1.001;
  changed[7].k1_n_per_m *= 1.001;
  changed[8].x0_m = 1e-3;
  changed[9].gamma_per_m2 *= 1.001;
  changed[10].beta_per_m2 *= 1.001;
  changed[11].a *= 1.001;
  changed[12].n = 2.5;
  changed[13].eta_per_s *= 1.001;
  changed[14].voltage_v = 1.0;
  changed[15].substeps = 8;
  for (std::size_t i = 0; i < changed.size(); ++i) {
    EXPECT_NE(model_digest(BoucWenDamper(changed[i])), nominal) << "field " << i;
  }
  // A model B differs from A only in alpha_a and alpha_b (seed 002 Table 2).
  EXPECT_NE(model_digest(BoucWenDamper(model_b(3, 0.0))), nominal);
}

// The rules of bouc_wen_damper.cpp refuse what the equations cannot run with, each problem reported.
TEST(BoucWenDamper, TheRulesRefuseParametersTheEquationsCannotRun) {
  EXPECT_TRUE(problems_of(config_of(model_a(0.0))).empty());
  EXPECT_TRUE(problems_of(config_of(model_a(3.0))).empty());
  BoucWenDamper::Parameters p = model_a(0.0);
  p.substeps = 0;
  p.n = 0.5;                         // z|z|^(n-1) is singular at z = 0
  p.c1a_ns_per_m = -p.c0a_ns_per_m;  // c0 + c1 = 0 at 0 V: y' undefined
  p.eta_per_s = 0.0;                 // the voltage filter never reaches its command
  const std::vector<std::string> problems = problems_of(config_of(p));
  ASSERT_EQ(problems.size(), 4U) << ::testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("specimen.bouc_wen.c1a_ns_per_m: c0a_ns_per_m + c1a_ns_per_m is 0"), std::string::npos);
  EXPECT_NE(problems[1].find("specimen.bouc_wen.eta_per_s: is 0, expected > 0"), std::string::npos);
  EXPECT_NE(problems[2].find("specimen.bouc_wen.n: is 0.5, expected an exponent >= 1"), std::string::npos);
  EXPECT_NE(problems[3].find("specimen.bouc_wen.substeps: is 0, expected 1..1024"), std::string::npos);
  // z would run away after a reversal (gamma < 0) or grow without a plateau (gamma + beta < 0); more
  // substeps than any accuracy needs would only cost the step its time.
  p = model_a(0.0);
  p.gamma_per_m2 = -1.0;
  p.beta_per_m2 = -1.0;
  p.substeps = 1025;
  const std::vector<std::string> unbounded = problems_of(config_of(p));
  ASSERT_EQ(unbounded.size(), 3U) << ::testing::PrintToString(unbounded);
  EXPECT_NE(unbounded[0].find("specimen.bouc_wen.gamma_per_m2: is -1, expected >= 0"), std::string::npos);
  EXPECT_NE(unbounded[1].find("specimen.bouc_wen.beta_per_m2: gamma_per_m2 + beta_per_m2 is -2, expected >= 0"),
            std::string::npos);
  EXPECT_NE(unbounded[2].find("specimen.bouc_wen.substeps: is 1025, expected 1..1024"), std::string::npos);
  // c0 + c1 at the command voltage (3 V here) too.
  p = model_a(3.0);
  p.c1b_ns_per_m_v = -p.c1a_ns_per_m;
  const std::vector<std::string> at_voltage = problems_of(config_of(p));
  ASSERT_EQ(at_voltage.size(), 1U) << ::testing::PrintToString(at_voltage);
  EXPECT_NE(at_voltage[0].find("specimen.bouc_wen.voltage_v: gives c0 + c1 = -9894.1"), std::string::npos)
      << at_voltage[0];
  // An incomplete damper is one problem naming every missing parameter; none is then judged by its
  // default.
  config::Model incomplete;
  incomplete.mutable_bouc_wen()->set_n(2);
  incomplete.mutable_bouc_wen()->set_eta_per_s(-1);
  EXPECT_EQ(problems_of(incomplete),
            std::vector<std::string>{"specimen.bouc_wen: misses alpha_a_n_per_m, alpha_b_n_per_m_v, c0a_ns_per_m, "
                                     "c0b_ns_per_m_v, c1a_ns_per_m, c1b_ns_per_m_v, k0_n_per_m, k1_n_per_m, "
                                     "gamma_per_m2, beta_per_m2, a; every Bouc-Wen parameter must be given except "
                                     "x0_m, n, voltage_v and substeps (seed 002 Eqs. 12-14)"});
}

TEST(BoucWenDamper, AtRestGivesNoForceAndStaysAtRest) {
  BoucWenDamper damper(model_a(3.0));
  // y = z = 0, x = x0 = 0, x' = 0: every term of seed 002 Eq. 12 vanishes and every rate of
  // Eqs. 13-14 is zero (u starts at v), so the force is exactly 0 on every step.
  for (int k = 0; k < 1000; ++k) {
    ASSERT_EQ(damper.step(InterfaceMotion{}, 1.0 / kSeedRateHz), 0.0) << "step " << k;
  }
  EXPECT_EQ(damper.state().u_v, 3.0);
}

TEST(BoucWenDamper, ForceIsReadAfterTheStateCrossesTheStep) {
  // PredictionModel timing contract: the state advances under the held motion first, then Eq. 12
  // is evaluated with that state and the same motion. Recompute Eq. 12 by hand from the state the
  // damper reports after the step (y' from the force balance across c1, Spencer 1997).
  const BoucWenDamper::Parameters p = model_a(3.0);
  BoucWenDamper damper(p);
  const double x = 0.002;
  const double xdot = 0.05;
  const double f = damper.step(InterfaceMotion{x, xdot, 0.0}, 1.0 / kSeedRateHz);
  const BoucWenDamper::State s = damper.state();
  const double alpha = p.alpha_a_n_per_m + p.alpha_b_n_per_m_v * s.u_v;
  const double c0 = p.c0a_ns_per_m + p.c0b_ns_per_m_v * s.u_v;
  const double c1 = p.c1a_ns_per_m + p.c1b_ns_per_m_v * s.u_v;
  const double ydot = (alpha * s.z_m + c0 * xdot + p.k0_n_per_m * (x - s.y_m)) / (c0 + c1);
  const double expected = c1 * ydot + p.k1_n_per_m * (x - p.x0_m);
  ASSERT_NE(s.z_m, 0.0) << "the state must have moved";
  EXPECT_NEAR(f, expected, 1e-12 * std::abs(expected));
}

// Steps per run and start of the comparison window: 5 cycles of the sine, the last two compared
// after three cycles of settling (z saturates within the first cycle; see the E_f test for how
// little the slow y mode, k0 / (c0 + c1) ~ 0.06 s^-1, moves the numbers).
struct Window {
  std::size_t steps;
  std::size_t first;
};
Window five_cycles_last_two(double rate_hz, const Sine& sine) {
  const double steps_per_cycle = rate_hz / sine.frequency_hz;
  return Window{static_cast<std::size_t>(std::lround(5.0 * steps_per_cycle)),
                static_cast<std::size_t>(std::lround(3.0 * steps_per_cycle))};
}

struct ReferenceDifference {
  double at_1024_hz;
  double at_2048_hz;
};

ReferenceDifference difference_from_reference(const BoucWenDamper::Parameters& p, const Sine& sine) {
  auto at_rate = [&](double rate_hz) {
    const Window w = five_cycles_last_two(rate_hz, sine);
    return normalised_rms_difference(model_forces(p, sine, rate_hz, w.steps),
                                     reference_forces(p, sine, rate_hz, w.steps), w.first);
  };
  return ReferenceDifference{at_rate(kSeedRateHz), at_rate(2.0 * kSeedRateHz)};
}

// A case of model A by its damper voltage: At0V, At3V.
std::string voltage_name(const ::testing::TestParamInfo<double>& info) {
  return "At" + std::to_string(std::lround(info.param)) + "V";
}

class BoucWenAgainstReference : public ::testing::TestWithParam<double> {};

// Seed 002 Fig. 11 motion, model A. The model holds x and x' over each step (docs/architecture.md §3), so its
// state lags the continuously driven reference by about dt/2: the force difference is O(dt),
// about omega dt / 2 = 0.77 % of the force for a pure phase lag at 2.5 Hz and 1024 Hz. Measured:
// 1.05 % (0 V) and 0.82 % (3 V) at 1024 Hz, 0.52 % and 0.41 % at 2048 Hz, ratios 2.01 and 2.01.
// The 4 RK4 substeps themselves contribute ~1e-9 (compare with 256 substeps), so the hold is all
// of it. Bound 2.5 %: 2.4x the larger measurement; halving dt must at least nearly halve it.
TEST_P(BoucWenAgainstReference, MatchesIndependentFineIntegrationAndConvergesFirstOrder) {
  const double voltage_v = GetParam();
  const ReferenceDifference d = difference_from_reference(model_a(voltage_v), Sine{});
  std::printf(
      "[ measured ] model A %g V: normalised RMS difference from reference %.4f %% at "
      "1024 Hz, %.4f %% at 2048 Hz, ratio %.3f\n",
      voltage_v, 100.0 * d.at_1024_hz, 100.0 * d.at_2048_hz, d.at_1024_hz / d.at_2048_hz);
  EXPECT_LT(d.at_1024_hz, 0.025);
  EXPECT_GT(d.at_1024_hz / d.at_2048_hz, 1.8);
}

INSTANTIATE_TEST_SUITE_P(ModelA, BoucWenAgainstReference, ::testing::Values(0.0, 3.0), voltage_name);

TEST(BoucWenDamper, GeneralExponentPathMatchesReference) {
  // n != 2 takes the std::pow branch; the reference always uses std::pow. With n = 1.5 (gamma and
  // beta then in m^-1.5) z saturates at (A / (gamma + beta))^(1/n) = 16.6 mm, still on the
  // plateau for most of the 5 mm cycle. Same O(dt) argument as for n = 2: measured 1.29 % at
  // 1024 Hz, ratio 2.01; bound 3 % (2.3x).
  BoucWenDamper::Parameters p = model_a(0.0);
  p.n = 1.5;
  const ReferenceDifference d = difference_from_reference(p, Sine{});
  std::printf("[ measured ] n = 1.5, 0 V: %.4f %% at 1024 Hz, ratio %.3f\n", 100.0 * d.at_1024_hz,
              d.at_1024_hz / d.at_2048_hz);
  EXPECT_LT(d.at_1024_hz, 0.03);
  EXPECT_GT(d.at_1024_hz / d.at_2048_hz, 1.8);
  // And the pow branch at n = 2 (1 ulp above) is the fast branch to within the pow rounding:
  // |z|^(1 + 4e-16) differs from |z| by ~1e-15 relative.
  BoucWenDamper::Parameters near_two = model_a(0.0);
  near_two.n = std::nextafter(2.0, 3.0);
  const Window w = five_cycles_last_two(kSeedRateHz, Sine{});
  EXPECT_LT(normalised_rms_difference(model_forces(near_two, Sine{}, kSeedRateHz, w.steps),
                                      model_forces(model_a(0.0), Sine{}, kSeedRateHz, w.steps), w.first),
            1e-12);
}

// With z saturated at z_max = sqrt(A / (gamma + beta)) = 46.2 mm (n = 2, x' - y' and z of one
// sign), Spencer's y' equation gives F = c1 y' + k1 x ~ c1 / (c0 + c1) (alpha z_max + c0 x') with
// x ~ y ~ 0 at the velocity peak: 175.0 N at 0 V and 1953.2 N at 3 V on the 5 mm / 2.5 Hz sine
// (x'_max = 78.5 mm/s). Measured peaks: 175.5 N and 1953.4 N. The k0 (x - y) and k1 x terms
// are below 1 N, so 1 % is a safe bound for the estimate.
// Against seed 002 Fig. 11 (about +-150-200 N passive off, +-1000-1500 N passive on as read from
// the figure): 0 V is inside; 3 V is ~30 % above the figure because of the viscous c0 x' part
// (c0(3 V) = 10 kN s/m gives ~730 N at 78.5 mm/s). That is what Table 1's parameters give by
// Eqs. 12-14; the figure may have been drawn otherwise. Loose bounds accordingly.
TEST(BoucWenDamper, PeakForcesOnSeedSineMatchSaturatedEstimate) {
  const Sine sine;
  const Window w = five_cycles_last_two(kSeedRateHz, sine);
  for (const double voltage_v : {0.0, 3.0}) {
    const BoucWenDamper::Parameters p = model_a(voltage_v);
    const double peak_n = peak_abs(model_forces(p, sine, kSeedRateHz, w.steps), w.first);
    const double alpha = p.alpha_a_n_per_m + p.alpha_b_n_per_m_v * voltage_v;
    const double c0 = p.c0a_ns_per_m + p.c0b_ns_per_m_v * voltage_v;
    const double c1 = p.c1a_ns_per_m + p.c1b_ns_per_m_v * voltage_v;
    const double z_max_m = std::sqrt(p.a / (p.gamma_per_m2 + p.beta_per_m2));
    const double estimate_n = c1 / (c0 + c1) * (alpha * z_max_m + c0 * sine.amplitude_m * sine.omega());
    std::printf("[ measured ] model A peak |F| on 5 mm / 2.5 Hz at %g V: %.1f N (estimate %.1f N)\n", voltage_v, peak_n,
                estimate_n);
    EXPECT_NEAR(peak_n, estimate_n, 0.01 * estimate_n);
    if (voltage_v == 0.0) {
      EXPECT_GT(peak_n, 150.0);
      EXPECT_LT(peak_n, 200.0);
    } else {
      EXPECT_GT(peak_n, 1000.0);
      EXPECT_LT(peak_n, 2200.0);
    }
  }
}

// Seed 002 Eq. 15 for B1-B6 against A on the 5 mm / 2.5 Hz sine, steady state: 6 s run, the last
// five whole cycles (2048 steps). Runs of 4, 20 and 60 s give the same values to 0.01 points.
// Measured (percent):
//   0 V: -35.32 -23.86 -12.59 +12.88 +25.60 +38.56
//   3 V: -29.10 -19.91 -10.75  +8.94 +18.08 +28.01
// At 3 V Table 2's nominal -30 ... +30 % hold to within 2 points: asserted within 3 points.
// At 0 V they do not: every model overshoots its nominal level by 18-29 %. Passive off, the force is
// almost all alpha z (c0 x' is 7 % of it), and alpha = alpha_a there, so E_f approaches the
// relative change of alpha_a itself (-37.6 ... +42.3 %); the viscous part, common to A and B,
// only dilutes it. Asserted at 0 V: nominal <= |E_f| <= |delta alpha_a / alpha_a|. Table 2 looks
// calibrated at 3 V (or on another measure); the paper's "RMS -30 ... +30 %" labels are accurate
// only passive on.
TEST(BoucWenDamper, ModelsBGiveSeedForceErrorLevels) {
  const Sine sine;
  const std::size_t steps = std::size_t{6} * 1024;
  const std::size_t first = steps - 2048;
  for (const double voltage_v : {0.0, 3.0}) {
    const std::vector<double> f_a = model_forces(model_a(voltage_v), sine, kSeedRateHz, steps);
    std::printf("[ measured ] E_f at %g V:", voltage_v);
    double previous = -HUGE_VAL;
    for (std::size_t i = 0; i < kModelsB.size(); ++i) {
      const double e = force_error_percent(model_forces(model_b(i, voltage_v), sine, kSeedRateHz, steps), f_a, first);
      std::printf(" B%zu %+.2f", i + 1, e);
      const double nominal = kModelsB.at(i).nominal_error_percent;
      // Sign from Eq. 15's sgn[max f_B - max f_A]: a smaller alpha gives a smaller peak.
      EXPECT_EQ(e > 0.0, nominal > 0.0) << "B" << i + 1 << " at " << voltage_v << " V";
      // B1 ... B6 in order of increasing alpha give increasing E_f.
      EXPECT_GT(e, previous) << "B" << i + 1 << " at " << voltage_v << " V";
      previous = e;
      if (voltage_v == 3.0) {
        EXPECT_NEAR(e, nominal, 3.0) << "B" << i + 1;
      } else {
        const double alpha_a_change_percent = 100.0 * (kModelsB.at(i).alpha_a_n_per_cm - 35.84) / 35.84;
        EXPECT_GE(std::abs(e), std::abs(nominal)) << "B" << i + 1;
        EXPECT_LE(std::abs(e), std::abs(alpha_a_change_percent)) << "B" << i + 1;
      }
    }
    std::printf("\n");
  }
}

TEST(BoucWenDamper, ResetReproducesTheHistory) {
  BoucWenDamper damper(model_a(3.0));
  const Sine sine;
  const std::vector<double> first = model_forces(damper, sine, kSeedRateHz, 3000);
  damper.reset();
  // Same operations on the same inputs from the same state: bit-identical, no tolerance.
  EXPECT_EQ(model_forces(damper, sine, kSeedRateHz, 3000), first);
  EXPECT_EQ(damper.state().u_v, 3.0);
}

TEST(BoucWenDamper, CloneCarriesStateAndContinuesIdentically) {
  BoucWenDamper damper(model_a(0.0));
  const Sine sine;
  const double dt_s = 1.0 / kSeedRateHz;
  std::size_t k = 0;
  for (; k < 1500; ++k) {  // mid-cycle, hysteresis loaded: y and z far from their initial zeros
    const double t_s = static_cast<double>(k) * dt_s;
    damper.step(InterfaceMotion{sine.x(t_s), sine.xdot(t_s), 0.0}, dt_s);
  }
  ASSERT_GT(std::abs(damper.state().z_m), 0.01);
  const std::unique_ptr<PredictionModel> copy = damper.clone();
  EXPECT_EQ(copy->describe(), damper.describe());
  // Bit-identical continuation: the clone holds the same parameters and the same y, z, u.
  for (; k < 3000; ++k) {
    const double t_s = static_cast<double>(k) * dt_s;
    const InterfaceMotion motion{sine.x(t_s), sine.xdot(t_s), 0.0};
    ASSERT_EQ(copy->step(motion, dt_s), damper.step(motion, dt_s)) << "step " << k;
  }
  // And a fresh model differs from the loaded clone at once (the clone did copy the state).
  BoucWenDamper fresh(model_a(0.0));
  const InterfaceMotion motion{sine.x(0.0), sine.xdot(0.0), 0.0};
  EXPECT_NE(fresh.step(motion, dt_s), copy->step(motion, dt_s));
}

// Stiffness of z (seed 002 Eq. 13, n = 2, gamma = beta): on the plateau dz'/dz = -2 sqrt(A (gamma +
// beta)) |x' - y'| = -6691 s^-1 per m/s for model A. Classical RK4 is stable on the real axis for
// |lambda h| < 2.785, so with 4 substeps at 1024 Hz (h = 1/4096 s) the limit is about
// |x' - y'| = 1.7 m/s. Measured on 2.5 Hz and 1 Hz sines at 0 V and 3 V, against the same model
// with 256 substeps: normalised RMS difference <= 4e-7 up to 1.5 m/s, 3e-5 at 1.8 m/s, then
// 8e-3 ... 8e-2 at 2.0 m/s and 0.1 ... 1 beyond (bounded but wrong: z saturates); NaN or blow-up
// first near 5 m/s (0 V) and 13 m/s (3 V). (1 substep: accurate to 0.5 m/s; 2 substeps: to
// 0.9 m/s.) The El Centro x 0.2 runs of seed 002 reach ~0.1 m/s at floor 1: a margin of ~15.
class BoucWenAtSpeed : public ::testing::TestWithParam<double> {};

TEST_P(BoucWenAtSpeed, StaysFiniteAndAccurateUpTo1p5MetresPerSecond) {
  const double voltage_v = GetParam();
  for (const double speed_m_per_s : {0.5, 1.5}) {
    const Sine sine{speed_m_per_s / (2.0 * std::numbers::pi * 2.5), 2.5};
    const Window w = five_cycles_last_two(kSeedRateHz, sine);
    const std::vector<double> forces = model_forces(model_a(voltage_v), sine, kSeedRateHz, w.steps);
    for (const double f : forces) {
      ASSERT_TRUE(std::isfinite(f)) << speed_m_per_s << " m/s";
    }
    BoucWenDamper::Parameters fine = model_a(voltage_v);
    fine.substeps = 256;
    const double difference =
        normalised_rms_difference(forces, model_forces(fine, sine, kSeedRateHz, w.steps), w.first);
    std::printf("[ measured ] %g V, %g m/s: 4 vs 256 substeps %.2e\n", voltage_v, speed_m_per_s, difference);
    // 1e-5: ~25x the worst measurement below the limit, ~1000x below the error past it.
    EXPECT_LT(difference, 1e-5) << speed_m_per_s << " m/s";
  }
}

INSTANTIATE_TEST_SUITE_P(ModelA, BoucWenAtSpeed, ::testing::Values(0.0, 3.0), voltage_name);

}  // namespace
}  // namespace rths::test_prediction_models
