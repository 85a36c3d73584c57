#include "common/metrics/metrics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <unsupported/Eigen/FFT>

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

// The criteria's entries in a fixed order (J1 .. J10), for the statistics over runs.
template <typename Criteria>
auto entries(Criteria& c) {
  return std::array{&c.j1_delay_ms, &c.j2_nrms_pct, &c.j3_peak_pct, &c.j4_delay_ms, &c.j5_nrms_pct,
                    &c.j6_peak_pct, &c.j7_nrms_pct, &c.j8_nrms_pct, &c.j9_peak_pct, &c.j10_peak_pct};
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

double finddelay_samples(std::span<const double> x, std::span<const double> y, std::size_t max_lag) {
  if (x.empty() || y.empty() || !all_finite(x) || !all_finite(y)) {
    return kNaN;
  }
  double xx = 0.0;
  double yy = 0.0;
  for (const double v : x) xx += v * v;
  for (const double v : y) yy += v * v;
  const double scale = std::sqrt(xx) * std::sqrt(yy);
  if (!std::isfinite(scale)) {
    return kNaN;  // the energies overflowed: no correlation can be formed
  }
  if (xx == 0.0 || yy == 0.0) {
    return 0.0;  // finddelay: a silent signal correlates with nothing
  }
  const std::size_t longest = std::max(x.size(), y.size());
  const std::size_t window = std::min(max_lag, longest - 1);

  // r[m] = sum_k x[k + m] y[k] for |m| < max(Lx, Ly), by FFT over a length that keeps the circular
  // correlation free of wrap-around at every such lag (m < 0 lands at nfft + m).
  std::size_t nfft = 1;
  while (nfft < 2 * longest - 1) nfft *= 2;
  std::vector<double> xp(nfft, 0.0);
  std::vector<double> yp(nfft, 0.0);
  std::copy(x.begin(), x.end(), xp.begin());
  std::copy(y.begin(), y.end(), yp.begin());
  Eigen::FFT<double> fft;
  std::vector<std::complex<double>> xf;
  std::vector<std::complex<double>> yf;
  fft.fwd(xf, xp);
  fft.fwd(yf, yp);
  for (std::size_t i = 0; i < nfft; ++i) xf[i] *= std::conj(yf[i]);
  std::vector<std::complex<double>> r;
  fft.inv(r, xf);
  const auto normalised = [&](std::ptrdiff_t m) {
    const std::size_t at = m >= 0 ? static_cast<std::size_t>(m) : nfft - static_cast<std::size_t>(-m);
    return std::abs(r[at].real()) / scale;
  };

  const auto w = static_cast<std::ptrdiff_t>(window);
  double best = -1.0;
  for (std::ptrdiff_t m = -w; m <= w; ++m) {
    best = std::max(best, normalised(m));
  }
  if (!std::isfinite(best)) {
    return kNaN;
  }
  if (best < 1e-8) {
    return 0.0;  // finddelay: no significant correlation
  }
  // The smallest |m| among the (rounding-equal) maxima; at equal |m| the negative lag, which is the
  // positive delay.
  constexpr double kTie = 1e-12;
  for (std::ptrdiff_t a = 0; a <= w; ++a) {
    if (normalised(-a) >= best - kTie) return static_cast<double>(a);
    if (normalised(a) >= best - kTie) return -static_cast<double>(a);
  }
  return 0.0;  // not reached: the maximum lies in the window
}

double finddelay_ms(std::span<const double> x, std::span<const double> y, double rate_hz, std::size_t max_lag) {
  return 1000.0 * finddelay_samples(x, y, max_lag) / rate_hz;
}

namespace {

void require_same_length(std::span<const double> response, std::span<const double> reference, const char* what) {
  if (response.size() != reference.size()) {
    throw std::invalid_argument(std::string(what) + ": the response has " + std::to_string(response.size()) +
                                " samples, the reference " + std::to_string(reference.size()));
  }
}

}  // namespace

double nrms_error_pct(std::span<const double> response, std::span<const double> reference, NrmsForm form) {
  require_same_length(response, reference, "nrms_error_pct");
  if (reference.empty() || !all_finite(response) || !all_finite(reference)) {
    return kNaN;
  }
  double error_sq = 0.0;
  double reference_sq = 0.0;
  if (form == NrmsForm::kRmsRatio) {
    for (std::size_t k = 0; k < reference.size(); ++k) {
      const double e = response[k] - reference[k];
      error_sq += e * e;
      reference_sq += reference[k] * reference[k];
    }
  } else {
    double error_mean = 0.0;
    for (std::size_t k = 0; k < reference.size(); ++k) error_mean += response[k] - reference[k];
    error_mean /= static_cast<double>(reference.size());
    const double reference_mean = mean(reference);
    for (std::size_t k = 0; k < reference.size(); ++k) {
      const double e = response[k] - reference[k] - error_mean;
      const double d = reference[k] - reference_mean;
      error_sq += e * e;
      reference_sq += d * d;
    }
  }
  // A reference without a denominator, or sums that overflowed, give NaN, not 0 or inf.
  const double ratio = 100.0 * std::sqrt(error_sq / reference_sq);
  return reference_sq > 0.0 && std::isfinite(ratio) ? ratio : kNaN;
}

double peak_error_pct(std::span<const double> response, std::span<const double> reference) {
  require_same_length(response, reference, "peak_error_pct");
  if (reference.empty() || !all_finite(response) || !all_finite(reference)) {
    return kNaN;
  }
  double error_peak = 0.0;
  for (std::size_t k = 0; k < reference.size(); ++k) {
    error_peak = std::max(error_peak, std::abs(response[k] - reference[k]));
  }
  const double reference_peak = peak_abs(reference);
  const double ratio = 100.0 * error_peak / reference_peak;
  return reference_peak > 0.0 && std::isfinite(ratio) ? ratio : kNaN;
}

TrackingMetrics tracking_metrics(std::span<const double> target, std::span<const double> measured, double rate_hz,
                                 double max_lag_s) {
  TrackingMetrics m;
  const std::size_t n = std::min(target.size(), measured.size());
  if (n == 0) return m;
  const auto t = target.first(n);
  const auto x = measured.first(n);
  // A non-finite sample makes every criterion NaN: a lag, a ratio or a peak computed around it
  // would describe a run that did not happen.
  if (!all_finite(t) || !all_finite(x)) {
    return {kNaN, kNaN, kNaN};
  }
  // A zero target gives zeros here (documented above), where the ratios alone are undefined.
  if (peak_abs(t) > 0.0) {
    m.j2_nrms_pct = nrms_error_pct(x, t, NrmsForm::kRmsRatio);
    m.j3_peak_pct = peak_error_pct(x, t);
  }
  const auto window = static_cast<std::size_t>(std::max(0L, std::lround(max_lag_s * rate_hz)));
  m.j1_delay_ms = finddelay_ms(t, x, rate_hz, window);
  return m;
}

bool MarthsCriteria::finite() const {
  const auto groups = entries(*this);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g]->size(); ++i) {
      if (std::isfinite((*groups[g])[i])) continue;
      // fmt rather than "J" + std::to_string: GCC 12 raises a false -Wrestrict/-Wstringop-overflow on it.
      const std::string name = fmt::format("J{}[{}]", g + 1, i + 1);
      if (std::find(undefined.begin(), undefined.end(), name) == undefined.end()) return false;
    }
  }
  return true;
}

