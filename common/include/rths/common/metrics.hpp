#pragma once

#include <span>

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

// Tracking of one actuator, target x_t against measured x_m (seed 000 maRTHS criteria J1-J3, as
// seed 001 reports them).
struct TrackingMetrics {
  // J1: the lag r (ms) maximising sum_k x_t[k] x_m[k + r], over |r| <= the search window; positive
  // when the measurement lags the target (MATLAB finddelay's sign, seed 000 digest's caveat).
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

}  // namespace rths
