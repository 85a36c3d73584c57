// The maRTHS benchmark's control plant (node_physical/two_actuator_frame_plant.hpp): the nominal
// model's static gains and frequency response against seed 000's digest; the discrete plant's
// readings at every tick against the continuous step and impulse responses computed here from the
// poles' residues (a zero-order hold is exact for a held command); steady sines against H(j w) with
// the hold's half step, and nothing more (a reading after the command acted is a step early); the
// first reading at rest; seeded sensor noise; the uncertainty's spreads, shared frame draw, kept
// static gains and redraws; refusals; the report; no allocation in a step.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/random.hpp"
#include "experiment.pb.h"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/plants/two_actuator_frame_plant.hpp"
#include "results.pb.h"
#include "support/alloc_counter.hpp"
#include "support/marths_plant.hpp"
#include "support/test_support.hpp"

namespace rths::test_two_actuator_frame_plant {
namespace {

using Complex = std::complex<double>;
using std::numbers::pi;
using test::marths_nominal_plant;
using test::marths_nominal_plant_config;

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;
constexpr double kDeg = 180.0 / pi;

// One entry H_ij as gain, zeros and poles, written out here from seed 000 Eqs. 20 and 25-26 (not
// through FramePlantModel::response), so that the plant's realisation is checked against the
// factored form it came from.
struct Entry {
  double gain = 0.0;
  std::vector<Complex> zeros;
  std::vector<Complex> poles;
};

Entry entry(const FramePlantModel& m, int i, int j) {
  using M = FramePlantModel;
  const auto& t = m.theta;
  Entry e;
  const Complex frame(-t[M::kC1], t[M::kC2]);
  if (j == 0) {
    e.gain = m.gain[i == 0 ? M::kK11 : M::kK21];
    e.zeros = {-t[M::kB1], -t[M::kB2]};
    e.poles = {-t[M::kA1], -t[M::kA2], frame, std::conj(frame)};
  } else {
    e.gain = m.gain[i == 0 ? M::kK12 : M::kK22];
    e.zeros = {-t[i == 0 ? M::kP1 : M::kP2]};
    e.poles = {-t[M::kD1], -t[M::kD2], frame, std::conj(frame)};
  }
  return e;
}

Complex evaluate(const Entry& e, Complex s) {
  Complex h = e.gain;
  for (const Complex z : e.zeros) h *= s - z;
  for (const Complex p : e.poles) h /= s - p;
  return h;
}

// Residue of H at its simple pole r: gain prod(r - z) / prod over the other poles (r - q).
Complex residue(const Entry& e, std::size_t pole) {
  const Complex r = e.poles[pole];
  Complex value = e.gain;
  for (const Complex z : e.zeros) value *= r - z;
  for (std::size_t q = 0; q < e.poles.size(); ++q) {
    if (q != pole) value /= r - e.poles[q];
  }
  return value;
}

// Unit step response y(t) = H(0) + sum_r Res_r e^{r t} / r and its derivative, the impulse
// response sum_r Res_r e^{r t} (every entry has more poles than zeros and simple poles).
double step_response(const Entry& e, double t) {
  Complex y = evaluate(e, 0.0);
  for (std::size_t r = 0; r < e.poles.size(); ++r) y += residue(e, r) * std::exp(e.poles[r] * t) / e.poles[r];
  return y.real();
}
double impulse_response(const Entry& e, double t) {
  Complex y = 0.0;
  for (std::size_t r = 0; r < e.poles.size(); ++r) y += residue(e, r) * std::exp(e.poles[r] * t);
  return y.real();
}

config::SensorNoise noise(double sd_m, std::uint64_t seed) {
  config::SensorNoise n;
  n.set_displacement_sd_m(sd_m);
  n.set_seed(seed);
  return n;
}

std::unique_ptr<TwoActuatorFramePlant> nominal_plant(double noise_sd_m = 0.0, std::uint64_t seed = 1) {
  return std::make_unique<TwoActuatorFramePlant>(marths_nominal_plant(), noise(noise_sd_m, seed), kRateHz);
}

// One step with two stroke commands (m).
std::array<Measurement, 2> exchange(PlantDriver& plant, double u0, double u1) {
  std::array<InterfaceMotion, 2> commands{};
  commands[0].displacement_m = u0;
  commands[1].displacement_m = u1;
  std::array<Measurement, 2> measured{};
  EXPECT_TRUE(plant.exchange(commands, measured, kDt)) << plant.fault();
  return measured;
}

config::PlantUncertainty uncertainty(std::uint64_t seed) {
  config::PlantUncertainty u;  // the defaults are seed 001 Table 1's
  u.set_seed(seed);
  return u;
}

// ---- the nominal model against seed 000's digest ----------------------------------------------

// The digest gives four digits of the static gains: they hold to half a unit of the last.
TEST(FramePlantNominal, StaticGainsAreTheDigests) {
  const FramePlantModel m = marths_nominal_plant();
  const std::array<std::array<double, 2>, 2> digest{{{0.8638, 0.1311}, {0.1396, 0.9258}}};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const double independent = evaluate(entry(m, i, j), 0.0).real();
      EXPECT_NEAR(independent, digest[i][j], 0.5e-4) << "H" << i + 1 << j + 1;
      EXPECT_NEAR(m.static_gain(i, j), independent, 1e-14) << "H" << i + 1 << j + 1;
    }
  }
}

