#include "node_physical/controllers/frame_inverse_command.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Core>
#include <Eigen/LU>
#include <unsupported/Eigen/AutoDiff>

#include "node_physical/controllers/polynomial_weights.hpp"

namespace rths {

namespace {

using Root = FramePlantModel::Root;
using Gain = FramePlantModel::Gain;
using Gains = std::array<double, FramePlantModel::kGains>;

template <class S>
using Coefficients = FrameInverseCommand::Coefficients<S>;

template <class S>
Coefficients<S> coefficients_of(const std::array<S, FramePlantModel::kRoots>& t, const Gains& k) {
  Coefficients<S> c{};
  c.c1 = t[Root::kC1];
  c.wf2 = t[Root::kC1] * t[Root::kC1] + t[Root::kC2] * t[Root::kC2];
  c.a_sum = t[Root::kA1] + t[Root::kA2];
  c.a_product = t[Root::kA1] * t[Root::kA2];
  c.b_sum = t[Root::kB1] + t[Root::kB2];
  c.b_product = t[Root::kB1] * t[Root::kB2];
  c.d_sum = t[Root::kD1] + t[Root::kD2];
  c.d_product = t[Root::kD1] * t[Root::kD2];
  c.p1 = t[Root::kP1];
  c.k11 = k[Gain::kK11];
  c.k12 = k[Gain::kK12];
  c.k21 = k[Gain::kK21];
  c.determinant = k[Gain::kK11] * k[Gain::kK22] - k[Gain::kK12] * k[Gain::kK21];
  c.zero =
      (k[Gain::kK11] * k[Gain::kK22] * t[Root::kP2] - k[Gain::kK12] * k[Gain::kK21] * t[Root::kP1]) / c.determinant;
  return c;
}

Coefficients<double> coefficients_of(const FramePlantModel& model) {
  return coefficients_of(model.theta, model.gain);
}

template <class S>
using StatesOf = FrameInverseCommand::StatesOf<S>;

// At rest at the input w: v = F(0) w, q2' = 0, q1 from M(0) q = v, x = q1 / (b1 b2).
template <class S>
StatesOf<S> at_rest(const Coefficients<S>& c, const FrameInverseCommand::Vector2& w) {
  StatesOf<S> s{};
  s.e = c.wf2 * (c.k11 * w[1] - c.k21 * w[0]);
  s.q2 = s.e / (c.determinant * c.zero);
  s.q1 = (c.wf2 * w[0] - c.k12 * c.p1 * s.q2) / c.k11;
  s.x = s.q1 / c.b_product;
  s.x_rate = S(0.0);
  return s;
}

// One step of blocks I-III from the states `before` with the input's derivatives `w` (choices 1 and
// 4): v = F(s) w and v'; M(s) q = v by its second row eliminated (a first-order state, trapezoidal),
// q1 algebraically, u2 = (s + d1)(s + d2) q2; u1 = (s + a1)(s + a2) x with x = q1 / ((s + b1)(s + b2)),
// trapezoidal: (I - hA) x+ = (I + hA) x + hB (q1 + q1-).
template <class S>
std::array<S, 2> inverse_step(const Coefficients<S>& c, const StatesOf<S>& before,
                              const FrameInverseCommand::Derivatives& w, double dt_s, StatesOf<S>& after) {
  std::array<S, 2> v;
  std::array<S, 2> v_rate;
  for (std::size_t ch = 0; ch < 2; ++ch) {
    v[ch] = w[ch][2] + 2.0 * c.c1 * w[ch][1] + c.wf2 * w[ch][0];
    v_rate[ch] = w[ch][3] + 2.0 * c.c1 * w[ch][2] + c.wf2 * w[ch][1];
  }
  const double h = dt_s / 2.0;
  const S e = c.k11 * v[1] - c.k21 * v[0];
  const S e_rate = c.k11 * v_rate[1] - c.k21 * v_rate[0];
  const S q2 = ((1.0 - c.zero * h) * before.q2 + h * (e + before.e) / c.determinant) / (1.0 + c.zero * h);
  const S q2_rate = e / c.determinant - c.zero * q2;
  const S q2_accel = e_rate / c.determinant - c.zero * q2_rate;
  const S u2 = q2_accel + c.d_sum * q2_rate + c.d_product * q2;
  const S q1 = (v[0] - c.k12 * (q2_rate + c.p1 * q2)) / c.k11;

  const S det = 1.0 + h * c.b_sum + h * h * c.b_product;
  const S rhs0 = before.x + h * before.x_rate;
  const S rhs1 = before.x_rate - h * (c.b_product * before.x + c.b_sum * before.x_rate) + h * (q1 + before.q1);
  const S x = ((1.0 + h * c.b_sum) * rhs0 + h * rhs1) / det;
  const S x_rate = (-h * c.b_product * rhs0 + rhs1) / det;
  const S x_accel = q1 - c.b_sum * x_rate - c.b_product * x;
  const S u1 = x_accel + c.a_sum * x_rate + c.a_product * x;
  after = {q2, e, x, x_rate, q1};
  return {u1, u2};
}

// A value with its derivatives with respect to the ten roots (forward-mode differentiation). Fixed
// sizes: no allocation.
using Dual = Eigen::AutoDiffScalar<Eigen::Matrix<double, FramePlantModel::kRoots, 1>>;
using Roots = FrameInverseCommand::Roots;

std::array<Dual, FramePlantModel::kRoots> dual_roots(const Roots& roots) {
  std::array<Dual, FramePlantModel::kRoots> out;
  for (int r = 0; r < FramePlantModel::kRoots; ++r) out[r] = Dual(roots[r], FramePlantModel::kRoots, r);
  return out;
}

// A state's value moved to first order by `shift` of the roots along its sensitivity, with that
// sensitivity as its derivatives.
Dual dual_state(double value, const Roots& sensitivity, const Roots& shift) {
  Dual d(value);
  for (int r = 0; r < FramePlantModel::kRoots; ++r) {
    d.value() += sensitivity[r] * shift[r];
    d.derivatives()[r] = sensitivity[r];
  }
  return d;
}

// One step in dual numbers: the commands and the states after it, with their derivatives with respect
// to the roots. Before the start at rest at the target; after it from `states` moved by `shift` along
// `sensitivity` (the states' derivatives).
struct DualStep {
  std::array<Dual, 2> u;
  StatesOf<Dual> after;
};
DualStep dual_step(const Roots& roots, const Gains& gain, bool started, const FrameInverseCommand::States& states,
                   const std::array<Roots, 5>& sensitivity, const Roots& shift,
                   const FrameInverseCommand::Derivatives& w, const FrameInverseCommand::Vector2& target, double dt_s) {
  const Coefficients<Dual> c = coefficients_of(dual_roots(roots), gain);
  StatesOf<Dual> before;
  if (!started) {
    before = at_rest(c, target);
  } else {
    before = {dual_state(states.q2, sensitivity[0], shift), dual_state(states.e, sensitivity[1], shift),
              dual_state(states.x, sensitivity[2], shift), dual_state(states.x_rate, sensitivity[3], shift),
              dual_state(states.q1, sensitivity[4], shift)};
  }
  DualStep s;
  s.u = inverse_step(c, before, w, dt_s, s.after);
  return s;
}

}  // namespace

double FrameInverseCommand::transmission_zero(const FramePlantModel& model) {
  return coefficients_of(model).zero;
}

bool FrameInverseCommand::invertible(const FramePlantModel& model) {
  const bool roots = std::all_of(model.theta.begin(), model.theta.end(), positive_finite);
  const bool gains = std::all_of(model.gain.begin(), model.gain.end(), [](double k) { return std::isfinite(k); });
  if (!roots || !gains) return false;
  const Coefficients<double> c = coefficients_of(model);
  return c.determinant != 0.0 && positive_finite(c.zero) && c.k11 != 0.0;
}

// Weights of the cubic fitted by least squares to the inputs at s = 0, -1, ..., -(window - 1) (in
// steps, newest first; through them when there are four): its value and first three derivatives in
// time at s = evaluated_at (choices 2, 3, 5).
FrameInverseCommand::FrameInverseCommand(const FramePlantModel& model, double dt_s, double evaluated_at,
                                         bool root_sensitivities, int target_window)
    : dt_s_(dt_s),
      model_(model),
      c_(coefficients_of(model)),
      window_(target_window),
      root_sensitivities_(root_sensitivities) {
  if (!positive_finite(dt_s)) {
    throw std::invalid_argument(fmt::format("the inverse at a step of {} s; expected a step > 0", dt_s));
  }
  if (target_window < kMinTargetWindow || target_window > kMaxTargetWindow) {
    throw std::invalid_argument(fmt::format("the inverse's cubic fitted to {} targets; expected {} to {}",
                                            target_window, kMinTargetWindow, kMaxTargetWindow));
  }
  if (!invertible(model)) {
    throw std::invalid_argument(fmt::format(
        "the initial model cannot be inverted stably: roots [{}] rad/s and gains [{}]; expected every root > 0, "
        "k11 != 0, k11 k22 != k12 k21 and a transmission zero (k11 k22 p2 - k12 k21 p1) / (k11 k22 - k12 k21) "
        "> 0 (it is {})",
        fmt::join(model.theta, ", "), fmt::join(model.gain, ", "), transmission_zero(model)));
  }
  // fit(q, j): the coefficient of (s / span)^q that input j contributes to the cubic. Through four
  // inputs, Lagrange's basis with span 1 (the weights at the half steps are exact in binary, so a
  // constant has derivatives of exactly zero); over more, least squares in tau = s / span, span the
  // window's, which keeps the normal equations well conditioned.
  constexpr int m = kExtrapolationOrder;
  using Fit = Eigen::Matrix<double, m + 1, kMaxTargetWindow>;
  Fit fit = Fit::Zero();
  double span = 1.0;
  if (target_window == m + 1) {
    for (int j = 0; j <= m; ++j) {
      const auto basis = lagrange_basis<m + 1>(j, m + 1);
      for (int q = 0; q <= m; ++q) fit(q, j) = basis[q];
    }
  } else {
    span = target_window - 1;
    Fit vt = Fit::Zero();  // V^T, V[j][q] = (-j / span)^q
    for (int j = 0; j < target_window; ++j) {
      for (int q = 0; q <= m; ++q) vt(q, j) = std::pow(-j / span, q);
    }
    const Eigen::Matrix<double, m + 1, m + 1> normal = vt * vt.transpose();
    fit = normal.inverse() * vt;
  }
  const double at = evaluated_at / span;
  for (int j = 0; j < target_window; ++j) {
    std::array<double, m + 1> cubic{};
    for (int q = 0; q <= m; ++q) cubic[q] = fit(q, j);
    for (int n = 0; n <= 3; ++n) weights_[n][j] = polynomial_derivative(cubic, m, n, at) / std::pow(span * dt_s, n);
  }
}

bool FrameInverseCommand::set_model(const FramePlantModel& model) {
  if (!invertible(model)) return false;
  model_ = model;
  c_ = coefficients_of(model);
  return true;
}

FrameInverseCommand::Derivatives FrameInverseCommand::derivatives(const Vector2& target) const {
  // The history with `target` newest; before the start, the target itself (at rest).
  Derivatives w{};
  for (int j = 0; j < window_; ++j) {
    const Vector2& input = j == 0 || !started_ ? target : past_[static_cast<std::size_t>(j - 1)];
    for (std::size_t ch = 0; ch < 2; ++ch) {
      for (std::size_t n = 0; n < 4; ++n) w[ch][n] += weights_[n][static_cast<std::size_t>(j)] * input[ch];
    }
  }
  return w;
}

FrameInverseCommand::Vector2 FrameInverseCommand::step(const Vector2& target) {
  if (!std::isfinite(target[0]) || !std::isfinite(target[1])) {
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  }
  const Derivatives w = derivatives(target);
  std::array<double, 2> u{};
  if (root_sensitivities_) {
    const DualStep s = dual_step(model_.theta, model_.gain, started_, states_, sensitivity_, Roots{}, w, target, dt_s_);
    u = {s.u[0].value(), s.u[1].value()};
    const std::array<const Dual*, 5> after{&s.after.q2, &s.after.e, &s.after.x, &s.after.x_rate, &s.after.q1};
    for (std::size_t i = 0; i < after.size(); ++i) {
      for (int r = 0; r < FramePlantModel::kRoots; ++r) sensitivity_[i][r] = after[i]->derivatives()[r];
    }
    states_ = {s.after.q2.value(), s.after.e.value(), s.after.x.value(), s.after.x_rate.value(), s.after.q1.value()};
  } else {
    const States before = started_ ? states_ : at_rest(c_, target);
    u = inverse_step(c_, before, w, dt_s_, states_);
  }
  if (!started_) past_.fill(target);
  for (auto j = static_cast<std::size_t>(window_ - 1); j > 0; --j) past_[j] = past_[j - 1];
  past_[0] = target;
  started_ = true;
  return u;
}

// The roots' shift from the model's, to which the states are moved along their sensitivities (zero
// without them).
FrameInverseCommand::Roots FrameInverseCommand::shift_of(const Roots& roots) const {
  Roots shift{};
  if (root_sensitivities_ && started_) {
    for (int r = 0; r < FramePlantModel::kRoots; ++r) shift[r] = roots[r] - model_.theta[r];
  }
  return shift;
}

FrameInverseCommand::Vector2 FrameInverseCommand::command_under(const Roots& roots, const Vector2& target,
                                                                RootJacobian* jacobian) const {
  const Derivatives w = derivatives(target);
  if (jacobian != nullptr) {
    const DualStep s =
        dual_step(roots, model_.gain, started_, states_, sensitivity_, shift_of(roots), w, target, dt_s_);
    for (int i = 0; i < 2; ++i) {
      for (int r = 0; r < FramePlantModel::kRoots; ++r) (*jacobian)[i][r] = s.u[i].derivatives()[r];
    }
    return {s.u[0].value(), s.u[1].value()};
  }
  const Coefficients<double> c = coefficients_of(roots, model_.gain);
  States before = started_ ? states_ : at_rest(c, target);
  const Roots shift = shift_of(roots);
  const std::array<double*, 5> states{&before.q2, &before.e, &before.x, &before.x_rate, &before.q1};
  for (std::size_t i = 0; i < states.size(); ++i) {
    for (int r = 0; r < FramePlantModel::kRoots; ++r) *states[i] += sensitivity_[i][r] * shift[r];
  }
  States after;
  return inverse_step(c, before, w, dt_s_, after);
}

FrameInverseCommand::Vector2 FrameInverseCommand::extrapolated() const {
  Vector2 next{};
  for (std::size_t ch = 0; ch < 2; ++ch) {
    next[ch] = 4.0 * past_[0][ch] - 6.0 * past_[1][ch] + 4.0 * past_[2][ch] - past_[3][ch];
  }
  return next;
}

}  // namespace rths
