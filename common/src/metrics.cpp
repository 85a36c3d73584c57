#include "rths/common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace rths {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// max(a, b) that keeps a NaN from either side: std::max(peak, NaN) returns peak, which would let a
// diverged history report a finite peak.
double max_keeping_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}

double mean(std::span<const double> r) {
  double sum = 0.0;
  for (const double v : r) {
    sum += v;
  }
  return r.empty() ? 0.0 : sum / static_cast<double>(r.size());
}

double standard_deviation(std::span<const double> r, double m) {
  double sum = 0.0;
  for (const double v : r) {
    sum += (v - m) * (v - m);
  }
  return r.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(r.size()));
}

// max - min of a history, NaN when it holds a NaN (std::minmax_element would step over it).
double range(std::span<const double> r) {
  if (r.empty()) {
    return 0.0;
  }
  double lo = r.front();
  double hi = r.front();
  for (const double v : r) {
    if (std::isnan(v)) {
      return kNaN;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return hi - lo;
}

bool all_finite(std::span<const double> r) {
  return std::all_of(r.begin(), r.end(), [](double v) { return std::isfinite(v); });
}

}  // namespace

double peak_abs(std::span<const double> r) {
  double peak = 0.0;
  for (const double v : r) {
    peak = max_keeping_nan(peak, std::abs(v));
  }
  return peak;
}

double rms(std::span<const double> r) {
  if (r.empty()) {
    return 0.0;
  }
  double sum = 0.0;
  for (const double v : r) {
    sum += v * v;
  }
  return std::sqrt(sum / static_cast<double>(r.size()));
}

bool ResponseMetrics::finite() const {
  for (const double v : {peak, reference_peak, sd, reference_sd, reference_range}) {
    if (!std::isfinite(v)) {
      return false;
    }
  }
  // A ratio may be undefined only for want of a denominator (a reference that never moves, a
  // response that stays constant); then compare_responses gives NaN by design.
  return (std::isfinite(j_peak_pct) || reference_peak == 0.0) && (std::isfinite(j_rms_pct) || reference_range == 0.0) &&
         (std::isfinite(rho) || sd == 0.0 || reference_sd == 0.0);
}

ResponseMetrics compare_responses(std::span<const double> response, std::span<const double> reference) {
  if (response.size() != reference.size()) {
    throw std::invalid_argument("compare_responses: histories differ in length");
  }
  ResponseMetrics m;
  m.peak = peak_abs(response);
  m.reference_peak = peak_abs(reference);
  // The negated test sends a NaN peak to NaN rather than to the zero-reference case.
  m.j_peak_pct = !(m.reference_peak == 0.0) ? 100.0 * std::abs(m.peak - m.reference_peak) / m.reference_peak : kNaN;

  double diff_sq = 0.0;
  double covariance = 0.0;
  const double mean_r = mean(response);
  const double mean_ref = mean(reference);
  for (std::size_t i = 0; i < response.size(); ++i) {
    const double d = response[i] - reference[i];
    diff_sq += d * d;
    covariance += (response[i] - mean_r) * (reference[i] - mean_ref);
  }
  const auto n = static_cast<double>(response.size());
  m.reference_range = range(reference);
  m.j_rms_pct = !(m.reference_range == 0.0) ? 100.0 * std::sqrt(diff_sq / n) / m.reference_range : kNaN;
  m.sd = standard_deviation(response, mean_r);
  m.reference_sd = standard_deviation(reference, mean_ref);
  const double denom = m.sd * m.reference_sd * n;
  m.rho = !(denom == 0.0) ? covariance / denom : kNaN;
  return m;
}

TrackingMetrics tracking_metrics(std::span<const double> target, std::span<const double> measured, double rate_hz,
                                 double max_lag_s) {
  TrackingMetrics m;
  const std::size_t n = std::min(target.size(), measured.size());
  if (n == 0) return m;
  // A non-finite sample makes every criterion NaN: a lag, a ratio or a peak computed around it
  // would describe a run that did not happen.
  if (!all_finite(target.first(n)) || !all_finite(measured.first(n))) {
    return {kNaN, kNaN, kNaN};
  }
  double err2 = 0.0;
  double ref2 = 0.0;
  double err_peak = 0.0;
  double ref_peak = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    const double e = measured[k] - target[k];
    err2 += e * e;
    ref2 += target[k] * target[k];
    err_peak = std::max(err_peak, std::abs(e));
    ref_peak = std::max(ref_peak, std::abs(target[k]));
  }
  if (ref2 > 0) m.j2_nrms_pct = 100.0 * std::sqrt(err2 / ref2);
  if (ref_peak > 0) m.j3_peak_pct = 100.0 * err_peak / ref_peak;

  const auto max_lag =
      static_cast<std::ptrdiff_t>(std::min(std::lround(max_lag_s * rate_hz), static_cast<long>(n > 1 ? n - 1 : 0)));
  double best = -std::numeric_limits<double>::infinity();
  std::ptrdiff_t best_lag = 0;
  const auto len = static_cast<std::ptrdiff_t>(n);
  for (std::ptrdiff_t r = -max_lag; r <= max_lag; ++r) {
    double sum = 0.0;
    for (std::ptrdiff_t k = std::max<std::ptrdiff_t>(0, -r); k < std::min(len, len - r); ++k) {
      sum += target[static_cast<std::size_t>(k)] * measured[static_cast<std::size_t>(k + r)];
    }
    if (std::isnan(sum)) {
      m.j1_delay_ms = kNaN;  // products of huge finite samples overflowed: no lag can be named
      return m;
    }
    // Ties go to the smallest |r| (finddelay does the same), so a silent record reports 0.
    if (sum > best || (sum == best && std::abs(r) < std::abs(best_lag))) {
      best = sum;
      best_lag = r;
    }
  }
  m.j1_delay_ms = 1000.0 * static_cast<double>(best_lag) / rate_hz;
  return m;
}

}  // namespace rths