// The digest's |H| to three digits and its phase to a tenth of a degree, each within half a unit of
// its last digit, except two at 10 Hz: H11's phase is printed as -87 (a degree), and its |H|, 0.21747,
// as 0.218 (0.2175 rounded once more): within a unit of the last digit.
TEST(FramePlantNominal, FrequencyResponsesAtTheFirstModeAndAt10HzAreTheDigests) {
  const FramePlantModel m = marths_nominal_plant();
  struct Point {
    double f_hz;
    int i, j;
    double magnitude, magnitude_tolerance, phase_deg, phase_tolerance_deg;
  };
  const std::array<Point, 6> points{{{2.29, 0, 0, 0.653, 0.5e-3, -43.6, 0.05},
                                     {2.29, 1, 0, 0.106, 0.5e-3, -43.6, 0.05},
                                     {2.29, 0, 1, 0.137, 0.5e-3, -4.9, 0.05},
                                     {2.29, 1, 1, 0.846, 0.5e-3, -17.7, 0.05},
                                     {10.0, 0, 0, 0.218, 1e-3, -87.0, 0.5},
                                     {10.0, 1, 1, 0.604, 0.5e-3, -44.6, 0.05}}};
  for (const Point& p : points) {
    const Complex s(0.0, 2.0 * pi * p.f_hz);
    const Complex h = evaluate(entry(m, p.i, p.j), s);
    EXPECT_NEAR(std::abs(h), p.magnitude, p.magnitude_tolerance)
        << "H" << p.i + 1 << p.j + 1 << " at " << p.f_hz << " Hz";
    EXPECT_NEAR(std::arg(h) * kDeg, p.phase_deg, p.phase_tolerance_deg)
        << "H" << p.i + 1 << p.j + 1 << " at " << p.f_hz << " Hz";
    EXPECT_LT(std::abs(m.response(p.i, p.j, s) - h), 1e-14 * std::abs(h));
  }
}

// ---- the discrete plant: exact at the ticks, hardware-true ------------------------------------

