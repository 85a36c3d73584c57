// The stability switch criterion of seed 004 (Maghareh, Dyke, Prakash & Rhoads 2014) against the
// digest's oracles O1-O21 and O24 (seed 004 digest, section 7: closed forms to 1e-6 relative, the
// paper's numbers to their printed rounding), against computations that share nothing with the
// library (the count of right-half-plane roots by the argument principle, the roots' velocity by
// implicit differentiation of Eq. 17) and, in virtual time, against an independent integrator of
// the delay equation whose free vibration must decay below every computed switch and grow above it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "common/dynamics/stability_switch.hpp"

namespace rths::stability::test_stability_switch {
namespace {

using Complex = std::complex<double>;

constexpr double kPi = std::numbers::pi;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// The digest's tolerance for its derived closed-form values (seed 004 digest, section 7).
constexpr double kRelative = 1e-6;

Partition normalised(double alpha, double beta, double gamma, double zeta) {
  return Partition{alpha, beta, gamma, zeta, 1.0};
}

// Seed 004 Table 3 (cases a and b share the partition; only the delay differs).
Partition table3(double zeta = 0.014) {
  return Partition{0.75, 0.82, 0.6, zeta, 32.9};
}

testing::AssertionResult near_relative(double actual, double expected, double tolerance = kRelative) {
  if (std::abs(actual - expected) <= tolerance * std::abs(expected)) return testing::AssertionSuccess();
  return testing::AssertionFailure() << actual << " is not " << expected << " within " << tolerance
                                     << " relative (off by " << (actual - expected) / expected << ")";
}

// A value printed with `decimals` decimals: the computed one must round to it.
testing::AssertionResult rounds_to(double actual, double printed, int decimals) {
  const double half_unit = 0.5 * std::pow(10.0, -decimals) * (1.0 + 1e-9);
  if (std::abs(actual - printed) <= half_unit) return testing::AssertionSuccess();
  return testing::AssertionFailure() << actual << " does not round to " << printed << " (" << decimals << " decimals)";
}

// ---- Independent computations -----------------------------------------------------------------

// Eq. 17 normalised by M omega_n^2, s = lambda / omega_n.
Complex numerical_part(const Partition& p, Complex s) {
  return p.alpha * s * s + 2.0 * p.beta * p.zeta * s + p.gamma;
}
Complex physical_part(const Partition& p, Complex s) {
  return (1.0 - p.alpha) * s * s + 2.0 * (1.0 - p.beta) * p.zeta * s + (1.0 - p.gamma);
}

// ds/dOmega of a root s of Gamma(s, Omega) = 0, by implicit differentiation of Eq. 17: its real part
// says which way the root crosses the imaginary axis as the delay grows, without the sign rule of
// Cooke and van den Driessche that the library uses.
Complex root_velocity(const Partition& p, Complex s, double omega) {
  const Complex delay = std::exp(-s * omega);
  const Complex d_numerical = 2.0 * p.alpha * s + 2.0 * p.beta * p.zeta;
  const Complex d_physical = 2.0 * (1.0 - p.alpha) * s + 2.0 * (1.0 - p.beta) * p.zeta;
  const Complex d_s = d_numerical + (d_physical - omega * physical_part(p, s)) * delay;
  const Complex d_omega = -s * physical_part(p, s) * delay;
  return -d_omega / d_s;
}

// The number of roots of Eq. 17 in the open right half-plane at the normalised delay omega, by the
// argument principle on f(s) = Gamma(s) / (s + 1)^2 along the imaginary axis. f has no pole there,
// f(0) = 1, and for large |s| f tends to alpha + (1 - alpha) e^{-s Omega}: a point of the disc around
// alpha of radius |1 - alpha| < |alpha| (alpha > 1/2), which never winds round 0 and stays within 90
// degrees of alpha's direction. With conjugate symmetry the count is -(change of arg f(j w), w from
// 0 to infinity) / pi, rounded. Valid for alpha > 1/2 only (not neutral-unstable).
int right_half_plane_roots(const Partition& p, double omega) {
  const auto f = [&](double w) {
    const Complex s(0.0, w);
    return (numerical_part(p, s) + physical_part(p, s) * std::exp(-s * omega)) / ((s + 1.0) * (s + 1.0));
  };
  // Far enough that the O(1/w) remainder of f (about 2 / w) is small against alpha - |1 - alpha| >= 0.1.
  constexpr double kLastFrequency = 200.0;
  constexpr double kLargestTurn = 0.2;  // rad per accepted step: the phase is unwrapped step by step
  // The delayed part turns by Omega dw per step: at most 0.1 rad, so no turn of 2 pi hides in a step.
  const double largest_step = std::min(0.05, 0.1 / std::max(1.0, omega));
  double w = 0.0;
  double step = largest_step;
  double turned = 0.0;
  Complex previous = f(0.0);
  while (w < kLastFrequency) {
    const Complex next = f(w + step);
    const double turn = std::arg(next / previous);
    if (std::abs(turn) > kLargestTurn && step > 1e-13) {
      step *= 0.5;
      continue;
    }
    turned += turn;
    previous = next;
    w += step;
    step = std::min(largest_step, 1.5 * step);
  }
  return static_cast<int>(std::lround(-turned / kPi));
}

// The first Omega at which a root enters the right half-plane, by scanning the argument-principle
// count and bisecting: infinity when none up to omega_max.
double first_unstable_delay(const Partition& p, double omega_max, double scan_step) {
  double low = 0.0;
  for (int k = 1; k * scan_step <= omega_max; ++k) {
    double high = k * scan_step;
    if (right_half_plane_roots(p, high) > 0) {
      for (int i = 0; i < 30; ++i) {  // 0.05 / 2^30: below 1e-9
        const double mid = 0.5 * (low + high);
        (right_half_plane_roots(p, mid) > 0 ? high : low) = mid;
      }
      return 0.5 * (low + high);
    }
    low = high;
  }
  return kInfinity;
}

bool in_stable_window(const Stability& s, double omega) {
  return std::any_of(s.stable.begin(), s.stable.end(),
                     [&](const StableWindow& w) { return omega >= w.from_omega && omega < w.to_omega; });
}

// The crossing whose switches include omega (the library's switches carry no phi).
const Crossing& crossing_of(const Stability& s, double omega) {
  const Crossing* best = &s.crossings.front();
  double best_distance = kInfinity;
  for (const Crossing& c : s.crossings) {
    const double turns = (omega * c.phi - c.theta_rad) / (2.0 * kPi);
    const double distance = std::abs(turns - std::round(turns));
    if (distance < best_distance) {
      best_distance = distance;
      best = &c;
    }
  }
  return *best;
}

// Partitions over Table 1's four cases and several damping ratios, plus the Table 3 and spring-only
// ones (seed 004 Table 1: Case I alpha free, beta 0.4, gamma 0.9; Case II alpha 0.9, beta 0.6, gamma
// free; Case III alpha free, beta 0.6, gamma 0.1; Case IV alpha 0.1, beta 0.4, gamma free).
std::vector<Partition> table1_grid(double smallest_alpha) {
  std::vector<Partition> out;
  for (const double zeta : {0.01, 0.02, 0.05, 0.1}) {
    for (int i = 0; i <= 10; ++i) {
      const double free = 0.1 * i;
      for (const Partition& p : {normalised(free, 0.4, 0.9, zeta), normalised(0.9, 0.6, free, zeta),
                                 normalised(free, 0.6, 0.1, zeta), normalised(0.1, 0.4, free, zeta)}) {
        if (p.alpha >= smallest_alpha) out.push_back(p);
      }
    }
    out.push_back(normalised(0.75, 0.82, 0.6, zeta));
    out.push_back(normalised(1.0, 1.0, 0.0, zeta));
  }
  return out;
}

std::string describe(const Partition& p) {
  return "alpha " + std::to_string(p.alpha) + " beta " + std::to_string(p.beta) + " gamma " + std::to_string(p.gamma) +
         " zeta " + std::to_string(p.zeta);
}

// ---- Oracles: Table 2, the experiment (O1-O4) ---------------------------------------------------

// Seed 004 Table 2: reference and numerical substructure (kg, N s/m, N/m).
constexpr double kMassKg = 98.4;
constexpr double kDampingNsPerM = 88.7;
constexpr double kStiffnessNPerM = 10.67e4;
constexpr double kNumericalMassKg = 73.8;
constexpr double kNumericalDampingNsPerM = 72.9;
constexpr double kNumericalStiffnessNPerM = 8e4;

Partition table2() {
  return Partition{kNumericalMassKg / kMassKg, kNumericalDampingNsPerM / kDampingNsPerM,
                   kNumericalStiffnessNPerM / kStiffnessNPerM,
                   kDampingNsPerM / (2.0 * std::sqrt(kStiffnessNPerM * kMassKg)), std::sqrt(kStiffnessNPerM / kMassKg)};
}

TEST(StabilitySwitch, Table2FractionsMatchThePaperAndTheDigest) {
  // O1: the digest's exact values and the paper's rounded {1.37 %, 32.9 rad/s, 0.75, 0.82, 0.75}.
  const Partition p = table2();
  EXPECT_TRUE(near_relative(p.omega_n_rad_per_s, 32.9294639));
  EXPECT_TRUE(near_relative(p.omega_n_rad_per_s / (2.0 * kPi), 5.24089));
  EXPECT_TRUE(near_relative(p.zeta, 0.01368718));
  EXPECT_TRUE(near_relative(p.alpha, 0.75));
  EXPECT_TRUE(near_relative(p.beta, 0.82187148));
  EXPECT_TRUE(near_relative(p.gamma, 0.74976570));
  EXPECT_TRUE(rounds_to(100.0 * p.zeta, 1.37, 2));
  EXPECT_TRUE(rounds_to(p.omega_n_rad_per_s, 32.9, 1));
  EXPECT_TRUE(rounds_to(p.alpha, 0.75, 2));
  EXPECT_TRUE(rounds_to(p.beta, 0.82, 2));
  EXPECT_TRUE(rounds_to(p.gamma, 0.75, 2));
  EXPECT_FALSE(partition_problem(p).has_value());
  // O2: tau = tau_COMP + tau_COMM + tau_TS = 0.12 + 0.24 + 14.4 ms ("approximated as 14.8 msec").
  const double tau_s = 0.12e-3 + 0.24e-3 + 14.4e-3;
  EXPECT_TRUE(rounds_to(tau_s * 1e3, 14.8, 1));
  EXPECT_TRUE(near_relative(tau_s * p.omega_n_rad_per_s, 0.486039));
  EXPECT_TRUE(rounds_to(tau_s * p.omega_n_rad_per_s, 0.49, 2));
}

TEST(StabilitySwitch, Table2ExperimentIsDelayIndependent) {
  // O3: no positive root of Eq. 25, so the experiment is stable at every delay ("PSI = infinity").
  const Partition p = table2();
  const Quartic q = critical_frequency_equation(p);
  EXPECT_TRUE(near_relative(q.a2, -0.5));
  EXPECT_TRUE(near_relative(q.a1, 0.9990490043));
  EXPECT_TRUE(near_relative(q.a0, -0.4995313964));
  EXPECT_TRUE(near_relative(q.a1 * q.a1 - 4.0 * q.a2 * q.a0, -9.6388e-4, 1e-4));
  const Stability s = analyse(p);
  EXPECT_TRUE(s.crossings.empty());
  EXPECT_TRUE(s.switches.empty());
  EXPECT_TRUE(s.delay_independent);
  EXPECT_FALSE(s.neutral_unstable);
  EXPECT_EQ(s.omega_cr, kInfinity);
  EXPECT_EQ(s.tau_cr_s, kInfinity);
  ASSERT_EQ(s.stable.size(), 1U);
  EXPECT_EQ(s.stable[0].from_omega, 0.0);
  EXPECT_EQ(s.stable[0].to_omega, kInfinity);
  // Eq. 28 with the square (erratum 3): (gamma - alpha)^2 = 5.4897e-8 < 2.41025e-4, so the partition
  // lies inside Eq. 29's band.
  const double lhs = (p.gamma - p.alpha) * (p.gamma - p.alpha);
  const double pz = (1.0 - 2.0 * p.beta) * p.zeta * p.zeta;
  const double rhs = 4.0 * pz * ((1.0 - p.alpha - p.gamma) - pz);
  EXPECT_TRUE(near_relative(lhs, 5.4897e-8, 1e-4));
  EXPECT_TRUE(near_relative(rhs, 2.41025e-4, 1e-5));
  const auto band = delay_independent_gamma_band(p.alpha, p.beta, p.zeta);
  ASSERT_TRUE(band.has_value());
  EXPECT_TRUE(band->low < p.gamma && p.gamma < band->high);
  // The argument principle agrees: no root in the right half-plane at the experiment's Omega = 0.486
  // nor at much longer delays.
  for (const double omega : {0.486039, 2.0, 7.0, 19.0}) {
    EXPECT_EQ(right_half_plane_roots(p, omega), 0) << "Omega " << omega;
  }
}

TEST(StabilitySwitch, RoundedTable2ParametersAreDelayIndependent) {
  // O4.
  const Partition p = Partition{0.75, 0.82, 0.75, 0.0137, 32.9};
  const Quartic q = critical_frequency_equation(p);
  EXPECT_TRUE(near_relative(q.a1, 0.9995195136));
  EXPECT_TRUE(near_relative(q.a1 * q.a1 - 4.0 * q.a2 * q.a0, -9.6074e-4, 1e-4));
  const Stability s = analyse(p);
  EXPECT_TRUE(s.delay_independent);
  EXPECT_EQ(s.omega_cr, kInfinity);
}

// ---- Oracles: the band of unconditional stability (O5, O11, O13) -------------------------------

TEST(StabilitySwitch, DelayIndependentBandOfTable2AndTable3) {
  // O5: alpha 0.75, beta 0.82 at zeta 0.0137 / Table 2's exact zeta and beta / 0.014.
  struct Case {
    double beta;
    double zeta;
    double low;
    double high;
  };
  const Partition exact = table2();
  for (const Case& c : {Case{0.82, 0.0137, 0.734740, 0.765740}, Case{exact.beta, exact.zeta, 0.734711, 0.765772},
                        Case{0.82, 0.014, 0.734412, 0.766090}}) {
    const auto band = delay_independent_gamma_band(0.75, c.beta, c.zeta);
    ASSERT_TRUE(band.has_value()) << "zeta " << c.zeta;
    EXPECT_TRUE(rounds_to(band->low, c.low, 6)) << "zeta " << c.zeta;
    EXPECT_TRUE(rounds_to(band->high, c.high, 6)) << "zeta " << c.zeta;
  }
  // Just outside the zeta = 0.014 band a crossing exists: gamma 0.7340 has Omega_cr = 1.9432.
  EXPECT_TRUE(rounds_to(analyse(normalised(0.75, 0.82, 0.7340, 0.014)).omega_cr, 1.9432, 4));
}

TEST(StabilitySwitch, DelayIndependentBandOfCaseII) {
  // O13: alpha 0.9, beta 0.6 (Fig. 9).
  struct Case {
    double zeta;
    double low;
    double high;
  };
  for (const Case& c : {Case{0.01, 0.892040, 0.908040}, Case{0.02, 0.884160, 0.916160}, Case{0.03, 0.876360, 0.924360},
                        Case{0.05, 0.861, 0.941}, Case{0.1, 0.824, 0.984}}) {
    const auto band = delay_independent_gamma_band(0.9, 0.6, c.zeta);
    ASSERT_TRUE(band.has_value()) << "zeta " << c.zeta;
    EXPECT_TRUE(rounds_to(band->low, c.low, 6)) << "zeta " << c.zeta;
    EXPECT_TRUE(rounds_to(band->high, c.high, 6)) << "zeta " << c.zeta;
  }
  // With beta < 0.5 there is no band (the digest's design corollary; Case I of O15).
  EXPECT_FALSE(delay_independent_gamma_band(0.9, 0.4, 0.05).has_value());
}

TEST(StabilitySwitch, BandEdgesAreWhereCrossingsAppear) {
  // The band (Eq. 29) and the crossings (Eq. 25) are computed separately by the library: just inside
  // the band there must be no crossing, just outside there must be one.
  for (const double alpha : {0.6, 0.75, 0.9}) {
    for (const double beta : {0.6, 0.82, 0.95}) {
      for (const double zeta : {0.01, 0.05, 0.1}) {
        const auto band = delay_independent_gamma_band(alpha, beta, zeta);
        ASSERT_TRUE(band.has_value());
        const double margin = 1e-6;
        for (const double inside : {band->low + margin, 0.5 * (band->low + band->high), band->high - margin}) {
          EXPECT_TRUE(analyse(normalised(alpha, beta, inside, zeta)).delay_independent)
              << describe(normalised(alpha, beta, inside, zeta));
        }
        for (const double outside : {band->low - margin, band->high + margin}) {
          EXPECT_FALSE(analyse(normalised(alpha, beta, outside, zeta)).delay_independent)
              << describe(normalised(alpha, beta, outside, zeta));
        }
      }
    }
  }
}

TEST(StabilitySwitch, CaseIIRegionsOfFigure8) {
  // O11: alpha 0.9, beta 0.6, zeta 0.05: one crossing for gamma <= 0.5, two for 0.5 < gamma < 0.861,
  // none for 0.861 < gamma < 0.941, two for 0.941 < gamma <= 1.
  struct Case {
    double gamma;
    std::size_t crossings;
  };
  for (const Case& c : {Case{0.0, 1}, Case{0.3, 1}, Case{0.5, 1}, Case{0.51, 2}, Case{0.7, 2}, Case{0.86, 2},
                        Case{0.862, 0}, Case{0.9, 0}, Case{0.94, 0}, Case{0.942, 2}, Case{1.0, 2}}) {
    const Stability s = analyse(normalised(0.9, 0.6, c.gamma, 0.05));
    EXPECT_EQ(s.crossings.size(), c.crossings) << "gamma " << c.gamma;
    EXPECT_EQ(s.delay_independent, c.crossings == 0) << "gamma " << c.gamma;
  }
}

// ---- Oracles: Table 3 (O6-O8, O24) ---------------------------------------------------------------

TEST(StabilitySwitch, Table3CrossingsAndCriticalDelay) {
  // O6.
  const Partition p = table3();
  const Stability s = analyse(p);
  ASSERT_EQ(s.crossings.size(), 2U);
  const Crossing& low = s.crossings[0];   // phi2 of the digest: stabilising
  const Crossing& high = s.crossings[1];  // phi1: destabilising, the first switch
  EXPECT_TRUE(near_relative(high.phi, 0.9991624465));
  EXPECT_TRUE(near_relative(high.theta_rad, 0.1864898971));
  EXPECT_TRUE(high.destabilising);
  EXPECT_TRUE(near_relative(low.phi, 0.6329856914));
  EXPECT_TRUE(near_relative(low.theta_rad, 3.1037445023));  // second quadrant: atan2, not atan
  EXPECT_FALSE(low.destabilising);
  EXPECT_TRUE(near_relative(low.theta_rad / low.phi, 4.9033406984));
  EXPECT_TRUE(near_relative(s.omega_cr, 0.1866462233));
  EXPECT_TRUE(near_relative(s.tau_cr_s, 5.673137e-3));
  EXPECT_FALSE(s.delay_independent);
  EXPECT_FALSE(s.neutral_unstable);
  // The paper's verdicts (Fig. 20): case a (Omega 0.49) unstable, case b (Omega 0.1) stable.
  EXPECT_FALSE(in_stable_window(s, 0.49));
  EXPECT_TRUE(in_stable_window(s, 0.1));
}

TEST(StabilitySwitch, Table3SwitchSequenceAndStableWindows) {
  // O7: to Omega = 20, with the directions (D: destabilising, S: stabilising).
  const Stability s = analyse(table3(), 20.0);
  struct Expected {
    double omega;
    bool destabilising;
  };
  const std::vector<Expected> expected{{0.186646, true},  {4.903341, false},  {6.475098, true},
                                       {12.763551, true}, {14.829608, false}, {19.052003, true}};
  ASSERT_EQ(s.switches.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(rounds_to(s.switches[i].omega, expected[i].omega, 6)) << "switch " << i;
    EXPECT_EQ(s.switches[i].destabilising, expected[i].destabilising) << "switch " << i;
  }
  ASSERT_EQ(s.stable.size(), 2U);
  EXPECT_EQ(s.stable[0].from_omega, 0.0);
  EXPECT_TRUE(rounds_to(s.stable[0].to_omega, 0.186646, 6));
  EXPECT_TRUE(rounds_to(s.stable[1].from_omega, 4.903341, 6));
  EXPECT_TRUE(rounds_to(s.stable[1].to_omega, 6.475098, 6));
  EXPECT_TRUE(in_stable_window(s, 5.7));
  EXPECT_FALSE(in_stable_window(s, 4.8));
  EXPECT_FALSE(in_stable_window(s, 6.6));
  EXPECT_FALSE(in_stable_window(s, 13.5));  // 4 roots in the right half-plane there
}

TEST(StabilitySwitch, Table3WithPaperDampingRatio) {
  // O8: zeta 0.0137 (Section 5.1's rounded value).
  const Stability s = analyse(table3(0.0137));
  EXPECT_TRUE(near_relative(s.omega_cr, 0.1826474604));
  EXPECT_TRUE(near_relative(s.tau_cr_s, 5.551595e-3));
}

TEST(StabilitySwitch, SmallDelayApproximationAndGrowthRate) {
  // O24: Omega_cr ~ 2 zeta / (alpha - gamma) = 0.186667 against the exact 0.186646, within 0.05 % over
  // gamma in [0, 0.7] for Table 3's alpha, beta, zeta (the digest's "0.05 %" is rounded: 0.0506 % at
  // gamma 0.7, so 0.06 % here).
  EXPECT_TRUE(rounds_to(2.0 * 0.014 / (0.75 - 0.6), 0.186667, 6));
  for (int i = 0; i <= 14; ++i) {
    const double gamma = 0.05 * i;
    const double approximation = 2.0 * 0.014 / (0.75 - gamma);
    EXPECT_TRUE(near_relative(analyse(normalised(0.75, 0.82, gamma, 0.014)).omega_cr, approximation, 6e-4))
        << "gamma " << gamma;
  }
  // The growth rate's slope d sigma / d tau = 1/2 (alpha - gamma) omega_n^2 = 81.18 s^-2: here from the
  // root velocity at the library's crossing (omega_n^2 Re ds/dOmega), to 1 %.
  const Partition p = table3();
  const Stability s = analyse(p);
  const Crossing& c = crossing_of(s, s.omega_cr);
  const double slope =
      p.omega_n_rad_per_s * p.omega_n_rad_per_s * root_velocity(p, Complex(0.0, c.phi), s.omega_cr).real();
  EXPECT_TRUE(rounds_to(0.5 * (0.75 - 0.6) * 32.9 * 32.9, 81.18, 2));
  EXPECT_TRUE(near_relative(slope, 81.18, 0.01)) << slope;
}

// ---- Oracles: Fig. 18's inverse design (O9, O10) -------------------------------------------------

TEST(StabilitySwitch, Figure18CurveOfCriticalDelays) {
  // O10: Omega_cr(gamma), alpha 0.75, beta 0.82, zeta 0.014.
  struct Point {
    double gamma;
    double omega_cr;
  };
  for (const Point& pt : {Point{0.0, 0.037333}, Point{0.2, 0.050909}, Point{0.4, 0.079998}, Point{0.5, 0.111995},
                          Point{0.6, 0.186646}, Point{0.65, 0.279936}, Point{0.69, 0.466448}, Point{0.7, 0.559716},
                          Point{0.72, 0.934755}, Point{0.73, 1.429705}, Point{0.77, 3.599567}, Point{0.8, 3.059573},
                          Point{0.9, 2.545705}, Point{1.0, 2.258463}}) {
    EXPECT_TRUE(rounds_to(analyse(normalised(0.75, 0.82, pt.gamma, 0.014)).omega_cr, pt.omega_cr, 6))
        << "gamma " << pt.gamma;
  }
  for (const double gamma : {0.74, 0.75, 0.76}) {
    const Stability s = analyse(normalised(0.75, 0.82, gamma, 0.014));
    EXPECT_TRUE(s.delay_independent) << "gamma " << gamma;
    EXPECT_EQ(s.omega_cr, kInfinity) << "gamma " << gamma;
  }
}

TEST(StabilitySwitch, Figure18FeasibleStiffnessShares) {
  // O9: the paper's 0.69 and 0.47 for Omega 0.49 and 0.1 (Fig. 18), the digest's 0.692885 and 0.470009
  // with zeta 0.014; 0.694109 and 0.476009 with zeta 0.0137.
  const auto wide = gamma_boundary(0.75, 0.82, 0.014, 0.49);
  const auto narrow = gamma_boundary(0.75, 0.82, 0.014, 0.1);
  ASSERT_TRUE(wide.has_value());
  ASSERT_TRUE(narrow.has_value());
  EXPECT_TRUE(rounds_to(*wide, 0.69, 2));
  EXPECT_TRUE(rounds_to(*narrow, 0.47, 2));
  EXPECT_TRUE(rounds_to(*wide, 0.692885, 6));
  EXPECT_TRUE(rounds_to(*narrow, 0.470009, 6));
  EXPECT_TRUE(rounds_to(*gamma_boundary(0.75, 0.82, 0.0137, 0.49), 0.694109, 6));
  EXPECT_TRUE(rounds_to(*gamma_boundary(0.75, 0.82, 0.0137, 0.1), 0.476009, 6));
  // At the boundary the critical delay is the measured one.
  EXPECT_TRUE(near_relative(analyse(normalised(0.75, 0.82, *wide, 0.014)).omega_cr, 0.49));
  // Every gamma in [0, alpha) is feasible below Omega_cr(0) = 0.037333: no boundary.
  EXPECT_FALSE(gamma_boundary(0.75, 0.82, 0.014, 0.03).has_value());
  // A neutral-unstable alpha has no feasible gamma.
  EXPECT_FALSE(gamma_boundary(0.4, 0.82, 0.014, 0.1).has_value());
}

// ---- Oracles: Table 1 cases (O12, O14-O18) --------------------------------------------------------

TEST(StabilitySwitch, CaseIICriticalDelays) {
  // O12: alpha 0.9, beta 0.6, zeta 0.05.
  struct Point {
    double gamma;
    double omega_cr;
  };
  for (const Point& pt : {Point{0.1, 0.1249156}, Point{0.5, 0.2493301}, Point{0.7, 0.4947824}, Point{0.9, kInfinity},
                          Point{0.95, 3.4076488}, Point{1.0, 2.993030}}) {
    const double omega_cr = analyse(normalised(0.9, 0.6, pt.gamma, 0.05)).omega_cr;
    if (pt.omega_cr == kInfinity) {
      EXPECT_EQ(omega_cr, kInfinity) << "gamma " << pt.gamma;
    } else {
      EXPECT_TRUE(rounds_to(omega_cr, pt.omega_cr, pt.gamma == 1.0 ? 6 : 7)) << "gamma " << pt.gamma;
    }
  }
}

TEST(StabilitySwitch, SpringOnlyPhysicalPart) {
  // O14: alpha = beta = 1, gamma = 0: the whole stiffness is physical; Omega_cr ~ 2 zeta.
  struct Point {
    double zeta;
    double omega_cr;
    double phi;
  };
  for (const Point& pt :
       {Point{0.01, 0.0200013, 0.99990}, Point{0.02, 0.0400107, 0.99960}, Point{0.05, 0.1001666, 0.99750}}) {
    const Stability s = analyse(normalised(1.0, 1.0, 0.0, pt.zeta));
    EXPECT_TRUE(rounds_to(s.omega_cr, pt.omega_cr, 7)) << "zeta " << pt.zeta;
    EXPECT_TRUE(rounds_to(crossing_of(s, s.omega_cr).phi, pt.phi, 5)) << "zeta " << pt.zeta;
  }
}

TEST(StabilitySwitch, CaseISwitchSequence) {
  // O15: alpha = gamma = 0.9, beta 0.4, zeta 0.05: 2.3218092 D (phi 1.02531), 4.00139 S, 8.44988 D,
  // 10.44362 S; no band.
  const Stability s = analyse(normalised(0.9, 0.4, 0.9, 0.05));
  const Quartic q = critical_frequency_equation(normalised(0.9, 0.4, 0.9, 0.05));
  EXPECT_TRUE(rounds_to(q.a1 * q.a1 - 4.0 * q.a2 * q.a0, 0.006404, 6));
  ASSERT_EQ(s.crossings.size(), 2U);
  ASSERT_GE(s.switches.size(), 4U);
  EXPECT_TRUE(rounds_to(s.omega_cr, 2.3218092, 7));
  EXPECT_TRUE(rounds_to(crossing_of(s, s.omega_cr).phi, 1.02531, 5));
  EXPECT_TRUE(rounds_to(s.switches[0].omega, 2.3218092, 7));
  EXPECT_TRUE(rounds_to(s.switches[1].omega, 4.00139, 5));
  EXPECT_TRUE(rounds_to(s.switches[2].omega, 8.44988, 5));
  EXPECT_TRUE(rounds_to(s.switches[3].omega, 10.44362, 5));
  EXPECT_TRUE(s.switches[0].destabilising);
  EXPECT_FALSE(s.switches[1].destabilising);
  EXPECT_TRUE(s.switches[2].destabilising);
  EXPECT_FALSE(s.switches[3].destabilising);
  EXPECT_TRUE(in_stable_window(s, 6.0));
}

TEST(StabilitySwitch, CaseIHighFrequencyCrossing) {
  // O16: alpha 0.6, beta 0.4, gamma 0.9, zeta 0.02: the first switch is at phi = 2.00053.
  const Stability s = analyse(normalised(0.6, 0.4, 0.9, 0.02));
  EXPECT_TRUE(rounds_to(s.omega_cr, 1.5650482, 7));
  EXPECT_TRUE(rounds_to(crossing_of(s, s.omega_cr).phi, 2.00053, 5));
}

TEST(StabilitySwitch, CaseIIICriticalDelays) {
  // O17: beta 0.6, gamma 0.1, zeta 0.02.
  EXPECT_TRUE(rounds_to(analyse(normalised(0.9, 0.6, 0.1, 0.02)).omega_cr, 0.0499946, 7));
  EXPECT_TRUE(rounds_to(analyse(normalised(0.6, 0.6, 0.1, 0.02)).omega_cr, 0.0799625, 7));
}

TEST(StabilitySwitch, NeutralPartitionIsUnstableAtEveryDelay) {
  // O18: Case IV, alpha 0.1: Eq. 25's only switch (Omega 6.04172) is stabilising, a red flag; the
  // neutral chain has Re(lambda) tau = ln 9 > 0, so the test is unstable at every delay.
  const Stability s = analyse(normalised(0.1, 0.4, 0.5, 0.05));
  EXPECT_TRUE(s.neutral_unstable);
  EXPECT_FALSE(s.delay_independent);
  EXPECT_EQ(s.omega_cr, 0.0);
  EXPECT_EQ(s.tau_cr_s, 0.0);
  EXPECT_TRUE(s.stable.empty());
  ASSERT_FALSE(s.switches.empty());
  EXPECT_TRUE(rounds_to(s.switches[0].omega, 6.04172, 5));
  EXPECT_FALSE(s.switches[0].destabilising);
  // Every alpha below 1/2 is neutral-unstable, every alpha above is not, whatever the crossings say
  // (including a partition inside no band and one with no crossing).
  for (const double alpha : {0.0, 0.2, 0.45, 0.499}) {
    EXPECT_TRUE(analyse(normalised(alpha, 0.6, 0.1, 0.05)).neutral_unstable) << "alpha " << alpha;
    EXPECT_TRUE(analyse(normalised(alpha, 0.9, alpha, 0.05)).neutral_unstable) << "alpha " << alpha;
  }
  for (const double alpha : {0.501, 0.6, 1.0, 1.2}) {
    EXPECT_FALSE(analyse(normalised(alpha, 0.6, 0.1, 0.05)).neutral_unstable) << "alpha " << alpha;
  }
}

// ---- Oracles: the delay budget (O19-O21) --------------------------------------------------------

TEST(StabilitySwitch, ZeroOrderHoldDelay) {
  // O19: 1 / (2 f_s); the paper's 0.12 ms at 4096 Hz.
  EXPECT_TRUE(rounds_to(zero_order_hold_delay_s(1024.0) * 1e3, 0.488281, 6));
  EXPECT_TRUE(rounds_to(zero_order_hold_delay_s(2048.0) * 1e3, 0.244141, 6));
  EXPECT_TRUE(rounds_to(zero_order_hold_delay_s(4096.0) * 1e3, 0.122070, 6));
  EXPECT_TRUE(rounds_to(zero_order_hold_delay_s(4096.0) * 1e3, 0.12, 2));
}

TEST(StabilitySwitch, AllowableTransferSystemDelayAndPhaseEnvelope) {
  // O20: tau_m = tau_cr - tau_COMM - 1 / (2 f_s) with Table 3's tau_cr and tau_COMM 0.24 ms; the
  // stability phase envelope -omega tau_m (Eq. 32) at 1, 5.24 and 10 Hz for f_s 1024 Hz.
  const double tau_cr_s = analyse(table3()).tau_cr_s;
  const double tau_m_1024 = allowable_transfer_delay_s(tau_cr_s, 0.24e-3, 1024.0);
  EXPECT_TRUE(rounds_to(tau_m_1024 * 1e3, 4.944856, 6));
  EXPECT_TRUE(rounds_to(allowable_transfer_delay_s(tau_cr_s, 0.24e-3, 4096.0) * 1e3, 5.311067, 6));
  const auto envelope_deg = [&](double f_hz) { return -360.0 * f_hz * tau_m_1024; };
  EXPECT_TRUE(rounds_to(envelope_deg(1.0), -1.7801, 4));
  EXPECT_TRUE(rounds_to(envelope_deg(5.24), -9.3280, 4));
  EXPECT_TRUE(rounds_to(envelope_deg(10.0), -17.8015, 4));
  // Nothing left for the transfer system: negative.
  EXPECT_LT(allowable_transfer_delay_s(0.5e-3, 0.24e-3, 1024.0), 0.0);
}

TEST(StabilitySwitch, MinimumSamplingRate) {
  // O21: tau_cr 5.673137 ms, tau_COMM 0.24 ms, tau_TS 5.0 ms: 1154.37 Hz.
  const double f_min = minimum_sample_rate_hz(5.673137e-3, 0.24e-3, 5.0e-3);
  EXPECT_TRUE(rounds_to(f_min, 1154.37, 2));
  // At that rate the budget closes exactly: tau_m equals tau_TS.
  EXPECT_TRUE(near_relative(allowable_transfer_delay_s(5.673137e-3, 0.24e-3, f_min), 5.0e-3, 1e-12));
  // No rate is enough when communication and transfer system already use up tau_cr.
  EXPECT_EQ(minimum_sample_rate_hz(5.673137e-3, 0.24e-3, 5.5e-3), kInfinity);
  EXPECT_EQ(minimum_sample_rate_hz(5.673137e-3, 0.673137e-3, 5.0e-3), kInfinity);
}

// ---- Independent checks over Table 1 --------------------------------------------------------------

TEST(StabilitySwitch, ResidualVanishesAtEverySwitchAndNowhereElse) {
  // Eq. 17 at s = j phi, Omega: 0 at every switch the library reports (the crossing's phi), clearly
  // not 0 a little off it in delay or frequency.
  int checked = 0;
  for (const Partition& p : table1_grid(0.0)) {
    const Stability s = analyse(p);
    for (const Switch& sw : s.switches) {
      const Crossing& c = crossing_of(s, sw.omega);
      EXPECT_LT(characteristic_residual(p, c.phi, sw.omega), 1e-9) << describe(p) << " Omega " << sw.omega;
      // Independently of the library's residual: Eq. 17 from this file's own parts.
      const Complex s_cr(0.0, c.phi);
      EXPECT_LT(std::abs(numerical_part(p, s_cr) + physical_part(p, s_cr) * std::exp(-s_cr * sw.omega)), 1e-9)
          << describe(p) << " Omega " << sw.omega;
      const double scale = std::abs(numerical_part(p, s_cr));
      EXPECT_GT(characteristic_residual(p, c.phi, sw.omega * 1.05 + 0.01), 1e-3 * scale) << describe(p);
      EXPECT_GT(characteristic_residual(p, c.phi * 1.05, sw.omega), 1e-3 * scale) << describe(p);
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(StabilitySwitch, DirectionIsTheWayTheRootsMove) {
  // The library's direction (the sign rule on Eq. 25) against the real part of ds/dOmega, for every
  // crossing of the grid (neutral ones included: the rule is about the crossing, not the count).
  int checked = 0;
  for (const Partition& p : table1_grid(0.0)) {
    const Stability s = analyse(p);
    for (const Crossing& c : s.crossings) {
      const double omega = c.theta_rad / c.phi;
      const double moving_right = root_velocity(p, Complex(0.0, c.phi), omega).real();
      EXPECT_EQ(c.destabilising, moving_right > 0.0)
          << describe(p) << " phi " << c.phi << " Re ds/dOmega " << moving_right;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(StabilitySwitch, StableWindowsAgreeWithTheArgumentPrinciple) {
  // Between consecutive switches the count of right-half-plane roots is constant; the library says
  // stable exactly where the argument principle counts none. Checked before the first switch, in every
  // gap, and just either side of Omega_cr; partitions with alpha >= 0.55 (not neutral-unstable).
  int checked = 0;
  for (const Partition& p : table1_grid(0.55)) {
    const Stability s = analyse(p, 12.0);
    std::vector<double> probes;
    double previous = 0.0;
    for (const Switch& sw : s.switches) {
      probes.push_back(0.5 * (previous + sw.omega));
      previous = sw.omega;
    }
    probes.push_back(previous + 0.5);
    if (std::isfinite(s.omega_cr)) {
      probes.push_back(0.99 * s.omega_cr);
      probes.push_back(1.01 * s.omega_cr);
      EXPECT_EQ(right_half_plane_roots(p, 1.01 * s.omega_cr), 2) << describe(p);
    }
    for (const double omega : probes) {
      if (omega > 12.0) continue;
      const int count = right_half_plane_roots(p, omega);
      EXPECT_EQ(count == 0, in_stable_window(s, omega)) << describe(p) << " Omega " << omega << " count " << count;
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

// ---- The loop a Smith predictor leaves ------------------------------------------------------------

TEST(StabilitySwitch, SmithLoopWithExactModelIsDelayIndependent) {
  // A model equal to the specimen cancels the delayed force: every share is 1, nothing is delayed,
  // and zeta and omega_n are the reference's.
  for (const Partition& reference : {table3(), table2(), normalised(0.9, 0.6, 0.1, 0.05),
                                     normalised(1.0, 1.0, 0.0, 0.02), normalised(0.6, 0.4, 0.9, 0.02)}) {
    const Partition loop = smith_loop_partition(reference, ModelError{});
    EXPECT_EQ(loop.alpha, 1.0);
    EXPECT_EQ(loop.beta, 1.0);
    EXPECT_EQ(loop.gamma, 1.0);
    EXPECT_EQ(loop.zeta, reference.zeta);
    EXPECT_EQ(loop.omega_n_rad_per_s, reference.omega_n_rad_per_s);
    const Stability s = analyse(loop);
    EXPECT_TRUE(s.delay_independent) << describe(reference);
    EXPECT_EQ(s.omega_cr, kInfinity);
    for (const double omega : {0.5, 5.0}) {
      EXPECT_EQ(right_half_plane_roots(loop, omega), 0) << describe(reference);
    }
  }
}

TEST(StabilitySwitch, SmithLoopDelaysOnlyTheModelError) {
  // The delayed share of each property is -error times the physical share: for a spring-only physical
  // part (alpha = beta = 1) the delayed stiffness is -e (1 - gamma).
  for (const double gamma : {0.0, 0.3, 0.8}) {
    for (const double e : {-0.5, -0.1, 0.1, 0.5}) {
      const Partition loop = smith_loop_partition(normalised(1.0, 1.0, gamma, 0.05), ModelError{0.0, 0.0, e});
      EXPECT_TRUE(near_relative(1.0 - loop.gamma, -e * (1.0 - gamma), 1e-12)) << "gamma " << gamma << " e " << e;
      EXPECT_EQ(loop.alpha, 1.0);
      EXPECT_EQ(loop.beta, 1.0);
    }
  }
  const Partition reference = table3();
  const Partition loop = smith_loop_partition(reference, ModelError{0.2, -0.1, 0.3});
  EXPECT_TRUE(near_relative(1.0 - loop.alpha, -0.2 * (1.0 - 0.75), 1e-12));
  EXPECT_TRUE(near_relative(1.0 - loop.beta, 0.1 * (1.0 - 0.82), 1e-12));
  EXPECT_TRUE(near_relative(1.0 - loop.gamma, -0.3 * (1.0 - 0.6), 1e-12));
}

TEST(StabilitySwitch, SmithLoopCriticalDelayAgainstTheArgumentPrinciple) {
  // Spring-only physical part with all the stiffness physical (gamma 0) and stiffness error e: the
  // delayed stiffness is kappa = -e. The first unstable delay found by scanning the argument-principle
  // count must be the library's Omega_cr, for either sign of e. A delayed spring can only destabilise
  // where |kappa| can equal |Gamma_n(j phi)|, whose least value is about 2 zeta: for |kappa| = 0.05 <
  // 2 zeta the loop is delay-independent for either sign of e. For kappa < 0 (a stiff model) the first
  // switch needs more than half a turn of phase (theta 3.4 to 3.8 rad): it is nowhere near
  // 2 zeta / |kappa|.
  const double zeta = 0.05;
  struct Case {
    double e;
    bool has_switch;
  };
  for (const Case& c : {Case{-0.05, false}, Case{0.05, false}, Case{-0.2, true}, Case{0.2, true}, Case{-0.5, true},
                        Case{0.5, true}, Case{-0.9, true}}) {
    const Partition loop = smith_loop_partition(normalised(1.0, 1.0, 0.0, zeta), ModelError{0.0, 0.0, c.e});
    const Stability s = analyse(loop, 10.0);
    const double independent = first_unstable_delay(loop, 10.0, 0.05);
    EXPECT_EQ(std::isfinite(independent), c.has_switch) << "e " << c.e;
    EXPECT_EQ(s.delay_independent, !c.has_switch) << "e " << c.e;
    if (c.has_switch) {
      EXPECT_TRUE(near_relative(s.omega_cr, independent, 1e-6)) << "e " << c.e;
    } else {
      EXPECT_EQ(s.omega_cr, kInfinity) << "e " << c.e;
    }
  }
  // For a soft model (kappa > 0) the small-delay formula 2 zeta / kappa becomes exact as zeta / kappa
  // shrinks (kappa 0.5: 1.1e-3 off at zeta 0.02, 1.1e-5 at zeta 0.002).
  double previous_error = kInfinity;
  for (const double small_zeta : {0.02, 0.01, 0.005, 0.002}) {
    const Partition soft = smith_loop_partition(normalised(1.0, 1.0, 0.0, small_zeta), ModelError{0.0, 0.0, -0.5});
    const double error = analyse(soft).omega_cr / (2.0 * small_zeta / 0.5) - 1.0;
    EXPECT_GT(error, 0.0) << "zeta " << small_zeta;
    EXPECT_LT(error, 0.5 * previous_error) << "zeta " << small_zeta;
    previous_error = error;
  }
  EXPECT_LT(previous_error, 2e-5);
}

TEST(StabilitySwitch, PartitionProblemNamesTheField) {
  EXPECT_FALSE(partition_problem(table3()).has_value());
  const auto starts_with = [](const std::optional<std::string>& message, const std::string& field) {
    return message.has_value() && message->starts_with(field + ":");
  };
  EXPECT_TRUE(starts_with(partition_problem(Partition{1.2, 0.5, 0.5, 0.05, 1.0}), "alpha"));
  EXPECT_TRUE(starts_with(partition_problem(Partition{0.5, -0.1, 0.5, 0.05, 1.0}), "beta"));
  EXPECT_TRUE(starts_with(partition_problem(Partition{0.5, 0.5, std::nan(""), 0.05, 1.0}), "gamma"));
  EXPECT_TRUE(starts_with(partition_problem(Partition{0.5, 0.5, 0.5, 0.0, 1.0}), "zeta"));
  EXPECT_TRUE(starts_with(partition_problem(Partition{0.5, 0.5, 0.5, 0.05, kInfinity}), "omega_n"));
}

// ---- Time domain: an independent integrator of the delay equation ---------------------------------

// Free vibration of the normalised delay equation (seed 004 Eq. 37 with h = 0; time in 1 / omega_n):
//   alpha x'' + 2 zeta beta x' + gamma x + (1 - alpha) x''(t - Omega) + 2 zeta (1 - beta) x'(t - Omega)
//   + (1 - gamma) x(t - Omega) = 0.
// The neutral term is carried by y(t) = alpha x(t) + (1 - alpha) x(t - Omega):
//   y'' = -[2 zeta beta x' + gamma x + 2 zeta (1 - beta) x'(t - Omega) + (1 - gamma) x(t - Omega)],
//   x = (y - (1 - alpha) x(t - Omega)) / alpha,  x' = (y' - (1 - alpha) x'(t - Omega)) / alpha,
// so RK4 integrates (y, y') and x, x' follow algebraically from the stored history: no delayed
// acceleration is needed, and the difference equation x(t) <- x(t - Omega) (the neutral chain) is exact.
// History: the structure held still at x = 1 (x' = 0) before its release at t = 0, as a test ramps
// to a displacement and holds it; x and x' are then continuous, and the jump of x'' at t = 0 (and its
// echoes at multiples of Omega) falls on step boundaries because the step divides Omega exactly.
// Delayed values at half steps (RK4's middle stages) come from the stored half-step history, which
// is filled after each step by cubic Hermite interpolation of y and y'.
class DelayEquation {
 public:
  DelayEquation(const Partition& p, double omega, double largest_step)
      : p_(p),
        delay_steps_(std::max(1L, static_cast<long>(std::ceil(omega / largest_step)))),
        h_(omega / static_cast<double>(delay_steps_)),
        x_(static_cast<std::size_t>(2 * delay_steps_ + 4), 1.0),
        v_(x_.size(), 0.0) {
    store(0, 1.0, 0.0);
  }

  [[nodiscard]] double step_size() const { return h_; }
  [[nodiscard]] double time() const { return static_cast<double>(steps_) * h_; }
  [[nodiscard]] double x() const { return x_[slot(2 * steps_)]; }

  void step() {
    const long k = 2 * steps_;  // half-step index of the current time
    const long back = 2 * delay_steps_;
    const double a0 = acceleration(y_, v_now_, k - back);
    const double y1 = y_ + 0.5 * h_ * v_now_;
    const double v1 = v_now_ + 0.5 * h_ * a0;
    const double a1 = acceleration(y1, v1, k + 1 - back);
    const double y2 = y_ + 0.5 * h_ * v1;
    const double v2 = v_now_ + 0.5 * h_ * a1;
    const double a2 = acceleration(y2, v2, k + 1 - back);
    const double y3 = y_ + h_ * v2;
    const double v3 = v_now_ + h_ * a2;
    const double a3 = acceleration(y3, v3, k + 2 - back);
    const double y_next = y_ + h_ / 6.0 * (v_now_ + 2.0 * v1 + 2.0 * v2 + v3);
    const double v_next = v_now_ + h_ / 6.0 * (a0 + 2.0 * a1 + 2.0 * a2 + a3);
    const double a_next = acceleration(y_next, v_next, k + 2 - back);
    // Cubic Hermite at the middle of the step: y from y and y', y' from y' and y''.
    const double y_mid = 0.5 * (y_ + y_next) + h_ / 8.0 * (v_now_ - v_next);
    const double v_mid = 0.5 * (v_now_ + v_next) + h_ / 8.0 * (a0 - a_next);
    store(k + 1, y_mid, v_mid);
    store(k + 2, y_next, v_next);
    y_ = y_next;
    v_now_ = v_next;
    ++steps_;
  }

 private:
  [[nodiscard]] std::size_t slot(long half_step) const {
    const auto n = static_cast<long>(x_.size());
    return static_cast<std::size_t>(((half_step % n) + n) % n);
  }
  // x and x' at a half-step index; before t = 0 the held history.
  [[nodiscard]] double delayed_x(long half_step) const { return half_step < 0 ? 1.0 : x_[slot(half_step)]; }
  [[nodiscard]] double delayed_v(long half_step) const { return half_step < 0 ? 0.0 : v_[slot(half_step)]; }

  [[nodiscard]] double acceleration(double y, double y_dot, long delayed_half_step) const {
    const double xd = delayed_x(delayed_half_step);
    const double vd = delayed_v(delayed_half_step);
    const double x = (y - (1.0 - p_.alpha) * xd) / p_.alpha;
    const double v = (y_dot - (1.0 - p_.alpha) * vd) / p_.alpha;
    return -(2.0 * p_.zeta * p_.beta * v + p_.gamma * x + 2.0 * p_.zeta * (1.0 - p_.beta) * vd + (1.0 - p_.gamma) * xd);
  }

  void store(long half_step, double y, double y_dot) {
    const long back = half_step - 2 * delay_steps_;
    x_[slot(half_step)] = (y - (1.0 - p_.alpha) * delayed_x(back)) / p_.alpha;
    v_[slot(half_step)] = (y_dot - (1.0 - p_.alpha) * delayed_v(back)) / p_.alpha;
  }

  Partition p_;
  long delay_steps_;
  double h_;
  // x and x' at half steps, a ring over the last Omega and a little more.
  std::vector<double> x_;
  std::vector<double> v_;
  long steps_ = 0;
  double y_ = 1.0;      // alpha x(0) + (1 - alpha) x(-Omega) = 1
  double v_now_ = 0.0;  // y'(0)
};

// The largest step of the integrator (in 1 / omega_n): 300 steps per period at phi = 1, 150 at the
// highest crossing here (phi = 2); RK4's own amplitude error per period is then ~1e-12, far below the
// growth rates measured (>= 1e-4 per unit time).
constexpr double kLargestStep = 0.02;
// A response above this has grown beyond doubt (the neutral chain's runs stop there).
constexpr double kOverflow = 1e9;

struct Envelope {
  double early = 0.0;  // max |x| over the early window
  double late = 0.0;   // max |x| over the late window
  [[nodiscard]] double ratio() const { return late / early; }
};

// Runs the free vibration to `duration` and returns the peak |x| over [window, 2 window] (the first
// window lets the fast non-dominant roots die out) and over [duration - window, duration].
Envelope envelope(const Partition& p, double omega, double duration, double window) {
  DelayEquation eq(p, omega, kLargestStep);
  Envelope out;
  while (eq.time() < duration) {
    eq.step();
    const double t = eq.time();
    const double x = std::abs(eq.x());
    if (!(x < kOverflow)) {
      out.late = kInfinity;
      if (out.early == 0.0) out.early = 1.0;
      return out;
    }
    if (t >= window && t <= 2.0 * window) out.early = std::max(out.early, x);
    if (t >= duration - window) out.late = std::max(out.late, x);
  }
  return out;
}

// The growth rate (per unit normalised time) by a least-squares line through the logarithms of the
// positive peaks of x after `from`.
double measured_rate(const Partition& p, double omega, double from, double duration) {
  DelayEquation eq(p, omega, kLargestStep);
  double before = 1.0;
  double now = 1.0;
  double sum_t = 0.0;
  double sum_l = 0.0;
  double sum_tt = 0.0;
  double sum_tl = 0.0;
  int n = 0;
  while (eq.time() < duration) {
    eq.step();
    const double after = eq.x();
    if (eq.time() - eq.step_size() > from && now > before && now >= after && now > 0.0) {
      const double t = eq.time() - eq.step_size();
      const double l = std::log(now);
      sum_t += t;
      sum_l += l;
      sum_tt += t * t;
      sum_tl += t * l;
      ++n;
    }
    before = now;
    now = after;
  }
  return (n * sum_tl - sum_t * sum_l) / (n * sum_tt - sum_t * sum_t);
}

// How long a run must be to see the switch: near Omega_cr the pair's growth rate is about
// Re(ds/dOmega) (Omega - Omega_cr) (with the small-delay approximation 1/2 (alpha - gamma)
// (Omega - Omega_cr), about 0.1 zeta at +-10 % of 2 zeta / (alpha - gamma): for zeta 0.01 a factor 8 in
// the envelope takes ~2000 / omega_n, some 330 periods). The run gives the envelope a predicted change
// of a factor 8 between the two windows, plus the two windows, and the test asks for a factor 2: a
// margin of 3 on the rate against the curvature of sigma(Omega).
struct Plan {
  double window = 0.0;
  double duration = 0.0;
  double predicted_rate = 0.0;  // |sigma| at +-10 %, per unit normalised time
};

Plan plan_for(const Partition& p, const Stability& s) {
  const Crossing& c = crossing_of(s, s.omega_cr);
  const double rate = std::abs(root_velocity(p, Complex(0.0, c.phi), s.omega_cr).real()) * 0.1 * s.omega_cr;
  Plan plan;
  plan.window = 3.0 * 2.0 * kPi / c.phi;
  plan.predicted_rate = rate;
  plan.duration = 2.0 * plan.window + std::log(8.0) / rate;
  return plan;
}

constexpr double kDetectable = 2.0;  // the envelope factor a run must show

struct Named {
  const char* name;
  Partition p;
};

void expect_switch_confirmed(const Named& c) {
  SCOPED_TRACE(std::string(c.name) + ": " + describe(c.p));
  const Stability s = analyse(c.p);
  ASSERT_FALSE(s.neutral_unstable);
  ASSERT_TRUE(std::isfinite(s.omega_cr));
  const Plan plan = plan_for(c.p, s);
  ASSERT_LT(plan.duration, 6000.0) << "the run would be too long";
  const Envelope below = envelope(c.p, 0.9 * s.omega_cr, plan.duration, plan.window);
  const Envelope above = envelope(c.p, 1.1 * s.omega_cr, plan.duration, plan.window);
  EXPECT_LT(below.ratio(), 1.0 / kDetectable)
      << "0.9 Omega_cr = " << 0.9 * s.omega_cr << " must decay over " << plan.duration;
  EXPECT_GT(above.ratio(), kDetectable) << "1.1 Omega_cr = " << 1.1 * s.omega_cr << " must grow over " << plan.duration;
}

TEST(StabilitySwitchTimeDomain, IntegratorReproducesTheUndelayedFreeVibration) {
  // With no delay the equation is the reference SDOF: x = e^{-zeta t} (cos w_d t + zeta / sqrt(1 -
  // zeta^2) sin w_d t). Omega tiny and the delayed share zero (alpha = beta = gamma = 1) is exactly that.
  const double zeta = 0.05;
  DelayEquation eq(normalised(1.0, 1.0, 1.0, zeta), 0.01, kLargestStep);
  const double wd = std::sqrt(1.0 - zeta * zeta);
  double error = 0.0;
  while (eq.time() < 50.0) {
    eq.step();
    const double t = eq.time();
    const double exact = std::exp(-zeta * t) * (std::cos(wd * t) + zeta / wd * std::sin(wd * t));
    error = std::max(error, std::abs(eq.x() - exact));
  }
  EXPECT_LT(error, 1e-9);
}

TEST(StabilitySwitchTimeDomain, IntegratorMatchesTheDigestsGrowthRates) {
  // O7's DDE simulation (Table 3, omega_n 32.9 rad/s): sigma(4.8) = +0.155, sigma(5.0) = -0.133,
  // sigma(6.4) = -0.143, sigma(6.6) = +0.225 s^-1 either side of the re-stabilised window, within 10 %.
  const Partition p = table3();
  struct Point {
    double omega;
    double sigma_per_s;
  };
  for (const Point& pt : {Point{4.8, 0.155}, Point{5.0, -0.133}, Point{6.4, -0.143}, Point{6.6, 0.225}}) {
    const double rate = measured_rate(p, pt.omega, 100.0, 1500.0) * p.omega_n_rad_per_s;
    EXPECT_TRUE(near_relative(rate, pt.sigma_per_s, 0.1)) << "Omega " << pt.omega << " sigma " << rate;
  }
}

TEST(StabilitySwitchTimeDomain, CaseISwitchesConfirmed) {
  for (const Named& c :
       {Named{"O16", normalised(0.6, 0.4, 0.9, 0.02)}, Named{"I-0.6", normalised(0.6, 0.4, 0.9, 0.05)},
        Named{"I-0.75", normalised(0.75, 0.4, 0.9, 0.02)}, Named{"O15", normalised(0.9, 0.4, 0.9, 0.05)},
        Named{"I-0.9", normalised(0.9, 0.4, 0.9, 0.1)}, Named{"I-1", normalised(1.0, 0.4, 0.9, 0.05)}}) {
    expect_switch_confirmed(c);
  }
}

TEST(StabilitySwitchTimeDomain, CaseIISwitchesConfirmed) {
  for (const Named& c :
       {Named{"II-0", normalised(0.9, 0.6, 0.0, 0.1)}, Named{"O12-0.1", normalised(0.9, 0.6, 0.1, 0.05)},
        Named{"II-0.3", normalised(0.9, 0.6, 0.3, 0.01)}, Named{"O12-0.5", normalised(0.9, 0.6, 0.5, 0.05)},
        Named{"O12-0.7", normalised(0.9, 0.6, 0.7, 0.05)}, Named{"II-0.8", normalised(0.9, 0.6, 0.8, 0.02)},
        Named{"O12-0.95", normalised(0.9, 0.6, 0.95, 0.05)}, Named{"O12-1", normalised(0.9, 0.6, 1.0, 0.05)}}) {
    expect_switch_confirmed(c);
  }
}

TEST(StabilitySwitchTimeDomain, CaseIIISwitchesConfirmed) {
  for (const Named& c :
       {Named{"III-0.55", normalised(0.55, 0.6, 0.1, 0.1)}, Named{"O17-0.6", normalised(0.6, 0.6, 0.1, 0.02)},
        Named{"III-0.75", normalised(0.75, 0.6, 0.1, 0.05)}, Named{"O17-0.9", normalised(0.9, 0.6, 0.1, 0.02)},
        Named{"III-1", normalised(1.0, 0.6, 0.1, 0.01)}}) {
    expect_switch_confirmed(c);
  }
}

TEST(StabilitySwitchTimeDomain, Table3SpringOnlyAndSmithLoopSwitchesConfirmed) {
  for (const Named& c :
       {Named{"O6", normalised(0.75, 0.82, 0.6, 0.014)}, Named{"O8", normalised(0.75, 0.82, 0.6, 0.0137)},
        Named{"O10-0", normalised(0.75, 0.82, 0.0, 0.014)}, Named{"O10-0.73", normalised(0.75, 0.82, 0.73, 0.014)},
        Named{"O10-0.8", normalised(0.75, 0.82, 0.8, 0.014)}, Named{"O14-0.01", normalised(1.0, 1.0, 0.0, 0.01)},
        Named{"O14-0.05", normalised(1.0, 1.0, 0.0, 0.05)},
        Named{"Smith stiff model", smith_loop_partition(normalised(1.0, 1.0, 0.0, 0.05), ModelError{0.0, 0.0, 0.5})},
        Named{"Smith soft model", smith_loop_partition(normalised(1.0, 1.0, 0.0, 0.05), ModelError{0.0, 0.0, -0.5})},
        Named{"Smith heavy soft model", smith_loop_partition(table3(), ModelError{0.2, 0.2, -0.3})},
        Named{"Smith light stiff model", smith_loop_partition(table3(), ModelError{-0.2, -0.2, 0.3})}}) {
    expect_switch_confirmed(c);
  }
}

TEST(StabilitySwitchTimeDomain, ReStabilisedWindowsDecay) {
  // O7: Table 3 is stable again for 4.903341 < Omega < 6.475098; O15: Case I (alpha = gamma = 0.9, beta
  // 0.4, zeta 0.05) for 4.00139 < Omega < 8.44988. Inside: decay; just outside: growth.
  struct Probe {
    Partition p;
    double omega;
    bool stable;
    double duration;
  };
  for (const Probe& probe :
       {Probe{table3(), 5.7, true, 1500.0}, Probe{table3(), 4.8, false, 1500.0}, Probe{table3(), 6.6, false, 1500.0},
        Probe{normalised(0.9, 0.4, 0.9, 0.05), 6.2, true, 1000.0},
        Probe{normalised(0.9, 0.4, 0.9, 0.05), 3.5, false, 1000.0},
        Probe{normalised(0.9, 0.4, 0.9, 0.05), 9.0, false, 1000.0}}) {
    ASSERT_EQ(in_stable_window(analyse(probe.p), probe.omega), probe.stable);
    const Envelope e = envelope(probe.p, probe.omega, probe.duration, 20.0);
    if (probe.stable) {
      EXPECT_LT(e.ratio(), 1.0 / kDetectable) << describe(probe.p) << " Omega " << probe.omega;
    } else {
      EXPECT_GT(e.ratio(), kDetectable) << describe(probe.p) << " Omega " << probe.omega;
    }
  }
}

TEST(StabilitySwitchTimeDomain, NeutralPartitionsGrowAtAnyDelay) {
  // O18 (Case IV, alpha 0.1) below its only (stabilising) switch 6.04, and Case I / III partitions
  // with alpha < 1/2 at small delays where Eq. 25 alone would call them stable: the neutral chain grows
  // by (1 - alpha) / alpha every Omega.
  struct Probe {
    Partition p;
    double omega;
  };
  for (const Probe& probe : {Probe{normalised(0.1, 0.4, 0.5, 0.05), 0.05}, Probe{normalised(0.1, 0.4, 0.5, 0.05), 1.0},
                             Probe{normalised(0.1, 0.4, 0.5, 0.05), 5.0}, Probe{normalised(0.4, 0.6, 0.1, 0.05), 0.02},
                             Probe{normalised(0.3, 0.4, 0.9, 0.05), 0.2}}) {
    ASSERT_TRUE(analyse(probe.p).neutral_unstable);
    const Envelope e = envelope(probe.p, probe.omega, 400.0, 20.0);
    EXPECT_GT(e.ratio(), 1e3) << describe(probe.p) << " Omega " << probe.omega;
  }
}

TEST(StabilitySwitchTimeDomain, DelayIndependentExperimentDecaysAtAnyDelay) {
  // O3: seed 004 Table 2's partition is stable at every delay ("PSI = infinity"): its free vibration
  // decays at the experiment's Omega = 0.486 and at long delays alike.
  for (const double omega : {0.486039, 3.0, 12.0}) {
    const Envelope e = envelope(table2(), omega, 1500.0, 20.0);
    EXPECT_LT(e.ratio(), 1.0 / kDetectable) << "Omega " << omega;
  }
}

}  // namespace
}  // namespace rths::stability::test_stability_switch
