// The maRTHS benchmark's evaluation criteria J1-J10 (seed 000 §3.7, Table 1; the package's
// S5_Evaluation.m): finddelay's delay with its sign and tie rules, both forms of the normalised error,
// the peak error, NaN propagation, and the criteria of a run and over runs against closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/metrics/metrics.hpp"

namespace rths::test_benchmark_metrics {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRate = 1024.0;

// y[k] = x[k - shift], zeros where x has no sample (shift > 0: y lags x; shift < 0: y leads).
std::vector<double> shifted(const std::vector<double>& x, int shift) {
  std::vector<double> y(x.size(), 0.0);
  for (std::size_t k = 0; k < x.size(); ++k) {
    const auto from = static_cast<std::ptrdiff_t>(k) - shift;
    if (from >= 0 && from < static_cast<std::ptrdiff_t>(x.size())) y[k] = x[static_cast<std::size_t>(from)];
  }
  return y;
}

// Gaussian white noise: its correlation peaks at one lag only.
std::vector<double> noise(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

// Two sinusoids under a sin^2 window: a response that starts and ends at rest, as a ground-motion
// response does (finddelay does not divide by the overlap, so the record's ends must be quiet for the
// correlation of a shifted copy to peak at the shift).
std::vector<double> burst(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) {
    const double t = static_cast<double>(k) / kRate;
    const double window = std::pow(std::sin(M_PI * static_cast<double>(k) / static_cast<double>(n)), 2);
    v[k] = window * (std::sin(2 * M_PI * 2.29 * t) + 0.4 * std::sin(2 * M_PI * 12.74 * t + 0.5));
  }
  return v;
}

// a sin(2 pi m k / n) + offset over n samples: whole periods, so sum sin = 0 and sum sin^2 = n / 2;
// n a multiple of 4 puts a sample on each crest.
std::vector<double> sine(std::size_t n, double amplitude, double offset = 0.0, std::size_t periods = 8) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) {
    v[k] = offset + amplitude * std::sin(2 * M_PI * static_cast<double>(periods * k) / static_cast<double>(n));
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// J1 / J4: MATLAB finddelay.

TEST(BenchmarkMetrics, ADelayedRandomSignalGivesExactlyItsShiftPositiveWhenTheSecondLags) {
  const std::vector<double> x = noise(4096, 7);
  for (const int k : {1, 2, 3, 7, 40}) {
    const std::vector<double> lagging = shifted(x, k);
    // Exact: a sign flip or a sample too many or too few fails here.
    EXPECT_EQ(finddelay_samples(x, lagging), static_cast<double>(k)) << k;
    EXPECT_EQ(finddelay_ms(x, lagging, kRate), 1000.0 * k / kRate) << k;
    // The other side: the first signal lags, or the second leads.
    EXPECT_EQ(finddelay_ms(lagging, x, kRate), -1000.0 * k / kRate) << k;
    EXPECT_EQ(finddelay_samples(x, shifted(x, -k)), -static_cast<double>(k)) << k;
  }
  EXPECT_EQ(finddelay_samples(x, x), 0.0);
}

TEST(BenchmarkMetrics, AShiftedSinusoidalBurstGivesItsShiftInMilliseconds) {
  const std::vector<double> target = burst(8192);
  for (const int k : {1, 2, 3, 14}) {
    EXPECT_EQ(finddelay_ms(target, shifted(target, k), kRate), 1000.0 * k / kRate) << k;
    EXPECT_EQ(finddelay_ms(target, shifted(target, -k), kRate), -1000.0 * k / kRate) << k;
  }
  // 2 samples at 1024 Hz: 1.953125 ms, the benchmark's J1 = 2.0 ms reads as this.
  EXPECT_EQ(finddelay_ms(target, shifted(target, 2), kRate), 1.953125);
}

// The examples of MathWorks' finddelay reference page, with the results it prints.
TEST(BenchmarkMetrics, FinddelayGivesTheResultsOfItsReferenceExamples) {
  EXPECT_EQ(finddelay_samples(std::vector<double>{1, 2, 3}, std::vector<double>{0, 0, 1, 2, 3}), 2.0);
  EXPECT_EQ(finddelay_samples(std::vector<double>{0, 0, 0, 1, 2, 3, 0, 0}, std::vector<double>{1, 2, 3, 0}), -3.0);
  EXPECT_EQ(finddelay_samples(std::vector<double>{0, 0, 1, 2, 3, 0},
                              std::vector<double>{0.02, 0.12, 1.08, 2.21, 2.95, -0.09}),
            0.0);
  // Periodic: of the equal maxima (delays -1 and +6) the smallest |d|.
  EXPECT_EQ(finddelay_samples(std::vector<double>{0, 1, 2, 3}, std::vector<double>{1, 2, 3, 0, 0, 0, 0, 1, 2, 3, 0, 0}),
            -1.0);
  // Its matrix example, column by column with maxlag 3.
  const std::vector<double> x{0, 1, 2};
  EXPECT_EQ(finddelay_samples(x, std::vector<double>{0, 1, 2, 0}, 3), 0.0);
  EXPECT_EQ(finddelay_samples(x, std::vector<double>{1, 2, 0, 0}, 3), -1.0);
  EXPECT_EQ(finddelay_samples(x, std::vector<double>{0, 0, 1, 2}, 3), 1.0);
  EXPECT_EQ(finddelay_samples(x, std::vector<double>{0, 0, 0, 1}, 3), 1.0);
}

TEST(BenchmarkMetrics, FinddelayTakesTheAbsoluteCorrelationAndPrefersThePositiveDelayOnATie) {
  const std::vector<double> x = noise(2048, 11);
  std::vector<double> inverted = shifted(x, 5);
  for (double& v : inverted) v = -v;
  EXPECT_EQ(finddelay_samples(x, inverted), 5.0);  // |correlation|: an inverted copy still lags by 5

  // y holds x's pulse 2 samples early and 2 late, equally: delays -2 and +2 tie, finddelay says +2.
  const std::vector<double> pulse{0, 0, 1, 0, 0};
  const std::vector<double> both{1, 0, 0, 0, 1};
  EXPECT_EQ(finddelay_samples(pulse, both), 2.0);
  // A stronger early copy wins over the tie rule.
  EXPECT_EQ(finddelay_samples(pulse, std::vector<double>{1.5, 0, 0, 0, 1}), -2.0);
}

TEST(BenchmarkMetrics, FinddelayIsZeroWithoutSignificantCorrelationAndSearchesOnlyItsWindow) {
  const std::vector<double> zeros(64, 0.0);
  const std::vector<double> x = noise(64, 3);
  EXPECT_EQ(finddelay_samples(zeros, x), 0.0);
  EXPECT_EQ(finddelay_samples(x, zeros), 0.0);
  // A pulse 10 samples later: found in the whole record, beyond a window of 5 nothing correlates.
  std::vector<double> early(64, 0.0);
  std::vector<double> late(64, 0.0);
  early[3] = 1.0;
  late[13] = 1.0;
  EXPECT_EQ(finddelay_samples(early, late), 10.0);
  EXPECT_EQ(finddelay_samples(early, late, 5), 0.0);
  EXPECT_EQ(finddelay_samples(early, late, 10), 10.0);
}

// ---------------------------------------------------------------------------------------------
// J2, J5, J7, J8: the normalised error in both forms; J3, J6, J9, J10: the peak error.

// Reference a sin over whole periods, response (1 + g) ref + c: the error is g ref + c, so
//   rms form: sqrt(sum (g ref + c)^2 / sum ref^2) = sqrt(g^2 + 2 c^2 / a^2) (sum ref = 0),
//   std form: std(g ref) / std(ref) = |g|, the offset removed with the error's mean.
TEST(BenchmarkMetrics, TheTwoNrmsFormsDifferOnAnOffsetAsTheirClosedFormsSay) {
  const double a = 2.0e-3;
  const double g = 0.05;
  const double c = 0.1 * a;
  const std::vector<double> reference = sine(4096, a);
  std::vector<double> response(reference.size());
  for (std::size_t k = 0; k < reference.size(); ++k) response[k] = (1 + g) * reference[k] + c;

  EXPECT_NEAR(nrms_error_pct(response, reference, NrmsForm::kRmsRatio), 100 * std::sqrt(g * g + 2 * c * c / (a * a)),
              1e-9);                                                                     // 15 %
  EXPECT_NEAR(nrms_error_pct(response, reference, NrmsForm::kStdRatio), 100 * g, 1e-9);  // 5 %
  EXPECT_NEAR(nrms_error_pct(response, reference), 100 * g, 1e-9);  // the package's form by default

  // An offset in the reference too: the rms form divides by sqrt(b^2 + a^2/2), the std form by a/sqrt(2).
  const double b = 3 * a;
  const std::vector<double> offset_reference = sine(4096, a, b);
  std::vector<double> scaled(offset_reference.size());
  for (std::size_t k = 0; k < scaled.size(); ++k) scaled[k] = (1 + g) * offset_reference[k];
  EXPECT_NEAR(nrms_error_pct(scaled, offset_reference, NrmsForm::kRmsRatio), 100 * g, 1e-9);
  EXPECT_NEAR(nrms_error_pct(scaled, offset_reference, NrmsForm::kStdRatio), 100 * g, 1e-9);
  // The offset added to the error: the std form is still |g|; the rms form gains the offset and its
  // cross term with the reference's mean, sum (g ref + c)^2 = n (g^2 (b^2 + a^2 / 2) + 2 g c b + c^2).
  for (double& v : scaled) v += c;
  EXPECT_NEAR(nrms_error_pct(scaled, offset_reference, NrmsForm::kStdRatio), 100 * g, 1e-9);
  const double ref_sq = b * b + a * a / 2;
  EXPECT_NEAR(nrms_error_pct(scaled, offset_reference, NrmsForm::kRmsRatio),
              100 * std::sqrt((g * g * ref_sq + 2 * g * c * b + c * c) / ref_sq), 1e-9);
}

TEST(BenchmarkMetrics, PeakErrorIsTheErrorCrestOverTheReferenceCrest) {
  const double a = 4.0e-3;
  const std::vector<double> reference = sine(4096, a);  // crests at +-a on samples
  std::vector<double> response(reference.size());
  for (std::size_t k = 0; k < reference.size(); ++k) response[k] = 0.97 * reference[k];
  EXPECT_NEAR(peak_error_pct(response, reference), 3.0, 1e-9);
  // An offset adds to the error's crest where the error has the offset's sign: (0.03 a + c) / a.
  const double c = 0.01 * a;
  for (double& v : response) v -= c;
  EXPECT_NEAR(peak_error_pct(response, reference), 100 * (0.03 * a + c) / a, 1e-9);
  // Normalised by the reference, not by the response.
  EXPECT_NEAR(peak_error_pct(reference, response), 100 * (0.03 * a + c) / (0.97 * a + c), 1e-9);
}

TEST(BenchmarkMetrics, ARatioWithoutADenominatorIsNaNAndLengthsMustAgree) {
  const std::vector<double> zeros(16, 0.0);
  const std::vector<double> constant(16, 2.0);
  const std::vector<double> x = sine(16, 1.0, 0.0, 1);
  EXPECT_TRUE(std::isnan(nrms_error_pct(x, zeros, NrmsForm::kRmsRatio)));
  EXPECT_TRUE(std::isnan(nrms_error_pct(x, constant, NrmsForm::kStdRatio)));  // std(ref) = 0
  EXPECT_NEAR(nrms_error_pct(x, constant, NrmsForm::kRmsRatio), 100 * std::sqrt((4 + 0.5) / 4), 1e-12);
  EXPECT_TRUE(std::isnan(peak_error_pct(x, zeros)));
  EXPECT_TRUE(std::isnan(nrms_error_pct({}, {})));
  EXPECT_THROW((void)nrms_error_pct(x, std::span<const double>(x).first(15)), std::invalid_argument);
  EXPECT_THROW((void)peak_error_pct(x, std::span<const double>(x).first(15)), std::invalid_argument);
}

TEST(BenchmarkMetrics, ANonFiniteSampleAnywhereGivesNaN) {
  const std::vector<double> clean = burst(1024);
  for (const double bad : {kNaN, kInf, -kInf}) {
    for (const std::size_t at : {std::size_t{0}, std::size_t{500}, std::size_t{1023}}) {
      std::vector<double> dirty = clean;
      dirty[at] = bad;
      EXPECT_TRUE(std::isnan(finddelay_samples(clean, dirty))) << at;
      EXPECT_TRUE(std::isnan(finddelay_samples(dirty, clean))) << at;
      EXPECT_TRUE(std::isnan(finddelay_ms(dirty, clean, kRate))) << at;
      for (const NrmsForm form : {NrmsForm::kStdRatio, NrmsForm::kRmsRatio}) {
        EXPECT_TRUE(std::isnan(nrms_error_pct(dirty, clean, form))) << at;
        EXPECT_TRUE(std::isnan(nrms_error_pct(clean, dirty, form))) << at;
      }
      EXPECT_TRUE(std::isnan(peak_error_pct(dirty, clean))) << at;
      EXPECT_TRUE(std::isnan(peak_error_pct(clean, dirty))) << at;
    }
  }
  // Finite samples whose squares overflow: no number can be named either.
  std::vector<double> huge = clean;
  for (double& v : huge) v *= 1e300;
  EXPECT_TRUE(std::isnan(finddelay_samples(huge, huge)));
  EXPECT_TRUE(std::isnan(nrms_error_pct(clean, huge, NrmsForm::kRmsRatio)));
}

// ---------------------------------------------------------------------------------------------
// J1-J10 of a run: each criterion from its own pair of histories.

// A run whose every history differs from its partner in a known way, each in another way, so that a
// criterion computed from the wrong pair, or normalised by the wrong member, misses its value.
struct SyntheticRun {
  std::vector<double> base = burst(4096);
  std::vector<std::vector<double>> target, measured, estimated_strokes;
  std::vector<std::vector<double>> interface_estimated, interface_numerical, interface_reference;
  std::vector<std::vector<double>> upper_numerical, upper_reference;

  static std::vector<double> scaled(const std::vector<double>& v, double s) {
    std::vector<double> out(v);
    for (double& x : out) x *= s;
    return out;
  }

  SyntheticRun() {
    for (int a = 0; a < 2; ++a) {
      target.push_back(scaled(base, 1.0 + a));
      measured.push_back(shifted(target.back(), 2 + a));       // lags 2 and 3 samples
      estimated_strokes.push_back(shifted(target.back(), 1));  // lags 1 sample
    }
    for (int d = 0; d < 2; ++d) {
      const double unit = d == 0 ? 1e-3 : 1e-2;  // m and rad
      interface_reference.push_back(scaled(base, unit));
      interface_numerical.push_back(scaled(base, unit * (1.02 + 0.01 * d)));
      interface_estimated.push_back(scaled(base, unit * (1.05 + 0.02 * d)));
    }
    for (int u = 0; u < 4; ++u) {
      upper_reference.push_back(scaled(base, 1.0 + u));
      upper_numerical.push_back(scaled(base, (1.0 + u) * (1.0 + 0.01 * (u + 1))));
    }
  }

  [[nodiscard]] MarthsHistories histories(bool with_estimated_strokes) const {
    MarthsHistories h;
    h.rate_hz = kRate;
    const auto spans = [](const std::vector<std::vector<double>>& g) {
      return std::vector<std::span<const double>>(g.begin(), g.end());
    };
    h.stroke_target = spans(target);
    h.stroke_measured = spans(measured);
    if (with_estimated_strokes) h.stroke_estimated = spans(estimated_strokes);
    h.interface_estimated = spans(interface_estimated);
    h.interface_numerical = spans(interface_numerical);
    h.interface_reference = spans(interface_reference);
    h.upper_numerical = spans(upper_numerical);
    h.upper_reference = spans(upper_reference);
    return h;
  }
};

TEST(BenchmarkMetrics, EachCriterionOfARunComesFromItsOwnHistories) {
  const SyntheticRun run;
  const MarthsCriteria c = marths_criteria(run.histories(true));
  EXPECT_EQ(c.nrms_form, NrmsForm::kStdRatio);
  ASSERT_EQ(c.j1_delay_ms.size(), 2U);
  ASSERT_EQ(c.j5_nrms_pct.size(), 2U);
  ASSERT_EQ(c.j8_nrms_pct.size(), 4U);
  for (std::size_t a = 0; a < 2; ++a) {
    EXPECT_EQ(c.j1_delay_ms[a], 1000.0 * static_cast<double>(2 + a) / kRate) << a;
    EXPECT_EQ(c.j4_delay_ms[a], 1000.0 / kRate) << a;  // the estimated strokes lag by one sample
    EXPECT_DOUBLE_EQ(c.j2_nrms_pct[a], nrms_error_pct(run.measured[a], run.target[a])) << a;
    EXPECT_DOUBLE_EQ(c.j3_peak_pct[a], peak_error_pct(run.measured[a], run.target[a])) << a;
  }
  for (std::size_t d = 0; d < 2; ++d) {
    // Scaled copies: estimated = e ref, numerical = n ref, so J5 = J6 = |e - n| / n (normalised by
    // the numerical target), J7 = J9 = |e - 1|.
    const double e = 1.05 + 0.02 * static_cast<double>(d);
    const double n = 1.02 + 0.01 * static_cast<double>(d);
    EXPECT_NEAR(c.j5_nrms_pct[d], 100 * (e - n) / n, 1e-9) << d;
    EXPECT_NEAR(c.j6_peak_pct[d], 100 * (e - n) / n, 1e-9) << d;
    EXPECT_NEAR(c.j7_nrms_pct[d], 100 * (e - 1), 1e-9) << d;
    EXPECT_NEAR(c.j9_peak_pct[d], 100 * (e - 1), 1e-9) << d;
  }
  for (std::size_t u = 0; u < 4; ++u) {
    EXPECT_NEAR(c.j8_nrms_pct[u], 1.0 * static_cast<double>(u + 1), 1e-9) << u;
    EXPECT_NEAR(c.j10_peak_pct[u], 1.0 * static_cast<double>(u + 1), 1e-9) << u;
  }
  EXPECT_TRUE(c.finite());

  // Without estimated strokes J4 is J1, as the package's code computes it.
  const MarthsCriteria coded = marths_criteria(run.histories(false));
  EXPECT_EQ(coded.j4_delay_ms, coded.j1_delay_ms);
  // The printed form on request.
  const MarthsCriteria printed = marths_criteria(run.histories(true), NrmsForm::kRmsRatio);
  EXPECT_EQ(printed.nrms_form, NrmsForm::kRmsRatio);
  EXPECT_DOUBLE_EQ(printed.j2_nrms_pct[1], nrms_error_pct(run.measured[1], run.target[1], NrmsForm::kRmsRatio));
}

TEST(BenchmarkMetrics, ANaNInOneHistoryMakesItsCriteriaNaNAndTheRunNotFinite) {
  SyntheticRun run;
  run.measured[1][2000] = kNaN;
  run.upper_numerical[2][100] = kNaN;
  const MarthsCriteria c = marths_criteria(run.histories(false));
  EXPECT_FALSE(c.finite());
  for (const double v :
       {c.j1_delay_ms[1], c.j2_nrms_pct[1], c.j3_peak_pct[1], c.j4_delay_ms[1], c.j8_nrms_pct[2], c.j10_peak_pct[2]}) {
    EXPECT_TRUE(std::isnan(v));
  }
  // The other actuator, the interface and the other storeys are unaffected.
  for (const double v : {c.j1_delay_ms[0], c.j2_nrms_pct[0], c.j5_nrms_pct[0], c.j7_nrms_pct[1], c.j8_nrms_pct[1]}) {
    EXPECT_TRUE(std::isfinite(v));
  }
}

// A reference at rest (a run that ends before the ground moves the structure) gives the criteria
// normalised by it no denominator: J7, J9 (the reference's interface motion) and J8, J10 (its
// storeys) are NaN, listed as undefined, and the criteria still count as finite: nothing diverged.
// The others, normalised by the hybrid run's own histories, are numbers.
TEST(BenchmarkMetrics, AReferenceAtRestLeavesItsCriteriaUndefinedNotNonFinite) {
  SyntheticRun run;
  for (auto* group : {&run.interface_reference, &run.upper_reference}) {
    for (std::vector<double>& h : *group) std::fill(h.begin(), h.end(), 0.0);
  }
  const MarthsCriteria c = marths_criteria(run.histories(true));
  for (const auto* group : {&c.j7_nrms_pct, &c.j9_peak_pct, &c.j8_nrms_pct, &c.j10_peak_pct}) {
    for (const double v : *group) EXPECT_TRUE(std::isnan(v));
  }
  EXPECT_EQ(c.undefined, (std::vector<std::string>{"J7[1]", "J9[1]", "J7[2]", "J9[2]", "J8[1]", "J10[1]", "J8[2]",
                                                   "J10[2]", "J8[3]", "J10[3]", "J8[4]", "J10[4]"}));
  EXPECT_TRUE(c.finite());
  EXPECT_TRUE(std::isfinite(c.j2_nrms_pct[0]) && std::isfinite(c.j5_nrms_pct[1]));

  // The standard-deviation form has no denominator for a reference that stands still anywhere, not
  // only at zero (J8 undefined, J10's peak error defined); the RMS-ratio form has one there.
  for (std::vector<double>& h : run.upper_reference) std::fill(h.begin(), h.end(), 0.25);
  EXPECT_EQ(marths_criteria(run.histories(true)).undefined,
            (std::vector<std::string>{"J7[1]", "J9[1]", "J7[2]", "J9[2]", "J8[1]", "J8[2]", "J8[3]", "J8[4]"}));
  const MarthsCriteria rms = marths_criteria(run.histories(true), NrmsForm::kRmsRatio);
  EXPECT_TRUE(std::isfinite(rms.j8_nrms_pct[0]));
  EXPECT_EQ(std::count(rms.undefined.begin(), rms.undefined.end(), "J8[1]"), 0);

  // A non-finite history is not undefined: it makes the criteria not finite, whatever the reference.
  run.upper_numerical[2][100] = kNaN;
  const MarthsCriteria broken = marths_criteria(run.histories(true));
  EXPECT_EQ(std::count(broken.undefined.begin(), broken.undefined.end(), "J8[3]"), 0);
  EXPECT_FALSE(broken.finite());
}

TEST(BenchmarkMetrics, AMismatchedRunIsRefusedNamingTheHistory) {
  const SyntheticRun run;
  MarthsHistories h = run.histories(true);
  h.stroke_estimated.pop_back();
  try {
    (void)marths_criteria(h);
    FAIL() << "a missing estimated stroke was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("stroke_estimated"), std::string::npos) << e.what();
  }
  h = run.histories(true);
  h.interface_reference[1] = h.interface_reference[1].first(4000);
  try {
    (void)marths_criteria(h);
    FAIL() << "a short history was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("interface_reference[1]"), std::string::npos) << e.what();
  }
}

TEST(BenchmarkMetrics, MeanAndSdOverRunsAreEntryByEntryAndKeepANaN) {
  MarthsCriteria a;
  a.j1_delay_ms = {1.0, 2.0};
  a.j8_nrms_pct = {4.0};
  MarthsCriteria b = a;
  b.j1_delay_ms = {3.0, 2.0};
  b.j8_nrms_pct = {8.0};
  MarthsCriteria c = a;
  c.j1_delay_ms = {5.0, 2.0};
  c.j8_nrms_pct = {6.0};
  const std::vector<MarthsCriteria> runs{a, b, c};
  const MarthsCriteria mean = marths_mean(runs);
  EXPECT_EQ(mean.j1_delay_ms, (std::vector<double>{3.0, 2.0}));
  EXPECT_EQ(mean.j8_nrms_pct, (std::vector<double>{6.0}));
  const MarthsCriteria sd = marths_sd(runs);
  EXPECT_DOUBLE_EQ(sd.j1_delay_ms[0], 2.0);  // sqrt((4 + 0 + 4) / (3 - 1))
  EXPECT_EQ(sd.j1_delay_ms[1], 0.0);
  EXPECT_DOUBLE_EQ(sd.j8_nrms_pct[0], 2.0);
  EXPECT_EQ(marths_sd(std::vector<MarthsCriteria>{a}).j1_delay_ms[0], 0.0);

  // A diverged run is not averaged away.
  MarthsCriteria diverged = b;
  diverged.j1_delay_ms[0] = kNaN;
  const std::vector<MarthsCriteria> with_nan{a, diverged, c};
  EXPECT_TRUE(std::isnan(marths_mean(with_nan).j1_delay_ms[0]));
  EXPECT_TRUE(std::isnan(marths_sd(with_nan).j1_delay_ms[0]));
  EXPECT_EQ(marths_mean(with_nan).j1_delay_ms[1], 2.0);
  EXPECT_FALSE(marths_mean(with_nan).finite());

  // Runs of different shapes or forms, or none, cannot be averaged.
  MarthsCriteria shorter = b;
  shorter.j8_nrms_pct.clear();
  EXPECT_THROW((void)marths_mean(std::vector<MarthsCriteria>{a, shorter}), std::invalid_argument);
  MarthsCriteria printed = b;
  printed.nrms_form = NrmsForm::kRmsRatio;
  EXPECT_THROW((void)marths_mean(std::vector<MarthsCriteria>{a, printed}), std::invalid_argument);
  EXPECT_THROW((void)marths_mean(std::vector<MarthsCriteria>{}), std::invalid_argument);
}

}  // namespace
}  // namespace rths::test_benchmark_metrics