// A command held from step 0 on is a step in continuous time, and a zero-order hold is exact for
// it: reading k is y(k dt) of the continuous step response, and its velocity the impulse response
// at k dt. Tolerances 1e-12 of the step for the strokes and 1e-10 of it per second for the
// velocities (whose scale is the step's over a time constant, ~1e3 per second): the matrix
// exponential is exact to ~1e-16 per step, its error adds up over the slowest mode's 1 / (1 -
// e^{-a1 dt}) = 62 steps, and the residue sums here cancel terms of order 1 (1.2e-14 and 1.2e-12
// were measured). A plant that returned the reading after the command acted would give y((k + 1)
// dt): 1e-3 of the step at k = 0.
TEST(TwoActuatorFramePlant, ReadingsAtEachTickAreTheContinuousStepResponse) {
  const FramePlantModel m = marths_nominal_plant();
  constexpr double kStepM = 0.004;  // the benchmark's 4 mm stroke limit
  for (int j = 0; j < 2; ++j) {
    auto plant = nominal_plant();
    double worst_y = 0.0;
    double worst_v = 0.0;
    for (int k = 0; k < 2048; ++k) {
      const auto read = exchange(*plant, j == 0 ? kStepM : 0.0, j == 1 ? kStepM : 0.0);
      const double t = k * kDt;
      for (int i = 0; i < 2; ++i) {
        const Entry e = entry(m, i, j);
        const auto at = static_cast<std::size_t>(i);
        worst_y = std::max(worst_y, std::abs(read[at].displacement_m - kStepM * step_response(e, t)));
        worst_v = std::max(worst_v, std::abs(read[at].velocity_m_per_s - kStepM * impulse_response(e, t)));
        EXPECT_EQ(read[at].force_n, 0.0);
      }
    }
    EXPECT_LT(worst_y, 1e-12 * kStepM) << "column " << j;
    EXPECT_LT(worst_v, 1e-10 * kStepM) << "column " << j;
  }
}

TEST(TwoActuatorFramePlant, TheFirstReadingIsThePlantAtRestWhateverTheCommand) {
  auto plant = nominal_plant();
  const auto first = exchange(*plant, 0.003, -0.002);
  for (const Measurement& r : first) {
    EXPECT_EQ(r.displacement_m, 0.0);
    EXPECT_EQ(r.velocity_m_per_s, 0.0);
    EXPECT_EQ(r.force_n, 0.0);
  }
  // The command acted over the step: the next reading shows it (both actuators, both columns).
  const auto second = exchange(*plant, 0.0, 0.0);
  EXPECT_NE(second[0].displacement_m, 0.0);
  EXPECT_NE(second[1].displacement_m, 0.0);
}

// Steady sines through exchange(): the readings' phasor over the command samples' is H(j w) times
// the hold's sinc(w dt / 2) e^{-j w dt / 2} -- the held command's component at w -- and the readings
// are the continuous output at the ticks. What else reaches them: the hold's components at w + 2 pi
// m / dt, through |H| < 1e-4 there and weighted by w dt / (2 pi |m|), alias onto w at below 1e-5 of
// |H(j w)| up to 10 Hz (2.7e-6 was measured). Tolerance 1e-4 on the complex ratio (magnitude and
// phase alike). A plant whose reading came after the command acted would be ahead by one step, the
// ratio off by |e^{j w dt} - 1| = w dt: 0.014 at 2.29 Hz, 0.061 at 10 Hz.
TEST(TwoActuatorFramePlant, SteadySinesAreHOfJOmegaWithTheHoldsHalfStep) {
  const FramePlantModel m = marths_nominal_plant();
  constexpr double kAmplitudeM = 0.002;
  constexpr double kTolerance = 1e-4;
  constexpr int kSettle = 2048;  // 2 s: the slowest mode (a1 = 16.65 /s) has decayed to e^{-33}
  constexpr int kFit = 2048;
  for (const double f_hz : {2.29, 10.0}) {
    const double w = 2.0 * pi * f_hz;
    ASSERT_GT(w * kDt, 100 * kTolerance);  // a step's latency is far outside the tolerance
    const Complex hold = std::sin(w * kDt / 2) / (w * kDt / 2) * std::exp(Complex(0.0, -w * kDt / 2));
    for (int j = 0; j < 2; ++j) {
      auto plant = nominal_plant();
      // Least squares of y = a cos(w t) + b sin(w t) per actuator: the phasor is b + j a.
      std::array<std::array<double, 5>, 2> sums{};  // cc, cs, ss, yc, ys
      for (int k = 0; k < kSettle + kFit; ++k) {
        const double t = k * kDt;
        const double u = kAmplitudeM * std::sin(w * t);
        const auto read = exchange(*plant, j == 0 ? u : 0.0, j == 1 ? u : 0.0);
        if (k < kSettle) continue;
        const double c = std::cos(w * t);
        const double s = std::sin(w * t);
        for (std::size_t i = 0; i < 2; ++i) {
          sums[i][0] += c * c;
          sums[i][1] += c * s;
          sums[i][2] += s * s;
          sums[i][3] += read[i].displacement_m * c;
          sums[i][4] += read[i].displacement_m * s;
        }
      }
      for (int i = 0; i < 2; ++i) {
        const auto& q = sums[static_cast<std::size_t>(i)];
        const double det = q[0] * q[2] - q[1] * q[1];
        const double a = (q[3] * q[2] - q[4] * q[1]) / det;
        const double b = (q[4] * q[0] - q[3] * q[1]) / det;
        const Complex measured = Complex(b, a) / kAmplitudeM;
        const Complex expected = evaluate(entry(m, i, j), Complex(0.0, w)) * hold;
        EXPECT_LT(std::abs(measured / expected - 1.0), kTolerance)
            << "H" << i + 1 << j + 1 << " at " << f_hz << " Hz: |H| " << std::abs(measured) << " against "
            << std::abs(expected) << ", phase " << std::arg(measured) * kDeg << " against " << std::arg(expected) * kDeg
            << " deg";
      }
    }
  }
}

