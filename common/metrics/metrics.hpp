#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace rths {

// Seed 002 Eqs. 16-19 of one response against its reference (the monolithic run), plus peaks.
// Peaks are of the absolute value, as the paper's tables report them. A non-finite sample in either
// history makes every metric computed from that history NaN (never skipped): a diverged run cannot
// report a peak or an error. A ratio whose reference gives no denominator (a reference peak, range
// or SD of 0) is NaN too, by definition.
struct ResponseMetrics {
  double peak = 0.0;            // max |r|
  double reference_peak = 0.0;  // max |r_ref|
  double j_peak_pct = 0.0;      // Eq. 16: |peak - peak_ref| / peak_ref
  double j_rms_pct = 0.0;       // Eq. 17: rms(r - r_ref) / (max r_ref - min r_ref)
  double rho = 0.0;             // Eq. 18: correlation coefficient
  double sd = 0.0;              // Eq. 19: standard deviation of r
  double reference_sd = 0.0;
  double reference_range = 0.0;  // max r_ref - min r_ref, Eq. 17's denominator

  // Every metric is a number, or NaN only because the reference leaves its ratio undefined (see
  // above). False when a history held a non-finite value or a metric overflowed: a run with such
  // metrics must not report success.
  [[nodiscard]] bool finite() const;
};

// Both histories must have the same length (the runs share their steps).
ResponseMetrics compare_responses(std::span<const double> response, std::span<const double> reference);

// ---- Delays and normalised errors of one signal against another (seed 000 §3.7) -------------------

// A lag window as wide as the record: MATLAB finddelay's default (max(Lx, Ly) - 1).
inline constexpr std::size_t kWholeRecord = std::numeric_limits<std::size_t>::max();

// MATLAB finddelay(x, y, max_lag) in samples: the delay of y behind x, positive when y lags x (y[k] =
// x[k - d] gives d), as the maRTHS benchmark computes its J1 and J4 (S5_Evaluation.m: finddelay(target,
// measured)). Seed 000 Eq. 9 as printed has the opposite sign; its Table 3 follows the code.
// Its rules (MathWorks' finddelay reference, "Algorithms"):
// - the lag m over |m| <= max_lag maximising |sum_k x[k + m] y[k]| / sqrt(sum x^2 sum y^2), d = -m; the
//   absolute value, so an inverted copy has the delay of the copy;
// - the correlation is not divided by the overlap: a periodic record that does not start and end at
//   rest biases d towards 0, as in MATLAB;
// - among equal maxima the smallest |d| and, of d and -d, the positive one; values within 1e-12 of
//   the largest (on the normalised scale, at most 1) are equal, since the correlation is computed by
//   FFT (as MATLAB's xcorr does) and its rounding must not pick between lags that tie;
// - 0 when either signal is all zeros or the largest normalised correlation is below 1e-8;
// - signals of different lengths are compared as if the shorter were padded with zeros (xcorr);
//   max_lag is capped at the longer length - 1.
// NaN when a sample is not finite, the sums overflow, or a signal is empty: a delay computed around
// a NaN would describe a run that did not happen.
double finddelay_samples(std::span<const double> x, std::span<const double> y, std::size_t max_lag = kWholeRecord);

// finddelay_samples in ms at rate_hz: J1 (target, measured strokes), J4 (target, estimated strokes).
double finddelay_ms(std::span<const double> x, std::span<const double> y, double rate_hz,
                    std::size_t max_lag = kWholeRecord);

// The two forms of the benchmark's normalised error of a response r against its reference.
enum class NrmsForm : std::uint8_t {
  // std(r - ref) / std(ref) x 100: the benchmark package's code (S5_Evaluation.m), the means of the
  // error and of the reference removed (MATLAB's N - 1 cancels in the ratio). The tables of seeds 001
  // and 003 come from this code (seed 000's Table 3 presumably too: it is its authors' package), so the
  // product reports this form by default.
  kStdRatio,
  // sqrt(sum (r - ref)^2 / sum ref^2) x 100: seed 000 §3.7 as printed (J2, Eq. 10, and J5, J7, J8
  // alike; the x 100 printed under the root is a typesetting slip). An offset in the error counts
  // here, not above.
  kRmsRatio,
};

// Both take histories of the same length (std::invalid_argument otherwise). Each is NaN when a sample
// of either history is not finite, a history is empty, or the reference gives no denominator (all
// zeros, or constant for kStdRatio): a ratio that is undefined is not reported as 0.
double nrms_error_pct(std::span<const double> response, std::span<const double> reference,
                      NrmsForm form = NrmsForm::kStdRatio);
// max |r - ref| / max |ref| x 100 (J3, J6, J9, J10).
double peak_error_pct(std::span<const double> response, std::span<const double> reference);