namespace {

using Histories = std::vector<std::span<const double>>;

// Every history of the run has the length of the first stroke target (or of the first history given).
void check_shapes(const MarthsHistories& run) {
  const auto require_size = [](const Histories& group, const char* name, const Histories& like, const char* like_name) {
    if (group.size() != like.size()) {
      throw std::invalid_argument(std::string(name) + ": " + std::to_string(group.size()) + " histories, " + like_name +
                                  " has " + std::to_string(like.size()));
    }
  };
  require_size(run.stroke_measured, "stroke_measured", run.stroke_target, "stroke_target");
  if (!run.stroke_estimated.empty()) {
    require_size(run.stroke_estimated, "stroke_estimated", run.stroke_target, "stroke_target");
  }
  require_size(run.interface_numerical, "interface_numerical", run.interface_estimated, "interface_estimated");
  require_size(run.interface_reference, "interface_reference", run.interface_estimated, "interface_estimated");
  require_size(run.upper_reference, "upper_reference", run.upper_numerical, "upper_numerical");

  std::size_t length = 0;
  bool have_length = false;
  for (const auto& [group, name] :
       {std::pair{&run.stroke_target, "stroke_target"}, std::pair{&run.stroke_measured, "stroke_measured"},
        std::pair{&run.stroke_estimated, "stroke_estimated"},
        std::pair{&run.interface_estimated, "interface_estimated"},
        std::pair{&run.interface_numerical, "interface_numerical"},
        std::pair{&run.interface_reference, "interface_reference"}, std::pair{&run.upper_numerical, "upper_numerical"},
        std::pair{&run.upper_reference, "upper_reference"}}) {
    for (std::size_t i = 0; i < group->size(); ++i) {
      const std::size_t n = (*group)[i].size();
      if (!have_length) {
        length = n;
        have_length = true;
      } else if (n != length) {
        throw std::invalid_argument(std::string(name) + "[" + std::to_string(i) + "]: " + std::to_string(n) +
                                    " samples, the run's other histories have " + std::to_string(length));
      }
    }
  }
  if (!(run.rate_hz > 0.0) || !std::isfinite(run.rate_hz)) {
    throw std::invalid_argument("rate_hz: must be finite and above 0");
  }
}

}  // namespace

namespace {

// Whether a reference history gives a normalised error no denominator: all zero (the peak form and
// the RMS-ratio form), or constant (the standard-deviation form).
bool motionless(std::span<const double> reference, std::optional<NrmsForm> form) {
  if (!form || *form == NrmsForm::kRmsRatio) return peak_abs(reference) == 0.0;
  return std::all_of(reference.begin(), reference.end(), [&](double v) { return v == reference.front(); });
}

}  // namespace