// ---- sensor noise -----------------------------------------------------------------------------

// 100 000 readings at rest: their sample sd within 5 standard errors (sd / sqrt(2 N): 1.1 %) of
// the configured sd, their mean within 5 sd / sqrt(N) of 0, and the two actuators' noise
// uncorrelated (|r| below 5 / sqrt(N)). The readings of a moving plant are its noiseless twin's
// plus the noise: noise never enters the state, and the velocity carries none.
TEST(TwoActuatorFramePlantNoise, HasTheConfiguredSdOnEachActuatorIndependently) {
  constexpr double kSd = 0.0124e-3;  // seed 001's benchmark code
  constexpr int kN = 100000;
  auto plant = nominal_plant(kSd, 7);
  auto twin = nominal_plant();
  std::array<double, 2> sum{};
  std::array<double, 2> sum_sq{};
  double cross = 0.0;
  for (int k = 0; k < kN; ++k) {
    const double u = 0.002 * std::sin(2.0 * pi * 1.3 * k * kDt);
    const auto noisy = exchange(*plant, u, -u);
    const auto clean = exchange(*twin, u, -u);
    std::array<double, 2> e{};
    for (std::size_t i = 0; i < 2; ++i) {
      e[i] = noisy[i].displacement_m - clean[i].displacement_m;
      sum[i] += e[i];
      sum_sq[i] += e[i] * e[i];
      ASSERT_EQ(noisy[i].velocity_m_per_s, clean[i].velocity_m_per_s);
    }
    cross += e[0] * e[1];
  }
  const double n = kN;
  for (std::size_t i = 0; i < 2; ++i) {
    const double mean = sum[i] / n;
    const double sd = std::sqrt((sum_sq[i] - n * mean * mean) / (n - 1));
    EXPECT_NEAR(sd, kSd, 5.0 * kSd / std::sqrt(2.0 * n)) << "actuator " << i;
    EXPECT_NEAR(mean, 0.0, 5.0 * kSd / std::sqrt(n)) << "actuator " << i;
  }
  EXPECT_LT(std::abs(cross / n) / (kSd * kSd), 5.0 / std::sqrt(n));
}

TEST(TwoActuatorFramePlantNoise, SameSeedSameSequenceOtherSeedAnother) {
  auto a = nominal_plant(1e-5, 3);
  auto b = nominal_plant(1e-5, 3);
  auto c = nominal_plant(1e-5, 4);
  int differ = 0;
  for (int k = 0; k < 100; ++k) {
    const auto ra = exchange(*a, 0.001, 0.0);
    const auto rb = exchange(*b, 0.001, 0.0);
    const auto rc = exchange(*c, 0.001, 0.0);
    for (std::size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(ra[i].displacement_m, rb[i].displacement_m) << "step " << k;
      differ += ra[i].displacement_m != rc[i].displacement_m ? 1 : 0;
    }
  }
  EXPECT_EQ(differ, 200);
}

