#pragma once

#include <memory>
#include <string>

#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// Phenomenological model of a magnetorheological damper (Spencer, Dyke, Sain, Carlson 1997,
// "Phenomenological model for magnetorheological dampers"; seed 002 Eqs. 12-14, Fig. 10; config
// BoucWenDamper):
// a Bouc-Wen element in parallel with a dashpot c0 and a spring k0, in series with a dashpot c1,
// plus an accumulator spring k1. States: the internal displacement y, the evolutionary variable z
// (a displacement here, so alpha is a stiffness) and the filtered voltage u.
//
// With the imposed x and x' held over a step (docs/architecture.md §3), the states are integrated by classical
// RK4 with `substeps` substeps. z's equation stiffens with speed: on its plateau (n = 2) its rate is
// -2 sqrt(A (gamma + beta)) |x' - y'|, and RK4 is stable for |rate h| < 2.785. For seed 002's
// dampers, 4 substeps at 1024 Hz are accurate (1e-7 against 256 substeps) up to |x' - y'| of about
// 1.8 m/s and bounded but wrong past it (tests/smith_predictor/unit/test_prediction_models.cpp); seed 002's El Centro
// x 0.2 runs stay near 0.1 m/s. Raise `substeps` for faster tests or larger A (gamma + beta).
class BoucWenDamper final : public PredictionModel {
 public:
  // Beyond this the RK4 error is far below rounding (4 substeps: 1e-7 up to 1.5 m/s at 1024 Hz; the
  // error falls as h^4) and the step's time is not: a step of 4 substeps takes about 290 ns
  // (docs/performance.md), and a run steps three such models.
  static constexpr unsigned kMaxSubsteps = 1024;

  // SI throughout: the seed's tables (N, cm) are converted once, in the example configs.
  struct Parameters {
    double alpha_a_n_per_m = 0.0;
    double alpha_b_n_per_m_v = 0.0;
    double c0a_ns_per_m = 0.0;
    double c0b_ns_per_m_v = 0.0;
    double c1a_ns_per_m = 0.0;
    double c1b_ns_per_m_v = 0.0;
    double k0_n_per_m = 0.0;
    double k1_n_per_m = 0.0;
    double x0_m = 0.0;
    double gamma_per_m2 = 0.0;
    double beta_per_m2 = 0.0;
    double a = 0.0;
    // Not in seed 002's tables; Spencer et al. 1997 use 2.
    double n = 2.0;
    double eta_per_s = 0.0;
    // Constant command voltage v of seed 002 Eq. 14.
    double voltage_v = 0.0;
    unsigned substeps = 4;
  };

  struct State {
    double y_m = 0.0;
    double z_m = 0.0;
    double u_v = 0.0;
  };

  // Parameters the rules of bouc_wen_damper.cpp accepted (docs/architecture.md §9): the equations
  // run with them (n >= 1: z|z|^(n-1) is regular at z = 0; eta > 0: the voltage filter converges;
  // c0 + c1 > 0 at the command voltage: y' divides by it; gamma >= 0 and gamma + beta >= 0: z stays
  // bounded; 1..kMaxSubsteps substeps).
  explicit BoucWenDamper(const Parameters& parameters);

  double step(const InterfaceMotion& motion, double dt_s) override;
  void reset() override;
  [[nodiscard]] std::unique_ptr<PredictionModel> clone() const override;
  [[nodiscard]] std::string describe() const override;
  // Linearised at rest (z small: dz/dt = A (x' - y')), at the command voltage:
  // F / X = k1 + c1 jw Y / X, Y / X = (alpha A + k0 + c0 jw) / (alpha A + k0 + (c0 + c1) jw).
  [[nodiscard]] std::complex<double> dynamic_stiffness(double omega_rad_s) const override;

  [[nodiscard]] const Parameters& parameters() const { return parameters_; }
  [[nodiscard]] const State& state() const { return state_; }

 private:
  struct Rates {
    double y_m_per_s;
    double z_m_per_s;
    double u_v_per_s;
  };

  // alpha, c0, c1 of seed 002 Eq. 14 at one filter state.
  struct Coefficients {
    double alpha_n_per_m;
    double c0_ns_per_m;
    double c1_ns_per_m;
    double inverse_c0_plus_c1;
  };

  [[nodiscard]] State initial_state() const;
  [[nodiscard]] Coefficients coefficients_at(double u_v) const;
  // at_command_ when u is at v.
  [[nodiscard]] Coefficients coefficients(double u_v) const;
  // Seed 002 Eq. 12 at the given state and motion.
  [[nodiscard]] double force_n(const State& state, double x_m, double xdot_m_per_s) const;
  // Seed 002 Eqs. 13-14 and Spencer 1997's y' equation; kNIsTwo skips std::pow.
  template <bool kNIsTwo>
  [[nodiscard]] Rates rates(const State& state, double x_m, double xdot_m_per_s) const;
  template <bool kNIsTwo>
  void advance(double x_m, double xdot_m_per_s, double dt_s);

  Parameters parameters_;
  bool n_is_two_;
  Coefficients at_command_;
  State state_;
};

}  // namespace rths