MarthsCriteria marths_criteria(const MarthsHistories& run, NrmsForm form) {
  check_shapes(run);
  MarthsCriteria c;
  c.nrms_form = form;
  // A normalised error, and its name in `undefined` when it is NaN only for want of reference motion.
  const auto error = [&c](const char* criterion, std::size_t i, std::span<const double> response,
                          std::span<const double> reference, std::optional<NrmsForm> nrms) {
    const double value = nrms ? nrms_error_pct(response, reference, *nrms) : peak_error_pct(response, reference);
    if (std::isnan(value) && all_finite(response) && all_finite(reference) && motionless(reference, nrms)) {
      c.undefined.push_back(fmt::format("{}[{}]", criterion, i + 1));
    }
    return value;
  };
  const std::optional<NrmsForm> peak;
  for (std::size_t i = 0; i < run.stroke_target.size(); ++i) {
    const auto target = run.stroke_target[i];
    const auto measured = run.stroke_measured[i];
    c.j1_delay_ms.push_back(finddelay_ms(target, measured, run.rate_hz));
    c.j2_nrms_pct.push_back(error("J2", i, measured, target, form));
    c.j3_peak_pct.push_back(error("J3", i, measured, target, peak));
    c.j4_delay_ms.push_back(
        finddelay_ms(target, run.stroke_estimated.empty() ? measured : run.stroke_estimated[i], run.rate_hz));
  }
  for (std::size_t i = 0; i < run.interface_estimated.size(); ++i) {
    const auto estimated = run.interface_estimated[i];
    c.j5_nrms_pct.push_back(error("J5", i, estimated, run.interface_numerical[i], form));
    c.j6_peak_pct.push_back(error("J6", i, estimated, run.interface_numerical[i], peak));
    c.j7_nrms_pct.push_back(error("J7", i, estimated, run.interface_reference[i], form));
    c.j9_peak_pct.push_back(error("J9", i, estimated, run.interface_reference[i], peak));
  }
  for (std::size_t i = 0; i < run.upper_numerical.size(); ++i) {
    c.j8_nrms_pct.push_back(error("J8", i, run.upper_numerical[i], run.upper_reference[i], form));
    c.j10_peak_pct.push_back(error("J10", i, run.upper_numerical[i], run.upper_reference[i], peak));
  }
  return c;
}

namespace {

// Applies reduce(one entry's values over the runs) to every entry.
template <typename Reduce>
MarthsCriteria over_runs(std::span<const MarthsCriteria> runs, Reduce reduce) {
  if (runs.empty()) {
    throw std::invalid_argument("criteria over runs: no runs");
  }
  MarthsCriteria out = runs.front();
  const auto out_entries = entries(out);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].nrms_form != out.nrms_form) {
      throw std::invalid_argument("criteria over runs: run " + std::to_string(r) + " has another NRMS form than run 0");
    }
    const auto run_entries = entries(runs[r]);
    for (std::size_t e = 0; e < out_entries.size(); ++e) {
      if (run_entries[e]->size() != out_entries[e]->size()) {
        throw std::invalid_argument("criteria over runs: run " + std::to_string(r) + " has J" + std::to_string(e + 1) +
                                    " of " + std::to_string(run_entries[e]->size()) + " entries, run 0 of " +
                                    std::to_string(out_entries[e]->size()));
      }
    }
  }
  // An entry is undefined over the runs when every run left it undefined; a NaN of any other kind
  // stays one that makes the result not finite.
  std::erase_if(out.undefined, [&](const std::string& name) {
    return std::any_of(runs.begin(), runs.end(), [&](const MarthsCriteria& r) {
      return std::find(r.undefined.begin(), r.undefined.end(), name) == r.undefined.end();
    });
  });
  std::vector<double> values(runs.size());
  for (std::size_t e = 0; e < out_entries.size(); ++e) {
    for (std::size_t i = 0; i < out_entries[e]->size(); ++i) {
      for (std::size_t r = 0; r < runs.size(); ++r) {
        values[r] = (*entries(runs[r])[e])[i];
      }
      (*out_entries[e])[i] = reduce(values);
    }
  }
  return out;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0.0;
  for (const double x : v) sum += x;  // a NaN stays NaN
  return sum / static_cast<double>(v.size());
}

}  // namespace

MarthsCriteria marths_mean(std::span<const MarthsCriteria> runs) {
  return over_runs(runs, [](const std::vector<double>& v) { return mean_of(v); });
}

MarthsCriteria marths_sd(std::span<const MarthsCriteria> runs) {
  return over_runs(runs, [](const std::vector<double>& v) {
    if (v.size() < 2) return all_finite(v) ? 0.0 : kNaN;
    const double m = mean_of(v);
    double sum = 0.0;
    for (const double x : v) sum += (x - m) * (x - m);
    return std::sqrt(sum / static_cast<double>(v.size() - 1));
  });
}

}  // namespace rths