// ---- the uncertainty (seed 001 Table 1) ------------------------------------------------------

struct Spread {
  double mean = 0.0;
  double sd = 0.0;
};

Spread spread(const std::vector<double>& x) {
  Spread s;
  for (const double v : x) s.mean += v;
  s.mean /= static_cast<double>(x.size());
  for (const double v : x) s.sd += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(s.sd / static_cast<double>(x.size() - 1));
  return s;
}

double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const Spread sx = spread(x);
  const Spread sy = spread(y);
  double c = 0.0;
  for (std::size_t k = 0; k < x.size(); ++k) c += (x[k] - sx.mean) * (y[k] - sy.mean);
  return c / static_cast<double>(x.size() - 1) / (sx.sd * sy.sd);
}

// 20 000 seeds: each root's factor x / x0 has its group's sd within 5 standard errors (sd / sqrt(2
// N): 2.5 % of it, so column 0's zeros at 5.5 % and poles at 6 % are told apart) and mean 1 within
// 5 sd / sqrt(N); the nine draws are uncorrelated (|r| below 5 / sqrt(N)); c1 and c2 move by one
// factor (the frame pole along its ray); every static gain is the nominal's to 1e-12.
TEST(FramePlantUncertainty, EachRootSpreadsWithItsGroupsSdAndTheStaticGainsStay) {
  using M = FramePlantModel;
  constexpr int kN = 20000;
  const FramePlantModel nominal = marths_nominal_plant();
  const config::PlantUncertainty defaults;
  const std::array<double, M::kRoots> group_sd{
      defaults.column1_pole_sd(), defaults.column1_pole_sd(), defaults.column1_zero_sd(), defaults.column1_zero_sd(),
      defaults.frame_pole_sd(),   defaults.frame_pole_sd(),   defaults.column2_sd(),      defaults.column2_sd(),
      defaults.column2_sd(),      defaults.column2_sd()};
  std::array<std::vector<double>, M::kRoots> factors;
  double worst_gain = 0.0;
  double worst_frame_ray = 0.0;
  for (int s = 1; s <= kN; ++s) {
    const FramePlantModel drawn = draw_uncertain(nominal, uncertainty(static_cast<std::uint64_t>(s)));
    for (std::size_t r = 0; r < M::kRoots; ++r) factors[r].push_back(drawn.theta[r] / nominal.theta[r]);
    worst_frame_ray = std::max(worst_frame_ray, std::abs(factors[M::kC1].back() / factors[M::kC2].back() - 1.0));
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        worst_gain = std::max(worst_gain, std::abs(drawn.static_gain(i, j) / nominal.static_gain(i, j) - 1.0));
      }
    }
  }
  const double n = kN;
  for (std::size_t r = 0; r < M::kRoots; ++r) {
    const Spread s = spread(factors[r]);
    EXPECT_NEAR(s.sd, group_sd[r], 5.0 * group_sd[r] / std::sqrt(2.0 * n)) << "root " << r;
    EXPECT_NEAR(s.mean, 1.0, 5.0 * group_sd[r] / std::sqrt(n)) << "root " << r;
  }
  EXPECT_LT(worst_frame_ray, 1e-15);
  EXPECT_LT(worst_gain, 1e-12);
  // The independent draws: every root but c2 (c1's twin).
  for (std::size_t r = 0; r < M::kRoots; ++r) {
    for (std::size_t q = r + 1; q < M::kRoots; ++q) {
      if (r == M::kC2 || q == M::kC2) continue;
      EXPECT_LT(std::abs(correlation(factors[r], factors[q])), 5.0 / std::sqrt(n)) << "roots " << r << ", " << q;
    }
  }
}

TEST(FramePlantUncertainty, SameSeedSamePlantOtherSeedAnother) {
  const FramePlantModel nominal = marths_nominal_plant();
  const FramePlantModel a = draw_uncertain(nominal, uncertainty(11));
  const FramePlantModel b = draw_uncertain(nominal, uncertainty(11));
  const FramePlantModel c = draw_uncertain(nominal, uncertainty(12));
  EXPECT_EQ(a.theta, b.theta);
  EXPECT_EQ(a.gain, b.gain);
  for (std::size_t r = 0; r < a.theta.size(); ++r) EXPECT_NE(a.theta[r], c.theta[r]) << "root " << r;
}

