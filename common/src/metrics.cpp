#include "rths/common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace rths {

double peak_abs(std::span<const double> r) {
  double peak = 0.0;
  for (const double v : r) {
    peak = std::max(peak, std::abs(v));
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

namespace {
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
}  // namespace

ResponseMetrics compare_responses(std::span<const double> response, std::span<const double> reference) {
  if (response.size() != reference.size()) {
    throw std::invalid_argument("compare_responses: histories differ in length");
  }
  ResponseMetrics m;
  m.peak = peak_abs(response);
  m.reference_peak = peak_abs(reference);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.j_peak_pct = m.reference_peak > 0.0 ? 100.0 * std::abs(m.peak - m.reference_peak) / m.reference_peak : nan;

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
  const auto [lo, hi] = std::minmax_element(reference.begin(), reference.end());
  const double range = reference.empty() ? 0.0 : *hi - *lo;
  m.j_rms_pct = range > 0.0 ? 100.0 * std::sqrt(diff_sq / n) / range : nan;
  m.sd = standard_deviation(response, mean_r);
  m.reference_sd = standard_deviation(reference, mean_ref);
  const double denom = m.sd * m.reference_sd * n;
  m.rho = denom > 0.0 ? covariance / denom : nan;
  return m;
}

TrackingMetrics tracking_metrics(std::span<const double> target, std::span<const double> measured, double rate_hz,
                                 double max_lag_s) {
  TrackingMetrics m;
  const std::size_t n = std::min(target.size(), measured.size());
  if (n == 0) return m;
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
