#include "node_physical/controllers/iir_filter.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {
namespace {

// Coefficients of prod_k (z - root_k), highest power first, into out[0..roots.size()].
template <std::size_t N>
void expand_roots(std::span<const std::complex<double>> roots, std::array<std::complex<double>, N>& out) {
  std::fill(out.begin(), out.end(), std::complex<double>{});
  out[0] = 1.0;
  for (std::size_t k = 0; k < roots.size(); ++k) {
    for (std::size_t j = k + 1; j > 0; --j) out[j] -= roots[k] * out[j - 1];
  }
}

}  // namespace

double binomial(int n, int k) {
  double c = 1.0;
  for (int j = 1; j <= k; ++j) c = c * (n - k + j) / j;
  return c;
}

IirFilter::IirFilter(std::span<const double> b, std::span<const double> a) {
  const std::size_t size = std::max(b.size(), a.size());
  if (b.empty() || a.empty() || size > kMaxOrder + 1) {
    throw std::invalid_argument(
        fmt::format("IIR filter with {} numerator and {} denominator coefficients; expected "
                    "1..{} each",
                    b.size(), a.size(), kMaxOrder + 1));
  }
  if (a[0] == 0.0 || !std::isfinite(a[0])) {
    throw std::invalid_argument(fmt::format("IIR filter denominator starts with {}; expected a[0] != 0", a[0]));
  }
  order_ = static_cast<int>(size) - 1;
  b_.fill(0.0);
  a_.fill(0.0);
  for (std::size_t j = 0; j < b.size(); ++j) b_[j] = b[j] / a[0];
  for (std::size_t j = 0; j < a.size(); ++j) a_[j] = a[j] / a[0];
}

// Direct form II transposed, MATLAB filter()'s form: one state per order.
double IirFilter::step(double x) {
  const double y = b_[0] * x + state_[0];
  for (int j = 0; j + 1 < order_; ++j) state_[j] = b_[j + 1] * x - a_[j + 1] * y + state_[j + 1];
  if (order_ > 0) state_[order_ - 1] = b_[order_] * x - a_[order_] * y;
  return y;
}

void IirFilter::reset() {
  state_.fill(0.0);
}

std::span<const double> IirFilter::b() const {
  return {b_.data(), static_cast<std::size_t>(order_) + 1};
}
std::span<const double> IirFilter::a() const {
  return {a_.data(), static_cast<std::size_t>(order_) + 1};
}

// Analog Butterworth prototype poles on the circle of the pre-warped cutoff 2 fs tan(pi fc / fs),
// mapped by the bilinear transform z = (2 fs + p) / (2 fs - p); the n zeros at s = inf land on z = -1.
// This is MATLAB butter()'s design (it goes through state space, which gives the same coefficients
// to rounding). The gain is sum(a) / 2^n, so that the coefficients as stored have H(1) = 1: the
// exact prod(1 - z_k) / 2^n differs from it by the rounding of a, which the polynomial form
// amplifies by about 2^n / prod|1 - z_k| (at 1024 Hz: 4e-12 for 4th order at 20 Hz, 1e-7 for 8th
// order at 20 Hz, 1e-2 at 5 Hz; like MATLAB's [b, a] form, high orders at low cutoffs lose accuracy).
IirFilter butterworth_lowpass(int order, double cutoff_hz, double sample_rate_hz) {
  if (order < 1 || order > IirFilter::kMaxOrder) {
    throw std::invalid_argument(
        fmt::format("Butterworth order {}; expected 1..{}", order, static_cast<int>(IirFilter::kMaxOrder)));
  }
  if (!(sample_rate_hz > 0) || !(cutoff_hz > 0) || !(cutoff_hz < sample_rate_hz / 2)) {
    throw std::invalid_argument(fmt::format("Butterworth cutoff {} Hz at {} Hz; expected 0 < cutoff < {} Hz (Nyquist)",
                                            cutoff_hz, sample_rate_hz, sample_rate_hz / 2));
  }
  const double two_fs = 2.0 * sample_rate_hz;
  const double warped = two_fs * std::tan(std::numbers::pi * cutoff_hz / sample_rate_hz);
  std::array<std::complex<double>, IirFilter::kMaxOrder> poles{};
  for (int k = 0; k < order; ++k) {
    const double angle = std::numbers::pi * (2.0 * k + order + 1.0) / (2.0 * order);
    const std::complex<double> analog = warped * std::polar(1.0, angle);
    poles[k] = (two_fs + analog) / (two_fs - analog);
  }
  std::array<std::complex<double>, IirFilter::kMaxOrder + 1> den{};
  expand_roots(std::span<const std::complex<double>>(poles.data(), static_cast<std::size_t>(order)), den);
  std::array<double, IirFilter::kMaxOrder + 1> b{};
  std::array<double, IirFilter::kMaxOrder + 1> a{};
  double den_at_one = 0.0;
  for (int j = 0; j <= order; ++j) {
    a[j] = den[j].real();
    den_at_one += a[j];
  }
  const double gain = den_at_one / std::pow(2.0, order);
  for (int j = 0; j <= order; ++j) b[j] = gain * binomial(order, j);
  const auto size = static_cast<std::size_t>(order) + 1;
  return {std::span<const double>(b.data(), size), std::span<const double>(a.data(), size)};
}

}  // namespace rths