// Every root consumes its own draw whatever its sd, in theta's order: a group turned off (sd 0)
// leaves it at the nominal and every other root of the seed where it was.
TEST(FramePlantUncertainty, AGroupTurnedOffLeavesTheOtherDrawsOfTheSeed) {
  using M = FramePlantModel;
  const FramePlantModel nominal = marths_nominal_plant();
  const FramePlantModel all = draw_uncertain(nominal, uncertainty(5));
  config::PlantUncertainty no_column1_poles = uncertainty(5);
  no_column1_poles.set_column1_pole_sd(0.0);
  const FramePlantModel some = draw_uncertain(nominal, no_column1_poles);
  for (std::size_t r = 0; r < M::kRoots; ++r) {
    if (r == M::kA1 || r == M::kA2) {
      EXPECT_EQ(some.theta[r], nominal.theta[r]) << "root " << r;
    } else {
      EXPECT_EQ(some.theta[r], all.theta[r]) << "root " << r;
    }
  }
}

// The noise of actuator 0 and the uncertainty share a default seed (1): their streams must not be
// the same numbers. Over 2000 seeds used for both, a1's draw and the first noise reading are
// uncorrelated (|r| below 5 / sqrt(N); one stream for both would give r = 1).
TEST(FramePlantUncertainty, ItsDrawsAreIndependentOfTheNoiseOfTheSameSeed) {
  constexpr int kN = 2000;
  const FramePlantModel nominal = marths_nominal_plant();
  std::vector<double> root;
  std::vector<double> first_noise;
  for (int s = 1; s <= kN; ++s) {
    const auto seed = static_cast<std::uint64_t>(s);
    const FramePlantModel drawn = draw_uncertain(nominal, uncertainty(seed));
    root.push_back(drawn.theta[FramePlantModel::kA1]);
    TwoActuatorFramePlant plant(nominal, noise(1.0, seed), kRateHz);
    first_noise.push_back(exchange(plant, 0.0, 0.0)[0].displacement_m);
  }
  EXPECT_LT(std::abs(correlation(root, first_noise)), 5.0 / std::sqrt(static_cast<double>(kN)));
}

// A factor 1 + sd n <= 0 is drawn again: at sd 2 (n <= -0.5 in 31 % of draws) every root stays
// above 0 and the factor's mean is the truncated normal's, 1 + sd phi(1/sd) / Phi(1/sd) = 2.0183,
// within 5 standard errors (its sd 1.39 / sqrt(N)). Clamping at a small value would give 1.40,
// folding |1 + sd n| 1.79.
TEST(FramePlantUncertainty, ARootThatWouldReachZeroIsDrawnAgain) {
  constexpr int kN = 20000;
  constexpr double kSd = 2.0;
  // The rules take so large an sd (a robustness study's): the draw is what keeps the roots positive.
  config::ActuatorPlant plant = test::load_example("marths/elcentro_rls.textproto").experiment.site(0).actuator_plant();
  plant.mutable_two_actuator_frame()->mutable_uncertainty()->set_column1_pole_sd(kSd);
  plant.mutable_two_actuator_frame()->mutable_uncertainty()->set_seed(1);
  EXPECT_EQ(test::component_problems(plant, ComponentContext{.rate_hz = 1024.0}), std::vector<std::string>{});
  const FramePlantModel nominal = marths_nominal_plant();
  std::vector<double> factors;
  for (int s = 1; s <= kN; ++s) {
    config::PlantUncertainty u = uncertainty(static_cast<std::uint64_t>(s));
    u.set_column1_pole_sd(kSd);
    const FramePlantModel drawn = draw_uncertain(nominal, u);
    for (const double root : drawn.theta) ASSERT_GT(root, 0.0) << "seed " << s;
    factors.push_back(drawn.theta[FramePlantModel::kA1] / nominal.theta[FramePlantModel::kA1]);
  }
  const double a = 1.0 / kSd;  // n > -a
  const double phi = std::exp(-0.5 * a * a) / std::sqrt(2.0 * pi);
  const double big_phi = 0.5 * std::erfc(-a / std::numbers::sqrt2);
  const double lambda = phi / big_phi;
  const double mean = 1.0 + kSd * lambda;
  const double sd = kSd * std::sqrt(1.0 - a * lambda - lambda * lambda);  // Var(n | n > -a)
  const Spread s = spread(factors);
  EXPECT_NEAR(s.mean, mean, 5.0 * sd / std::sqrt(static_cast<double>(kN)));
  EXPECT_NEAR(s.sd, sd, 5.0 * sd / std::sqrt(2.0 * kN));
}

