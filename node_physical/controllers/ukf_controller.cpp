#include "node_physical/controllers/ukf_controller.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace rths {

namespace {

using Root = FramePlantModel::Root;
using Gain = FramePlantModel::Gain;

bool positive_finite(double x) {
  return std::isfinite(x) && x > 0.0;
}

// The model's quantities the estimation model's derivative needs, computed once per sigma point.
struct StateCoefficients {
  double a_sum, a_product, b_sum, b_product, c1, wf, wf2, d_sum, d_product;
  double g11, g21;  // column 1's static gains H11(0), H21(0)
  double h12, h22;  // k12 / (d1 d2 wf2), k22 / (d1 d2 wf2): column 2's output weights
  double p1, p2;

  StateCoefficients(const FrameStateModel::Theta& t, const FrameStateModel::Gains& k)
      : a_sum(t[Root::kA1] + t[Root::kA2]),
        a_product(t[Root::kA1] * t[Root::kA2]),
        b_sum(t[Root::kB1] + t[Root::kB2]),
        b_product(t[Root::kB1] * t[Root::kB2]),
        c1(t[Root::kC1]),
        wf(std::hypot(t[Root::kC1], t[Root::kC2])),
        wf2(wf * wf),
        d_sum(t[Root::kD1] + t[Root::kD2]),
        d_product(t[Root::kD1] * t[Root::kD2]),
        g11(k[Gain::kK11] * b_product / (a_product * wf2)),
        g21(k[Gain::kK21] * b_product / (a_product * wf2)),
        h12(k[Gain::kK12] / (d_product * wf2)),
        h22(k[Gain::kK22] / (d_product * wf2)),
        p1(t[Root::kP1]),
        p2(t[Root::kP2]) {}
};

// dz/dt of the two cascades (ukf_controller.hpp, choice 5): states x_a, x_a' / (a1 + a2), f,
// f' / wf, x_d, x_d' / (d1 + d2), g, g' / wf.
FrameStateModel::State derivative(const FrameStateModel::State& z, const StateCoefficients& c,
                                  const FrameStateModel::Input& u) {
  FrameStateModel::State dz;
  const double xa_rate = c.a_sum * z[1];
  const double xa_accel = c.a_product * (u[0] - z[0]) - c.a_sum * xa_rate;
  const double m = (xa_accel + c.b_sum * xa_rate + c.b_product * z[0]) / c.b_product;
  const double f_rate = c.wf * z[3];
  const double xd_rate = c.d_sum * z[5];
  const double xd_accel = c.d_product * (u[1] - z[4]) - c.d_sum * xd_rate;
  const double g_rate = c.wf * z[7];
  dz[0] = xa_rate;
  dz[1] = xa_accel / c.a_sum;
  dz[2] = f_rate;
  dz[3] = (c.wf2 * (m - z[2]) - 2.0 * c.c1 * f_rate) / c.wf;
  dz[4] = xd_rate;
  dz[5] = xd_accel / c.d_sum;
  dz[6] = g_rate;
  dz[7] = (c.wf2 * (z[4] - z[6]) - 2.0 * c.c1 * g_rate) / c.wf;
  return dz;
}

FrameStateModel::Input output(const FrameStateModel::State& z, const StateCoefficients& c) {
  const double g_rate = c.wf * z[7];
  return {c.g11 * z[2] + c.h12 * (g_rate + c.p1 * z[6]), c.g21 * z[2] + c.h22 * (g_rate + c.p2 * z[6])};
}

FrameStateModel::Theta theta_of(const FramePlantModel& model) {
  return Eigen::Map<const FrameStateModel::Theta>(model.theta.data());
}

// H(0 | model)^-1 y: the command that holds the plant at y.
FrameStateModel::Input static_inverse(const FramePlantModel& model, const FrameStateModel::Input& y) {
  Eigen::Matrix2d h0;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) h0(i, j) = model.static_gain(i, j);
  }
  return h0.inverse() * y;
}

