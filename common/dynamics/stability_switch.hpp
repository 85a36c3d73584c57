#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rths::stability {

// The stability switch criterion of real-time hybrid simulation with a delayed feedback force:
// Maghareh, Dyke, Prakash & Rhoads 2014, "Establishing a stability switch criterion for effective
// implementation of real-time hybrid simulation" (seed 004; docs/stability.md). An SDOF reference
// structure M x'' + C x' + K x = -M a_g is split into a numerical part (alpha M, beta C, gamma K),
// integrated at once, and a physical part ((1 - alpha) M, (1 - beta) C, (1 - gamma) K) whose force
// comes back delayed by tau (Eq. 10). Its characteristic equation (Eq. 17) is
//   Gamma(s) = (alpha s^2 + 2 beta zeta s + gamma) + ((1 - alpha) s^2 + 2 (1 - beta) zeta s + (1 - gamma)) e^{-s Omega}
// in s = lambda / omega_n and the normalised delay Omega = tau omega_n. A root crosses the imaginary
// axis at s = j phi where both parts have the same magnitude (Eq. 25, a quadratic in phi^2) and the
// delay turns the physical part's phase onto the numerical part's (Eq. 27, quadrant by atan2).
//
// The fractions may lie outside [0, 1]: the loop a Smith predictor leaves delays only the model's
// error, a negative or a larger-than-reference part (smith_loop_partition); every formula holds for
// any real fractions. A planner checks user input with partition_problem first.
struct Partition {
  double alpha = 1.0;              // numerical share of the mass
  double beta = 1.0;               // numerical share of the damping
  double gamma = 0.0;              // numerical share of the stiffness
  double zeta = 0.05;              // the reference structure's damping ratio (> 0)
  double omega_n_rad_per_s = 1.0;  // the reference structure's natural frequency (> 0)
};

// One solution phi > 0 of Eq. 25 and the phase theta in [0, 2 pi) at which the delayed part lines up
// (Eq. 27 with atan2): the switches it gives are at Omega = (theta + 2 pi N) / phi, N = 0, 1, ...
struct Crossing {
  double phi = 0.0;        // omega_cr / omega_n
  double theta_rad = 0.0;  // tau_cr omega_cr of the first switch
  // The roots cross into the right half-plane as the delay grows (Cooke and van den Driessche: the
  // sign of d(|Gamma_n|^2 - |Gamma_p|^2)/d(omega) at the crossing); false: back into the left.
  bool destabilising = false;
};

// A delay at which a pair of roots crosses the imaginary axis.
struct Switch {
  double omega = 0.0;  // Omega = tau omega_n
  bool destabilising = false;
};

// A range of normalised delays with no root in the right half-plane; to_omega is infinite for the
// last window of a delay-independent tail.
struct StableWindow {
  double from_omega = 0.0;
  double to_omega = 0.0;
};

struct Stability {
  std::vector<Crossing> crossings;   // ascending phi
  std::vector<Switch> switches;      // ascending Omega, up to the analysis' omega_max
  std::vector<StableWindow> stable;  // where the count of right-half-plane roots is 0, from Omega 0
  // No crossing at all: stable at every delay (the "PSI = infinity" of seed 004 Section 5.1).
  bool delay_independent = false;
  // A delayed inertia larger than the undelayed one (|1 - alpha| > |alpha|, i.e. alpha < 0.5): the
  // neutral equation has infinitely many roots with real part ln(|1 - alpha| / |alpha|) / tau > 0,
  // unstable at every delay (Kyrychko, Blyuss, Gonzalez-Buelga, Hogan & Wagg 2006, Proc. R. Soc. A
  // 462:1271). Not in seed 004; omega_cr is then 0.
  bool neutral_unstable = false;
  double omega_cr = 0.0;  // the first destabilising switch (infinity: none)
  double tau_cr_s = 0.0;  // omega_cr / omega_n
};

// Eq. 25's roots, the switches up to omega_max (in Omega = tau omega_n; the first switch always, even
// beyond it) and the stable windows. The
// partition's numbers must be finite, zeta and omega_n positive.
Stability analyse(const Partition& p, double omega_max = 20.0);

// Eq. 25's coefficients (a2, a1, a0) of (1 - 2 alpha) u^2 + [4 (1 - 2 beta) zeta^2 - 2 (1 - alpha -
// gamma)] u + (1 - 2 gamma), u = phi^2: |Gamma_p(j phi)|^2 - |Gamma_n(j phi)|^2 per M^2 omega_n^4.
struct Quartic {
  double a2 = 0.0;
  double a1 = 0.0;
  double a0 = 0.0;
};
Quartic critical_frequency_equation(const Partition& p);

// |Gamma(j phi, Omega)| per M omega_n^2 (Eq. 17 normalised): 0 at a switch; for checks.
double characteristic_residual(const Partition& p, double phi, double omega);

// The band of gamma around alpha inside which the test is stable at every delay (Eqs. 28-29 with the
// square of seed 004's erratum: (gamma - alpha)^2 + 4 p (gamma - alpha) - 4 p (1 - 2 alpha - p) < 0,
// p = (1 - 2 beta) zeta^2); none when that quadratic has no real roots.
struct GammaBand {
  double low = 0.0;
  double high = 0.0;
};
std::optional<GammaBand> delay_independent_gamma_band(double alpha, double beta, double zeta);

// Seed 004 Section 3.3: a zero-order hold delays by half a sample, 1 / (2 f_s); the delay the
// transfer system may add is tau_m = tau_cr - tau_comm - 1 / (2 f_s) (Eq. 32; negative: none).
double zero_order_hold_delay_s(double sample_rate_hz);
double allowable_transfer_delay_s(double tau_cr_s, double tau_comm_s, double sample_rate_hz);
// The lowest sampling rate that keeps tau_comp + tau_comm + tau_ts below tau_cr: 1 / (2 (tau_cr -
// tau_comm - tau_ts)); infinity when no rate is enough.
double minimum_sample_rate_hz(double tau_cr_s, double tau_comm_s, double tau_ts_s);

// The inverse design of seed 004 Fig. 18: the gamma in [0, alpha) at which Omega_cr equals omega
// (bisection; Omega_cr grows with gamma there); none when no gamma of that range reaches it.
std::optional<double> gamma_boundary(double alpha, double beta, double zeta, double omega);

// The loop a modified Smith predictor leaves: the prediction model carries (1 + error) times the
// physical part's mass, damping and stiffness and acts at once; only the difference between the
// specimen and the model, -error times the physical part, comes back delayed. The zero-delay
// structure is the reference itself, so zeta and omega_n stay; the numerical shares become
// alpha + (1 + e_m)(1 - alpha), and so on. For a spring specimen k_s under a model k_s (1 + e) the
// delayed stiffness is -e k_s.
struct ModelError {
  double mass = 0.0;
  double damping = 0.0;
  double stiffness = 0.0;
};
Partition smith_loop_partition(const Partition& reference, const ModelError& error);

// A hand-entered partition's problem (alpha, beta, gamma in [0, 1], zeta and omega_n > 0, all finite):
// the field and what was expected; empty when it is fine.
std::optional<std::string> partition_problem(const Partition& p);

}  // namespace rths::stability