// ---- building, refusing, reporting ------------------------------------------------------------

config::ActuatorPlant plant_config() {
  config::ActuatorPlant c;
  *c.mutable_two_actuator_frame() = marths_nominal_plant_config();
  return c;
}

TEST(MakeActuatorPlant, TheConfigsNominalOrItsDrawWithTheSeedInTheReport) {
  config::ActuatorPlant c = plant_config();
  c.mutable_noise()->set_displacement_sd_m(1.24e-5);
  c.mutable_noise()->set_seed(9);
  auto nominal = make_actuator_plant(c, kRateHz);
  ASSERT_EQ(nominal->channels(), 2U);
  results::PlantReport report;
  nominal->report(1, report);
  ASSERT_TRUE(report.has_two_actuator_frame());
  const auto& r = report.two_actuator_frame();
  const FramePlantModel expected = marths_nominal_plant();
  ASSERT_EQ(r.theta_size(), 10);
  ASSERT_EQ(r.gain_size(), 4);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(r.theta(k), expected.theta[static_cast<std::size_t>(k)]);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(r.gain(k), expected.gain[static_cast<std::size_t>(k)]);
  EXPECT_EQ(r.uncertainty_seed(), 0U);
  EXPECT_EQ(r.noise().displacement_sd_m(), 1.24e-5);
  EXPECT_EQ(r.noise().seed(), 9U);

  c.mutable_two_actuator_frame()->mutable_uncertainty()->set_seed(42);
  auto drawn = make_actuator_plant(c, kRateHz);
  const FramePlantModel expected_draw = draw_uncertain(expected, uncertainty(42));
  results::PlantReport drawn_report;
  drawn->report(0, drawn_report);
  const auto& d = drawn_report.two_actuator_frame();
  EXPECT_EQ(d.uncertainty_seed(), 42U);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(d.theta(k), expected_draw.theta[static_cast<std::size_t>(k)]);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(d.gain(k), expected_draw.gain[static_cast<std::size_t>(k)]);
  EXPECT_NE(d.theta(0), r.theta(0));
}

// The site's rules refuse a missing or bad value of its actuator plant, naming the field (the config
// exits 2 with that line); the plant is built only from what they accepted.
TEST(MakeActuatorPlant, TheRulesRefuseMissingOrBadValuesNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"site[iisl].actuator_plant.two_actuator_frame.a1_rad_per_s=-16.65",
       "actuator_plant.two_actuator_frame.a1_rad_per_s: is -16.65, expected a root magnitude > 0"},
      {"site[iisl].actuator_plant.two_actuator_frame.c2_rad_per_s=0", "two_actuator_frame.c2_rad_per_s: is 0"},
      {"site[iisl].actuator_plant.two_actuator_frame.k22=0", "two_actuator_frame.k22: is 0, expected a nonzero gain"},
      {"site[iisl].actuator_plant.two_actuator_frame.k12=inf", "two_actuator_frame.k12: is inf"},
      {"site[iisl].actuator_plant.two_actuator_frame.uncertainty.column2_sd=-1",
       "two_actuator_frame.uncertainty.column2_sd: is -1"},
      {"site[iisl].actuator_plant.two_actuator_frame.uncertainty.frame_pole_sd=nan",
       "two_actuator_frame.uncertainty.frame_pole_sd: is nan"},
      {"site[iisl].actuator_plant.two_actuator_frame.uncertainty.seed=0", "two_actuator_frame.uncertainty.seed: is 0"},
      {"site[iisl].actuator_plant.noise.displacement_sd_m=-1e-5", "actuator_plant.noise.displacement_sd_m: is -1e-05"},
      {"site[iisl].actuator_plant.noise.force_sd_n=20", "actuator_plant.noise.force_sd_n: is given"},
  };
  for (const auto& [set, expected] : cases) {
    // Named for the lambda: clang 14 does not let a lambda capture a structured binding (C++20 does).
    const std::string& assignment = set;
    const std::string error = test::error_of<ConfigError>(
        [&] { (void)test::load_example("marths/elcentro_rls.textproto", {assignment}); }, "no refusal of " + set);
    EXPECT_NE(error.find(expected), std::string::npos) << set << ": " << error;
  }
  config::ActuatorPlant missing = plant_config();
  missing.mutable_two_actuator_frame()->clear_d2_rad_per_s();
  const std::vector<std::string> problems = test::component_problems(missing, ComponentContext{.rate_hz = kRateHz});
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_EQ(problems[0].rfind("two_actuator_frame.d2_rad_per_s: missing", 0), 0U) << problems[0];
}

