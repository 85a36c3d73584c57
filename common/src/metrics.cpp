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

}  // namespace rths
