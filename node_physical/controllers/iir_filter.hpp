#pragma once

#include <array>
#include <span>

namespace rths {

// The binomial coefficient n over k, as a double (the filters' and the feedforward's differences).
double binomial(int n, int k);

// Direct-form II transposed IIR filter of fixed maximum order; no allocation.
class IirFilter {
 public:
  static constexpr int kMaxOrder = 8;
  IirFilter() = default;
  // b and a: order + 1 coefficients each, a[0] != 0 (normalised on construction).
  IirFilter(std::span<const double> b, std::span<const double> a);
  double step(double x);
  void reset();
  [[nodiscard]] std::span<const double> b() const;
  [[nodiscard]] std::span<const double> a() const;
  [[nodiscard]] int order() const { return order_; }

 private:
  int order_ = 0;  // the identity filter until given coefficients
  std::array<double, kMaxOrder + 1> b_{1.0};
  std::array<double, kMaxOrder + 1> a_{1.0};
  std::array<double, kMaxOrder> state_{};
};

// Digital Butterworth low-pass of the given order and cutoff at sample rate fs, by the bilinear
// transform with pre-warping (MATLAB butter(order, fc / (fs / 2))).
IirFilter butterworth_lowpass(int order, double cutoff_hz, double sample_rate_hz);

}  // namespace rths