// A step of the wrong length, a command that is not finite or spans of the wrong size: false, a
// fault naming it, the last readings held in measured, and the state untouched (the plant goes on
// exactly as its twin that never saw the bad step).
TEST(TwoActuatorFramePlant, RefusesABadStepAndGoesOnAsIfItNeverCame) {
  auto plant = nominal_plant();
  auto twin = nominal_plant();
  for (int k = 0; k < 5; ++k) {
    exchange(*plant, 0.001, 0.002);
    exchange(*twin, 0.001, 0.002);
  }
  const auto last = exchange(*plant, 0.001, 0.002);
  exchange(*twin, 0.001, 0.002);

  std::array<InterfaceMotion, 2> commands{};
  std::array<Measurement, 2> measured{};
  commands[1].displacement_m = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(plant->exchange(commands, measured, kDt));
  EXPECT_NE(plant->fault().find("actuator 1's stroke command is nan"), std::string::npos) << plant->fault();
  EXPECT_EQ(measured[0].displacement_m, last[0].displacement_m);
  EXPECT_EQ(measured[1].displacement_m, last[1].displacement_m);

  commands[1].displacement_m = 0.0;
  measured = {};
  EXPECT_FALSE(plant->exchange(commands, measured, 2 * kDt));
  EXPECT_NE(plant->fault().find("stepped with dt 0.001953125 s, discretised at 0.0009765625 s"), std::string::npos)
      << plant->fault();
  EXPECT_EQ(measured[1].displacement_m, last[1].displacement_m);

  std::array<Measurement, 3> three{};
  EXPECT_FALSE(plant->exchange(commands, three, kDt));
  EXPECT_NE(plant->fault().find("exchanged 3 channels, expected 2"), std::string::npos) << plant->fault();

  for (int k = 0; k < 5; ++k) {
    const auto a = exchange(*plant, 0.0, -0.001);
    const auto b = exchange(*twin, 0.0, -0.001);
    EXPECT_EQ(a[0].displacement_m, b[0].displacement_m);
    EXPECT_EQ(a[1].displacement_m, b[1].displacement_m);
  }
}

TEST(TwoActuatorFramePlant, ExchangeAllocatesNothing) {
  auto plant = nominal_plant(1e-5, 2);
  std::array<InterfaceMotion, 2> commands{};
  std::array<Measurement, 2> measured{};
  const std::uint64_t before = test::allocations_on_this_thread();
  for (int k = 0; k < 1000; ++k) {
    commands[0].displacement_m = 0.001 * std::sin(0.01 * k);
    commands[1].displacement_m = -commands[0].displacement_m;
    ASSERT_TRUE(plant->exchange(commands, measured, kDt));
  }
  EXPECT_EQ(test::allocations_on_this_thread(), before);
}

}  // namespace
}  // namespace rths::test_two_actuator_frame_plant