double checked_step(double rate_hz) {
  if (!positive_finite(rate_hz)) {
    throw std::invalid_argument(fmt::format("UKF controller at {} Hz; expected a rate > 0", rate_hz));
  }
  return 1.0 / rate_hz;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// FrameInverseCommand

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
    throw std::invalid_argument(fmt::format("UKF inverse at a step of {} s; expected a step > 0", dt_s));
  }
  if (!invertible(model)) {
    throw std::invalid_argument(fmt::format(
        "UKF initial model cannot be inverted stably: roots [{}] rad/s and gains [{}]; expected every root > 0, "
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

// ---------------------------------------------------------------------------------------------
// FrameStateModel

FrameStateModel::State FrameStateModel::equilibrium(const Input& u) {
  State z = State::Zero();
  z[0] = z[2] = u[0];
  z[4] = z[6] = u[1];
  return z;
}

FrameStateModel::State FrameStateModel::step(const State& z, const Theta& theta, const Gains& gain, const Input& u,
                                             double dt_s, UkfDiscretisation scheme) {
  const StateCoefficients c(theta, gain);
  if (scheme == UkfDiscretisation::kForwardEuler) return z + dt_s * derivative(z, c, u);
  const State k1 = derivative(z, c, u);
  const State k2 = derivative(z + (dt_s / 2.0) * k1, c, u);
  const State k3 = derivative(z + (dt_s / 2.0) * k2, c, u);
  const State k4 = derivative(z + dt_s * k3, c, u);
  return z + (dt_s / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
}

FrameStateModel::Input FrameStateModel::output(const State& z, const Theta& theta, const Gains& gain) {
  return rths::output(z, StateCoefficients(theta, gain));
}

// ---------------------------------------------------------------------------------------------
// UkfInverseDynamicsController

UkfInverseDynamicsController::UkfInverseDynamicsController(const config::UkfInverseDynamics& parameters,
                                                           const FramePlantModel& initial, double rate_hz,
                                                           UkfDiscretisation scheme)
    : initial_(initial),
      model_(initial),
      inverse_(initial, checked_step(rate_hz)),
      scheme_(scheme),
      dt_s_(1.0 / rate_hz),
      signal_scale_(parameters.signal_scale()),
      process_noise_(parameters.process_noise()),
      measurement_noise_(parameters.measurement_noise()) {
  const auto check = [](bool ok, const char* field, double value, const char* expected) {
    if (!ok) throw std::invalid_argument(fmt::format("UKF {} {}; expected {}", field, value, expected));
  };
  check(positive_finite(signal_scale_), "signal_scale", signal_scale_, "> 0 (1000: millimetres, seed 003)");
  check(positive_finite(parameters.initial_covariance()), "initial_covariance", parameters.initial_covariance(),
        "> 0 (P0 = this x I; seed 003 Table 1: 1)");
  check(std::isfinite(process_noise_) && process_noise_ >= 0.0, "process_noise", process_noise_,
        ">= 0 (Q = this x I; seed 003 Table 1: 1e-11)");
  check(positive_finite(measurement_noise_), "measurement_noise", measurement_noise_,
        "> 0 (R = this x I in mm^2; seed 003 Table 1: 0.1)");
  check(positive_finite(parameters.alpha()) && parameters.alpha() <= 1.0, "alpha", parameters.alpha(),
        "0 < alpha <= 1 (seed 003: 0.4)");
  check(std::isfinite(parameters.beta()) && parameters.beta() >= 0.0, "beta", parameters.beta(), ">= 0 (seed 003: 2)");
  check(std::isfinite(parameters.kappa()) && kAugmented + parameters.kappa() > 0.0, "kappa", parameters.kappa(),
        fmt::format("> -{} (the augmented state's dimension; seed 003: 0)", kAugmented).c_str());
  check(parameters.filter_order() <= static_cast<std::uint32_t>(IirFilter::kMaxOrder), "filter_order",
        parameters.filter_order(), fmt::format("0..{} (0: no filter; seed 003: 6)", IirFilter::kMaxOrder).c_str());
  check(parameters.filter_order() == 0 ||
            (positive_finite(parameters.filter_cutoff_hz()) && parameters.filter_cutoff_hz() < rate_hz / 2.0),
        "filter_cutoff_hz", parameters.filter_cutoff_hz(),
        fmt::format("0 < cutoff < {} Hz (Nyquist; seed 003: 20)", rate_hz / 2.0).c_str());

  const double alpha = parameters.alpha();
  const double n = kAugmented + parameters.kappa();
  const double lambda = alpha * alpha * n - kAugmented;
  spread_ = alpha * std::sqrt(n);
  weight_mean_0_ = lambda / (kAugmented + lambda);
  weight_ = 1.0 / (2.0 * (kAugmented + lambda));
  weight_central_ = parameters.beta() - alpha * alpha;

  x_.setZero();
  x_.tail<kRoots>() = theta_of(initial);
  p_ = parameters.initial_covariance() * Covariance::Identity();
  sigma_.setZero();
  outputs_.setZero();
  for (int r = 0; r < kRoots; ++r) floor_[r] = 0.01 * initial.theta[r];
  zero_floor_ = 0.01 * FrameInverseCommand::transmission_zero(initial);
  if (parameters.filter_order() > 0) {
    const IirFilter filter =
        butterworth_lowpass(static_cast<int>(parameters.filter_order()), parameters.filter_cutoff_hz(), rate_hz);
    command_filter_ = {filter, filter};
    measured_filter_ = {filter, filter};
  }
}

void UkfInverseDynamicsController::command(std::span<const InterfaceMotion> targets,
                                           std::span<const Measurement> previous, std::span<InterfaceMotion> commands,
                                           double /*dt_s*/) {
  const Input measured{previous[0].displacement_m * signal_scale_, previous[1].displacement_m * signal_scale_};
  if (step_ == 0) {
    if (measured.allFinite()) {
      measured_reference_ = measured;
      command_reference_ = static_inverse(initial_, measured);
      x_.head<kStates>() = FrameStateModel::equilibrium(command_reference_);
    } else {
      freeze(UkfFreeze::kNotFinite, std::isfinite(measured[0]) ? measured[1] : measured[0]);
    }
  } else if (frozen_ == UkfFreeze::kNone) {
    estimate(measured);
  }

  const FrameInverseCommand::Vector2 u =
      inverse_.step({targets[0].displacement_m * signal_scale_, targets[1].displacement_m * signal_scale_});
  for (std::size_t i = 0; i < 2; ++i) {
    // The command's rate and acceleration by backward differences: nothing downstream of a stroke
    // command reads them in the benchmark's actuators, and the inverse has no fourth derivative of the
    // target to give them exactly.
    const double stroke_m = u[i] / signal_scale_;
    const double rate = step_ == 0 ? 0.0 : (stroke_m - last_stroke_m_[i]) / dt_s_;
    const double accel = step_ <= 1 ? 0.0 : (rate - last_rate_[i]) / dt_s_;
    commands[i] = {stroke_m, rate, accel};
    last_stroke_m_[i] = stroke_m;
    last_rate_[i] = rate;
  }
  if (frozen_ == UkfFreeze::kNone) {
    Input filtered;
    for (int i = 0; i < 2; ++i) {
      filtered[i] = command_filter_[i].step(u[i] - command_reference_[i]) + command_reference_[i];
    }
    if (!filtered.allFinite()) freeze(UkfFreeze::kNotFinite, std::isfinite(filtered[0]) ? filtered[1] : filtered[0]);
    filtered_commands_[1] = filtered_commands_[0];
    filtered_commands_[0] = filtered;
  }
  ++step_;
}

// One cycle of the scaled UT filter (choice 7) at call k >= 1: the model from tick k-2 to k-1 under
// the command of step k-2 (call 1 has tick 0, the start, and no prediction), then the update with
// the reading of tick k-1. Nothing is committed before every guard passes.
void UkfInverseDynamicsController::estimate(const Input& measured_mm) {
  if (!measured_mm.allFinite()) {
    freeze(UkfFreeze::kNotFinite, std::isfinite(measured_mm[0]) ? measured_mm[1] : measured_mm[0]);
    return;
  }
  Input measured;
  for (int i = 0; i < 2; ++i) {
    measured[i] = measured_filter_[i].step(measured_mm[i] - measured_reference_[i]) + measured_reference_[i];
  }
  const Eigen::LLT<Covariance> llt(p_);
  const Covariance root = llt.matrixL();
  if (llt.info() != Eigen::Success || !root.allFinite()) {
    const Eigen::SelfAdjointEigenSolver<Covariance> eigen(p_, Eigen::EigenvaluesOnly);
    freeze(UkfFreeze::kIndefinite, eigen.eigenvalues().minCoeff());
    return;
  }
  sigma_.col(0) = x_;
  for (int i = 0; i < kAugmented; ++i) {
    sigma_.col(1 + i) = x_ + spread_ * root.col(i);
    sigma_.col(1 + kAugmented + i) = x_ - spread_ * root.col(i);
  }
  const bool predict = step_ >= 2;
  const FrameStateModel::Gains& gain = model_.gain;
  for (int i = 0; i < kSigmaPoints; ++i) {
    const FrameStateModel::Theta theta = sigma_.col(i).tail<kRoots>();
    FrameStateModel::State z = sigma_.col(i).head<kStates>();
    if (predict) {
      z = FrameStateModel::step(z, theta, gain, filtered_commands_[1], dt_s_, scheme_);
      sigma_.col(i).head<kStates>() = z;
    }
    outputs_.col(i) = FrameStateModel::output(z, theta, gain);
  }

  // Means, and the covariances about the central point (parallel-axis form).
  const Augmented mean =
      weight_mean_0_ * sigma_.col(0) + weight_ * sigma_.rightCols<kSigmaPoints - 1>().rowwise().sum();
  const Input output_mean =
      weight_mean_0_ * outputs_.col(0) + weight_ * outputs_.rightCols<kSigmaPoints - 1>().rowwise().sum();
  const Eigen::Matrix<double, kAugmented, kSigmaPoints - 1> dx =
      sigma_.rightCols<kSigmaPoints - 1>().colwise() - sigma_.col(0);
  const Eigen::Matrix<double, 2, kSigmaPoints - 1> dy =
      outputs_.rightCols<kSigmaPoints - 1>().colwise() - outputs_.col(0);
  const Augmented x_central = sigma_.col(0) - mean;
  const Input y_central = outputs_.col(0) - output_mean;
  Covariance prior = weight_ * dx * dx.transpose() + weight_central_ * x_central * x_central.transpose();
  if (predict) prior.diagonal().array() += process_noise_;
  Eigen::Matrix2d innovation = weight_ * dy * dy.transpose() + weight_central_ * y_central * y_central.transpose();
  innovation.diagonal().array() += measurement_noise_;
  const Eigen::Matrix<double, kAugmented, 2> cross =
      weight_ * dx * dy.transpose() + weight_central_ * x_central * y_central.transpose();

  const Eigen::Matrix<double, kAugmented, 2> gain_matrix = cross * innovation.inverse();
  Augmented x = mean + gain_matrix * (measured - output_mean);
  Covariance p = prior - gain_matrix * innovation * gain_matrix.transpose();
  p = ((p + p.transpose()) / 2.0).eval();
  if (!x.allFinite() || !p.allFinite()) {
    freeze(UkfFreeze::kNotFinite, x.allFinite() ? p.sum() : x.sum());
    return;
  }
  for (int r = 0; r < kRoots; ++r) {
    if (x[kStates + r] < floor_[r]) {
      x[kStates + r] = floor_[r];
      ++clamps_;
    }
  }
  FramePlantModel next = model_;
  for (int r = 0; r < kRoots; ++r) next.theta[r] = x[kStates + r];
  const double zero = FrameInverseCommand::transmission_zero(next);
  if (!(zero > zero_floor_) || !inverse_.set_model(next)) {
    freeze(UkfFreeze::kUnstableInverse, zero);
    return;
  }
  model_ = next;
  x_ = x;
  p_ = p;
  ++updates_;
}

void UkfInverseDynamicsController::freeze(UkfFreeze reason, double value) {
  frozen_ = reason;
  frozen_at_step_ = step_;
  frozen_value_ = value;
}

std::string UkfInverseDynamicsController::freeze_message() const {
  const char* tail = "; commanding with the last good model for the rest of the run";
  switch (frozen_) {
    case UkfFreeze::kNone:
      return {};
    case UkfFreeze::kNotFinite:
      return fmt::format(
          "UKF estimation frozen at step {}: a non-finite value ({}) in the measurement, the command "
          "or the update{}",
          frozen_at_step_, frozen_value_, tail);
    case UkfFreeze::kIndefinite:
      return fmt::format(
          "UKF estimation frozen at step {}: the covariance is no longer positive definite (its "
          "smallest eigenvalue {:.6g}){}",
          frozen_at_step_, frozen_value_, tail);
    case UkfFreeze::kUnstableInverse:
      return fmt::format(
          "UKF estimation frozen at step {}: the estimated roots would move the inverse's pole -z to "
          "z = {:.6g} rad/s, at or below 1 % of its initial {:.6g} rad/s{}",
          frozen_at_step_, frozen_value_, 100.0 * zero_floor_, tail);
  }
  return {};
}

std::string UkfInverseDynamicsController::warning() const {
  std::string out = freeze_message();
  if (clamps_ > 0) {
    if (!out.empty()) out += "; ";
    out += fmt::format("UKF root estimates were held at 1 % of their initial values {} times", clamps_);
  }
  return out;
}

void UkfInverseDynamicsController::report(std::size_t /*actuator*/, results::ControllerReport& out) const {
  results::UkfController& r = *out.mutable_ukf();
  for (const double t : initial_.theta) r.add_initial_theta(t);
  for (const double t : model_.theta) r.add_final_theta(t);
  r.set_updates(updates_);
  r.set_frozen(frozen_ != UkfFreeze::kNone);
  r.set_freeze_message(freeze_message());
}

std::unique_ptr<SiteController> make_ukf_controller(const config::UkfInverseDynamics& parameters,
                                                    const FramePlantModel& initial, double rate_hz) {
  return std::make_unique<UkfInverseDynamicsController>(parameters, initial, rate_hz);
}

namespace {

void validate(const config::UkfInverseDynamics& ukf, const ComponentContext& context, const Checker& check) {
  if (ukf.has_initial_model()) {
    validate_frame_plant_model(ukf.initial_model(), check.at("initial_model"));
  } else {
    check.expect(context.site != nullptr && context.site->actuator_plant().has_two_actuator_frame(), "initial_model",
                 "missing, and the site has no actuator_plant { two_actuator_frame } to start from; expected the "
                 "model the estimate starts from");
  }
  for (const auto& [name, value, zero_allowed] : {std::tuple{"initial_covariance", ukf.initial_covariance(), false},
                                                  std::tuple{"process_noise", ukf.process_noise(), true},
                                                  std::tuple{"measurement_noise", ukf.measurement_noise(), false},
                                                  std::tuple{"signal_scale", ukf.signal_scale(), false}}) {
    check.expect(std::isfinite(value) && (zero_allowed ? value >= 0 : value > 0), name,
                 fmt::format("is {}, expected a finite value {}", value, zero_allowed ? ">= 0" : "> 0"));
  }
  check.expect(ukf.alpha() > 0 && ukf.alpha() <= 1, "alpha",
               fmt::format("is {}, expected the sigma points' spread in (0, 1] (seed 003: 0.4)", ukf.alpha()));
  check.expect(std::isfinite(ukf.beta()) && std::isfinite(ukf.kappa()), "", "beta and kappa must be finite");
  check.expect(ukf.filter_order() <= IirFilter::kMaxOrder, "filter_order",
               fmt::format("is {}, expected 0 (no filter) to {}", ukf.filter_order(), IirFilter::kMaxOrder));
  if (ukf.filter_order() > 0) {
    check.expect(ukf.filter_cutoff_hz() > 0 && ukf.filter_cutoff_hz() < context.rate_hz / 2, "filter_cutoff_hz",
                 fmt::format("is {}, expected a cutoff > 0 Hz below half the step rate ({} Hz)", ukf.filter_cutoff_hz(),
                             context.rate_hz / 2));
  }
}

// The estimate starts from the configured model, else from the site's plant as identified (its
// nominal: the uncertainty is what the estimate must find).
std::unique_ptr<SiteController> make(const config::UkfInverseDynamics& ukf, const ComponentContext& context) {
  const FramePlantModel initial = FramePlantModel::from_config(
      ukf.has_initial_model() ? ukf.initial_model() : context.site->actuator_plant().two_actuator_frame());
  return make_ukf_controller(ukf, initial, context.rate_hz);
}

[[maybe_unused]] const bool kRegistered = register_site_controller<config::UkfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
