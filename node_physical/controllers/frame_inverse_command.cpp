#include "node_physical/controllers/frame_inverse_command.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {

namespace {

using Root = FramePlantModel::Root;
using Gain = FramePlantModel::Gain;

}  // namespace

FrameInverseCommand::Coefficients FrameInverseCommand::coefficients(const FramePlantModel& model) {
  const auto& t = model.theta;
  const auto& k = model.gain;
  Coefficients c{};
  c.c1 = t[Root::kC1];
  c.wf2 = t[Root::kC1] * t[Root::kC1] + t[Root::kC2] * t[Root::kC2];
  c.a_sum = t[Root::kA1] + t[Root::kA2];
  c.a_product = t[Root::kA1] * t[Root::kA2];
  c.b_sum = t[Root::kB1] + t[Root::kB2];
  c.b_product = t[Root::kB1] * t[Root::kB2];
  c.d_sum = t[Root::kD1] + t[Root::kD2];
  c.d_product = t[Root::kD1] * t[Root::kD2];
  c.k11 = k[Gain::kK11];
  c.k12 = k[Gain::kK12];
  c.k21 = k[Gain::kK21];
  c.p1 = t[Root::kP1];
  c.determinant = k[Gain::kK11] * k[Gain::kK22] - k[Gain::kK12] * k[Gain::kK21];
  c.zero =
      (k[Gain::kK11] * k[Gain::kK22] * t[Root::kP2] - k[Gain::kK12] * k[Gain::kK21] * t[Root::kP1]) / c.determinant;
  return c;
}

double FrameInverseCommand::transmission_zero(const FramePlantModel& model) {
  return coefficients(model).zero;
}

bool FrameInverseCommand::invertible(const FramePlantModel& model) {
  const bool roots = std::all_of(model.theta.begin(), model.theta.end(), positive_finite);
  const bool gains = std::all_of(model.gain.begin(), model.gain.end(), [](double k) { return std::isfinite(k); });
  if (!roots || !gains) return false;
  const Coefficients c = coefficients(model);
  return c.determinant != 0.0 && positive_finite(c.zero) && c.k11 != 0.0;
}

// Lagrange weights of the cubic through the targets at s = 0, -1, -2, -3 (in steps, newest first):
// its value and first three derivatives at s = +1/2, the n-th divided by dt^n (choices 2 and 3).
FrameInverseCommand::FrameInverseCommand(const FramePlantModel& model, double dt_s) : dt_s_(dt_s) {
  if (!positive_finite(dt_s)) {
    throw std::invalid_argument(fmt::format("the inverse at a step of {} s; expected a step > 0", dt_s));
  }
  if (!invertible(model)) {
    throw std::invalid_argument(fmt::format(
        "the initial model cannot be inverted stably: roots [{}] rad/s and gains [{}]; expected every root > 0, "
        "k11 != 0, k11 k22 != k12 k21 and a transmission zero (k11 k22 p2 - k12 k21 p1) / (k11 k22 - k12 k21) "
        "> 0 (it is {})",
        fmt::join(model.theta, ", "), fmt::join(model.gain, ", "), coefficients(model).zero));
  }
  c_ = coefficients(model);
  constexpr int m = kExtrapolationOrder;
  constexpr double ahead = 0.5;
  for (int j = 0; j <= m; ++j) {
    // L_j(s) = prod_{i != j} (s + i) / (i - j), as coefficients, lowest power first.
    std::array<double, m + 1> basis{1.0};
    int degree = 0;
    for (int i = 0; i <= m; ++i) {
      if (i == j) continue;
      const double denominator = i - j;
      for (int q = degree + 1; q > 0; --q) basis[q] = (basis[q - 1] + i * basis[q]) / denominator;
      basis[0] = i * basis[0] / denominator;
      ++degree;
    }
    for (int n = 0; n <= 3; ++n) {
      double sum = 0.0;
      for (int q = m; q >= n; --q) {
        double factor = 1.0;
        for (int r = 0; r < n; ++r) factor *= q - r;
        sum = sum * ahead + factor * basis[q];
      }
      weights_[n][j] = sum / std::pow(dt_s, n);
    }
  }
}

bool FrameInverseCommand::set_model(const FramePlantModel& model) {
  if (!invertible(model)) return false;
  c_ = coefficients(model);
  return true;
}

FrameInverseCommand::Vector2 FrameInverseCommand::step(const Vector2& target) {
  if (!std::isfinite(target[0]) || !std::isfinite(target[1])) {
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  }
  const Coefficients& c = c_;
  if (!started_) {
    // At rest at the first target: v = F(0) w, q2' = 0, q1 from M(0) q = v, x = q1 / (b1 b2).
    past_.fill(target);
    e_ = c.wf2 * (c.k11 * target[1] - c.k21 * target[0]);
    q2_ = e_ / (c.determinant * c.zero);
    q1_ = (c.wf2 * target[0] - c.k12 * c.p1 * q2_) / c.k11;
    filter_ = {q1_ / c.b_product, 0.0};
    started_ = true;
  }
  for (std::size_t j = past_.size() - 1; j > 0; --j) past_[j] = past_[j - 1];
  past_[0] = target;

  // Block I: the target half a step ahead and its derivatives; v = F(s) w and v'.
  std::array<double, 2> v{};
  std::array<double, 2> v_rate{};
  for (std::size_t ch = 0; ch < 2; ++ch) {
    std::array<double, 4> w{};
    for (std::size_t n = 0; n < 4; ++n) {
      for (std::size_t j = 0; j < past_.size(); ++j) w[n] += weights_[n][j] * past_[j][ch];
    }
    v[ch] = w[2] + 2.0 * c.c1 * w[1] + c.wf2 * w[0];
    v_rate[ch] = w[3] + 2.0 * c.c1 * w[2] + c.wf2 * w[1];
  }

  // Blocks II-III: M(s) q = v by its second row eliminated (a first-order state, trapezoidal), q1
  // algebraically, u2 = (s + d1)(s + d2) q2.
  const double h = dt_s_ / 2.0;
  const double e = c.k11 * v[1] - c.k21 * v[0];
  const double e_rate = c.k11 * v_rate[1] - c.k21 * v_rate[0];
  const double q2 = ((1.0 - c.zero * h) * q2_ + h * (e + e_) / c.determinant) / (1.0 + c.zero * h);
  const double q2_rate = e / c.determinant - c.zero * q2;
  const double q2_accel = e_rate / c.determinant - c.zero * q2_rate;
  const double u2 = q2_accel + c.d_sum * q2_rate + c.d_product * q2;
  const double q1 = (v[0] - c.k12 * (q2_rate + c.p1 * q2)) / c.k11;

  // u1 = (s + a1)(s + a2) x with x = q1 / ((s + b1)(s + b2)), trapezoidal: (I - hA) x+ = (I + hA) x + hB (q1 + q1-).
  const double det = 1.0 + h * c.b_sum + h * h * c.b_product;
  const double rhs0 = filter_[0] + h * filter_[1];
  const double rhs1 = filter_[1] - h * (c.b_product * filter_[0] + c.b_sum * filter_[1]) + h * (q1 + q1_);
  const double x = ((1.0 + h * c.b_sum) * rhs0 + h * rhs1) / det;
  const double x_rate = (-h * c.b_product * rhs0 + rhs1) / det;
  const double x_accel = q1 - c.b_sum * x_rate - c.b_product * x;
  const double u1 = x_accel + c.a_sum * x_rate + c.a_product * x;

  q2_ = q2;
  e_ = e;
  q1_ = q1;
  filter_ = {x, x_rate};
  return {u1, u2};
}

}  // namespace rths
