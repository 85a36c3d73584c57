#pragma once

#include <span>

namespace rths {

// Seed 002 Eqs. 16-19 of one response against its reference (the monolithic run), plus peaks.
// Peaks are of the absolute value, as the paper's tables report them.
struct ResponseMetrics {
  double peak = 0.0;            // max |r|
  double reference_peak = 0.0;  // max |r_ref|
  double j_peak_pct = 0.0;      // Eq. 16: |peak - peak_ref| / peak_ref
  double j_rms_pct = 0.0;       // Eq. 17: rms(r - r_ref) / (max r_ref - min r_ref)
  double rho = 0.0;             // Eq. 18: correlation coefficient
  double sd = 0.0;              // Eq. 19: standard deviation of r
  double reference_sd = 0.0;
};

// Both histories must have the same length (the runs share their steps).
ResponseMetrics compare_responses(std::span<const double> response, std::span<const double> reference);

double peak_abs(std::span<const double> r);
double rms(std::span<const double> r);

}  // namespace rths