// Tracking of one actuator, target x_t against measured x_m (seed 000 maRTHS criteria J1-J3, as
// seed 001 reports them).
struct TrackingMetrics {
  // J1: finddelay_ms(x_t, x_m) over |r| <= the search window; positive when the measurement lags the
  // target (MATLAB finddelay's sign, seed 000 digest's caveat).
  double j1_delay_ms = 0.0;
  // J2: sqrt(sum (x_m - x_t)^2 / sum x_t^2), %.
  double j2_nrms_pct = 0.0;
  // J3: max |x_m - x_t| / max |x_t|, %.
  double j3_peak_pct = 0.0;
};

// J1-J3 over the samples [from, end) of both histories (same length, sampled at rate_hz); the lag
// search spans +-max_lag_s. Histories with a zero target give zeros, not NaN; a non-finite sample in
// either history gives NaN for all three.
TrackingMetrics tracking_metrics(std::span<const double> target, std::span<const double> measured, double rate_hz,
                                 double max_lag_s = 0.1);

// max |r|; NaN when r holds a NaN. rms(r) likewise propagates a non-finite sample.
double peak_abs(std::span<const double> r);
double rms(std::span<const double> r);

// ---- The maRTHS benchmark's criteria J1-J10 (seed 000 §3.7, Table 1) ---------------------------------

// One run's histories, each sampled at rate_hz, all of the same length. Units are free (SI in rths;
// the package uses mm and rad): every criterion but the delays is a ratio of one signal's units.
struct MarthsHistories {
  double rate_hz = 1024.0;
  // Per actuator (0: bottom, 1: top in the benchmark): the stroke targets eta_ns (from the setup) and
  // the measured strokes eta_m.
  std::vector<std::span<const double>> stroke_target;
  std::vector<std::span<const double>> stroke_measured;
  // The strokes as the controller estimates them (seed 000's eta_hat_m of J4 as printed: its LQG's
  // Kalman filter); empty: J4 from the measured strokes, as the package's code computes it (J4 = J1,
  // the tables of seeds 001 and 003).
  std::vector<std::span<const double>> stroke_estimated;
  // Per interface DOF (0: x, 1: theta): from the measured (or the controller's estimated) strokes
  // through the inverse kinematics (psi_hat_m), the numerical substructure's (psi_ns, the target),
  // the reference structure's (psi).
  std::vector<std::span<const double>> interface_estimated;
  std::vector<std::span<const double>> interface_numerical;
  std::vector<std::span<const double>> interface_reference;
  // Per upper-storey response (the benchmark's x2, theta2, x3, theta3): the numerical substructure's
  // and the reference structure's.
  std::vector<std::span<const double>> upper_numerical;
  std::vector<std::span<const double>> upper_reference;
};

// A run's J1-J10, each entry as the package's S5_Evaluation.m computes it (the NRMS in the form
// given). A criterion whose histories hold a non-finite sample is NaN; the others are unaffected.
struct MarthsCriteria {
  NrmsForm nrms_form = NrmsForm::kStdRatio;
  // Per actuator.
  std::vector<double> j1_delay_ms;  // finddelay(eta_ns, eta_m)
  std::vector<double> j2_nrms_pct;  // eta_m against eta_ns
  std::vector<double> j3_peak_pct;
  std::vector<double> j4_delay_ms;  // finddelay(eta_ns, eta_hat_m), or of eta_m (see stroke_estimated)
  // Per interface DOF.
  std::vector<double> j5_nrms_pct;  // psi_hat_m against psi_ns
  std::vector<double> j6_peak_pct;
  std::vector<double> j7_nrms_pct;  // psi_hat_m against psi
  std::vector<double> j9_peak_pct;
  // Per upper-storey response: psi_ns against psi (J10 is printed with psi_hat_ns, the code uses psi_ns).
  std::vector<double> j8_nrms_pct;
  std::vector<double> j10_peak_pct;

  // The entries left undefined (NaN) though every history was finite, because the history they are
  // normalised by has no motion (a reference that stays at rest: a run that ends before the ground
  // moves), named as "J7[2]" (criterion, entry from 1). Undefined is not wrong: nothing diverged.
  std::vector<std::string> undefined;

  // Every criterion is a number or one of `undefined`: a run with another NaN criterion (a history
  // that held a non-finite value) must not report success.
  [[nodiscard]] bool finite() const;
};

// J1-J10 of one run. Throws std::invalid_argument, naming the history, when the groups' sizes
// disagree (stroke_measured and stroke_estimated against stroke_target, the interface groups against
// each other, the upper groups against each other), a history's length differs from the others', or
// rate_hz is not a finite number above 0.
MarthsCriteria marths_criteria(const MarthsHistories& run, NrmsForm form = NrmsForm::kStdRatio);

// Entry by entry over runs (the package averages its uncertain runs, leaving out the nominal one:
// pass only the runs to average). The mean, and the sample standard deviation (N - 1, as MATLAB's
// std; 0 for one run). A NaN entry in any run makes that entry NaN: a
// diverged run is not averaged away. Throws std::invalid_argument for no runs or runs of different
// shapes or NRMS forms.
MarthsCriteria marths_mean(std::span<const MarthsCriteria> runs);
MarthsCriteria marths_sd(std::span<const MarthsCriteria> runs);

}  // namespace rths
