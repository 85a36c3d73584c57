#include "rths/node_physical/controllers.hpp"

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

double binomial(int n, int k) {
  double c = 1.0;
  for (int j = 1; j <= k; ++j) c = c * (n - k + j) / j;
  return c;
}

// A polynomial in s of degree <= PolynomialExtrapolationController::kMaxOrder, lowest power first.
using Polynomial = std::array<double, PolynomialExtrapolationController::kMaxOrder + 1>;

double evaluate_derivative(const Polynomial& p, int degree, int derivative, double s) {
  double sum = 0.0;
  for (int j = degree; j >= derivative; --j) {
    double factor = 1.0;
    for (int q = 0; q < derivative; ++q) factor *= j - q;
    sum = sum * s + factor * p[j];
  }
  return sum;
}

// FF . taps summed in index order (see RlsCompensator::update on why the order is fixed).
double dot(const RlsCompensator::Vector& ff, const RlsCompensator::Vector& taps) {
  double sum = 0.0;
  for (Eigen::Index j = 0; j < ff.size(); ++j) sum += ff[j] * taps[j];
  return sum;
}

void shift_in(RlsCompensator::Vector& taps, double newest) {
  for (Eigen::Index j = taps.size() - 1; j > 0; --j) taps[j] = taps[j - 1];
  taps[0] = newest;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// IirFilter

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

// ---------------------------------------------------------------------------------------------
// PolynomialExtrapolationController

// The targets sit at s = 0, -1, ..., -m in units of dt (newest first) and the command is the
// polynomial through them at s = delay / dt. The weights depend on nothing but m and that s, so
// they are computed here once per degree m = 0 .. order (the lower degrees serve the first steps,
// while fewer than order + 1 targets exist).
PolynomialExtrapolationController::PolynomialExtrapolationController(double delay_s, int order, double dt_s)
    : delay_s_(delay_s), order_(order) {
  if (order < 0 || order > kMaxOrder) {
    throw std::invalid_argument(fmt::format("extrapolation order {}; expected 0..{}", order, kMaxOrder));
  }
  if (!(dt_s > 0) || !std::isfinite(delay_s) || delay_s < 0) {
    throw std::invalid_argument(
        fmt::format("extrapolation over {} s at a step of {} s; expected delay >= 0 and step > 0", delay_s, dt_s));
  }
  const double s = delay_s / dt_s;
  for (int m = 0; m <= order; ++m) {
    for (int k = 0; k <= m; ++k) {
      // Lagrange basis polynomial L_k(s) = prod_{j != k} (s + j) / (j - k), as coefficients.
      Polynomial basis{};
      basis[0] = 1.0;
      int degree = 0;
      for (int j = 0; j <= m; ++j) {
        if (j == k) continue;
        const double denominator = j - k;
        for (int q = degree + 1; q > 0; --q) basis[q] = (basis[q - 1] + j * basis[q]) / denominator;
        basis[0] = j * basis[0] / denominator;
        ++degree;
      }
      value_[m][k] = evaluate_derivative(basis, m, 0, s);
      velocity_[m][k] = evaluate_derivative(basis, m, 1, s) / dt_s;
      acceleration_[m][k] = evaluate_derivative(basis, m, 2, s) / (dt_s * dt_s);
    }
  }
}

InterfaceMotion PolynomialExtrapolationController::command(const InterfaceMotion& target,
                                                           const Measurement& /*previous*/, double /*dt_s*/) {
  for (int j = order_; j > 0; --j) past_[j] = past_[j - 1];
  past_[0] = target.displacement_m;
  count_ = std::min(count_ + 1, order_ + 1);
  const int m = count_ - 1;
  InterfaceMotion out;
  for (int k = 0; k <= m; ++k) {
    out.displacement_m += value_[m][k] * past_[k];
    out.velocity_m_per_s += velocity_[m][k] * past_[k];
    out.acceleration_m_per_s2 += acceleration_[m][k] * past_[k];
  }
  return out;
}

void PolynomialExtrapolationController::report(results::ControllerReport& out) const {
  results::ExtrapolationController& r = *out.mutable_extrapolation();
  r.set_delay_s(delay_s_);
  r.set_order(static_cast<std::uint32_t>(order_));
}

// ---------------------------------------------------------------------------------------------
// ModelFeedforwardController

// Inverse of G(s) = a0 / (a_n s^n + ... + a0): x_cmd = sum_i a_i D^i x_t / a0. With D^i the i-th
// backward difference over dt^i this is an FIR filter of the last n + 1 targets, so the realisation
// is stable whatever the model's zeros and poles (an exact inverse of a strictly proper G would be
// improper). The price is that a backward difference is centred half a step back: the i-th
// difference estimates the i-th derivative at t - i dt / 2, so each derivative term comes i dt / 2
// late and the inverse holds only to O(dt). For a first-order model the rate term x' / a0 is dt / 2
// late, an error of dt |x''| / (2 a0), small beside the lag 1 / a0 it removes.
ModelFeedforwardController::ModelFeedforwardController(std::span<const double> denominator, double dt_s)
    : order_(static_cast<int>(denominator.size()) - 1) {
  if (denominator.size() < 2 || order_ > kMaxModelOrder) {
    throw std::invalid_argument(
        fmt::format("feedforward model with {} denominator coefficients; expected 2..{} "
                    "(a model of order 1..{}, highest power first)",
                    denominator.size(), kMaxModelOrder + 1, kMaxModelOrder));
  }
  const double a0 = denominator.back();
  if (a0 == 0.0 || !std::isfinite(a0) || !(dt_s > 0)) {
    throw std::invalid_argument(
        fmt::format("feedforward model with a0 = {} at a step of {} s; expected a0 != 0 and step > 0", a0, dt_s));
  }
  std::copy(denominator.begin(), denominator.end(), denominator_.begin());
  for (int i = 0; i <= order_; ++i) {
    const double a_i = denominator[order_ - i];  // coefficient of s^i
    const double scale = a_i / (std::pow(dt_s, i) * a0);
    for (int j = 0; j <= i; ++j) fir_[j] += scale * ((j % 2 == 0) ? 1.0 : -1.0) * binomial(i, j);
  }
}

// The FIR is linear and time invariant, so the command's velocity and acceleration are the same
// FIR applied to the target's.
InterfaceMotion ModelFeedforwardController::command(const InterfaceMotion& target, const Measurement& /*previous*/,
                                                    double /*dt_s*/) {
  if (!started_) {
    past_.fill(target);  // at rest at the first target before the run
    started_ = true;
  }
  for (int j = order_; j > 0; --j) past_[j] = past_[j - 1];
  past_[0] = target;
  InterfaceMotion out;
  for (int j = 0; j <= order_; ++j) {
    out.displacement_m += fir_[j] * past_[j].displacement_m;
    out.velocity_m_per_s += fir_[j] * past_[j].velocity_m_per_s;
    out.acceleration_m_per_s2 += fir_[j] * past_[j].acceleration_m_per_s2;
  }
  return out;
}

void ModelFeedforwardController::report(results::ControllerReport& out) const {
  results::FeedforwardController& r = *out.mutable_feedforward();
  for (int j = 0; j <= order_; ++j) r.add_denominator(denominator_[j]);
}

// ---------------------------------------------------------------------------------------------
// RlsCompensator

RlsCompensator::RlsCompensator(const config::RlsCompensator& parameters, double dt_s)
    : taps_(static_cast<int>(parameters.taps())),
      forgetting_factor_(parameters.forgetting_factor()),
      signal_scale_(parameters.signal_scale()),
      divergence_limit_(parameters.divergence_limit()),
      adaptation_threshold_m_(parameters.adaptation_threshold_m()) {
  if (taps_ < 1 || taps_ > kMaxTaps) {
    throw std::invalid_argument(fmt::format("RLS compensator with {} taps; expected 1..{}", taps_, kMaxTaps));
  }
  if (!(forgetting_factor_ > 0 && forgetting_factor_ <= 1)) {
    throw std::invalid_argument(
        fmt::format("RLS forgetting factor {}; expected (0, 1] (seed 001 uses 1)", forgetting_factor_));
  }
  if (!(signal_scale_ > 0) || !(divergence_limit_ > 0) || !(parameters.initial_covariance_scale() > 0)) {
    throw std::invalid_argument(
        fmt::format("RLS signal_scale {}, divergence_limit {}, initial_covariance_scale {}; "
                    "expected each > 0",
                    signal_scale_, divergence_limit_, parameters.initial_covariance_scale()));
  }
  if (parameters.has_calibration_path()) {
    throw std::invalid_argument(
        fmt::format("RLS calibration_path \"{}\" is unresolved; the config loader copies the "
                    "calibration file into initial_ff/initial_covariance",
                    parameters.calibration_path()));
  }
  const auto n = static_cast<std::size_t>(taps_);
  if ((parameters.initial_ff_size() != 0 && static_cast<std::size_t>(parameters.initial_ff_size()) != n) ||
      (parameters.initial_covariance_size() != 0 &&
       static_cast<std::size_t>(parameters.initial_covariance_size()) != n * n)) {
    throw std::invalid_argument(
        fmt::format("RLS initial_ff has {} entries and initial_covariance {}; expected taps = {} "
                    "and taps x taps = {} (or none)",
                    parameters.initial_ff_size(), parameters.initial_covariance_size(), n, n * n));
  }
  if (parameters.initial_ff_size() != 0) {
    ff_ = Eigen::Map<const Eigen::VectorXd>(parameters.initial_ff().data(), taps_);
  } else {
    ff_ = Vector::Zero(taps_);
    ff_[0] = 1.0;  // the command is the target
  }
  if (parameters.initial_covariance_size() != 0) {
    p_ = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        parameters.initial_covariance().data(), taps_, taps_);
  } else {
    p_ = parameters.initial_covariance_scale() * Matrix::Identity(taps_, taps_);
  }
  const double rate_hz = 1.0 / dt_s;
  const auto order = static_cast<int>(parameters.filter_order());
  resume_wait_ = taps_ + static_cast<std::int64_t>(std::ceil(rate_hz / parameters.filter_cutoff_hz()));
  command_filter_ = butterworth_lowpass(order, parameters.filter_cutoff_hz(), rate_hz);
  measured_filter_ = command_filter_;
  target_taps_ = Vector::Zero(taps_);
  velocity_taps_ = Vector::Zero(taps_);
  acceleration_taps_ = Vector::Zero(taps_);
  measured_taps_ = Vector::Zero(taps_);
}

// Seed 001 RoDeAC as the authors' code runs it (digest 001-1, code cross-check), in its causal
// form: the pair of step i-1 (filtered command, filtered measured taps) updates FF with the a-priori
// error, then FF commands step i. The Butterworth filters sit in the adaptation path only: their lag
// delays the regression pair equally on both sides, so it does not bias FF.
InterfaceMotion RlsCompensator::command(const InterfaceMotion& target, const Measurement& previous, double /*dt_s*/) {
  if (has_last_command_ && frozen_ == RlsFreeze::kNone) {
    const double command_f = command_filter_.step(last_command_);
    const double measured_f = measured_filter_.step(previous.displacement_m * signal_scale_);
    if (!std::isfinite(command_f) || !std::isfinite(measured_f)) {
      freeze(RlsFreeze::kNotFinite, -1, std::isfinite(measured_f) ? command_f : measured_f);
    } else {
      shift_in(measured_taps_, measured_f);
    }
    if (previous.held) {
      paused_ = resume_wait_;  // the steps after this one
      ++held_pauses_;
    } else if (paused_ > 0) {
      --paused_;
      ++held_pauses_;
    } else if (armed_ && frozen_ == RlsFreeze::kNone) {
      update(command_f);
    }
  }

  shift_in(target_taps_, target.displacement_m * signal_scale_);
  shift_in(velocity_taps_, target.velocity_m_per_s);
  shift_in(acceleration_taps_, target.acceleration_m_per_s2);
  last_command_ = dot(ff_, target_taps_);
  has_last_command_ = true;
  armed_ = armed_ || std::abs(target.displacement_m) > adaptation_threshold_m_;
  ++step_;
  return {last_command_ / signal_scale_, dot(ff_, velocity_taps_), dot(ff_, acceleration_taps_)};
}

// a-priori error e = u_f - FF(i-1) X_m, gain k = P X_m / (rho + X_m' P X_m), P = (P - k X_m' P) / rho,
// FF = FF + k e (seed 001 Eqs. 12-14 with the a-priori error of the authors' code). Written as loops
// over at most kMaxTaps on the stack, each sum in its natural order, so that a plain implementation
// of the same equations gives the same digits: the 20 Hz filter makes the measured taps smooth, P's
// condition number reaches ~1e9, and any reordering of the sums shows as ~1e-8 in FF.
//
// Nothing is committed before the guards pass. P is not re-symmetrised: with rho = 1 (seed 001) the
// asymmetry of P - k X_m' P stays at rounding level (7e-14 relative after 120 s, tested); with
// rho < 1 it grows with the covariance windup (1e-9 after 120 s at rho = 0.999), far from harming
// definiteness.
void RlsCompensator::update(double command_f) {
  const Eigen::Index n = taps_;
  const Vector& x = measured_taps_;
  std::array<double, kMaxTaps> px{};  // P X_m
  std::array<double, kMaxTaps> xp{};  // X_m' P
  std::array<double, kMaxTaps> gain{};
  std::array<double, kMaxTaps> ff{};
  double prediction = 0.0;
  for (Eigen::Index r = 0; r < n; ++r) prediction += ff_[r] * x[r];
  const double error = command_f - prediction;
  for (Eigen::Index r = 0; r < n; ++r) {
    for (Eigen::Index c = 0; c < n; ++c) {
      px[r] += p_(r, c) * x[c];
      xp[c] += x[r] * p_(r, c);
    }
  }
  double xpx = 0.0;
  for (Eigen::Index r = 0; r < n; ++r) xpx += x[r] * px[r];
  bool finite = std::isfinite(error);
  double largest = 0.0;
  Eigen::Index worst = 0;
  for (Eigen::Index r = 0; r < n; ++r) {
    gain[r] = px[r] / (forgetting_factor_ + xpx);
    ff[r] = ff_[r] + gain[r] * error;
    finite = finite && std::isfinite(ff[r]);
    if (std::abs(ff[r]) > largest) {
      largest = std::abs(ff[r]);
      worst = r;
    }
  }
  Matrix p(n, n);
  for (Eigen::Index r = 0; r < n; ++r) {
    for (Eigen::Index c = 0; c < n; ++c) {
      p(r, c) = (p_(r, c) - gain[r] * xp[c]) / forgetting_factor_;
      finite = finite && std::isfinite(p(r, c));
    }
  }
  if (!finite) {
    freeze(RlsFreeze::kNotFinite, -1, error);
  } else if (largest > divergence_limit_) {
    freeze(RlsFreeze::kDiverged, static_cast<int>(worst), ff[worst]);
  } else {
    for (Eigen::Index r = 0; r < n; ++r) ff_[r] = ff[r];
    p_ = p;
    ++updates_;
  }
}

// FF and P keep the last values that passed the guards (a failed update is never committed), and
// adaptation stops for the rest of the run: a compensator that has seen a NaN or a runaway FF no
// longer knows which of its data to trust.
void RlsCompensator::freeze(RlsFreeze reason, int index, double value) {
  frozen_ = reason;
  frozen_at_step_ = step_;
  frozen_index_ = index;
  frozen_value_ = value;
}

const RlsCompensator::Vector& RlsCompensator::ff() const {
  return ff_;
}
const RlsCompensator::Matrix& RlsCompensator::covariance() const {
  return p_;
}
RlsFreeze RlsCompensator::frozen() const {
  return frozen_;
}
std::int64_t RlsCompensator::frozen_at_step() const {
  return frozen_at_step_;
}
std::uint64_t RlsCompensator::updates() const {
  return updates_;
}
std::uint64_t RlsCompensator::held_pauses() const {
  return held_pauses_;
}

std::string RlsCompensator::freeze_message() const {
  switch (frozen_) {
    case RlsFreeze::kNone:
      return {};
    case RlsFreeze::kNotFinite:
      return fmt::format(
          "RLS adaptation frozen at step {}: a non-finite value ({}) in the measurement or the update; "
          "commanding with the last good FF for the rest of the run",
          frozen_at_step_, frozen_value_);
    case RlsFreeze::kDiverged:
      return fmt::format(
          "RLS adaptation frozen at step {}: FF[{}] would become {:.6g}, beyond divergence_limit {:g}; "
          "commanding with the last good FF for the rest of the run",
          frozen_at_step_, frozen_index_, frozen_value_, divergence_limit_);
  }
  return {};
}

void RlsCompensator::report(results::ControllerReport& out) const {
  results::RlsController& r = *out.mutable_rls();
  r.set_taps(static_cast<std::uint32_t>(taps_));
  r.set_updates(updates_);
  switch (frozen_) {
    case RlsFreeze::kNone:
      r.set_frozen(results::RlsController::none);
      break;
    case RlsFreeze::kNotFinite:
      r.set_frozen(results::RlsController::not_finite);
      break;
    case RlsFreeze::kDiverged:
      r.set_frozen(results::RlsController::diverged);
      break;
  }
  r.set_frozen_at_step(frozen_at_step_);
  r.set_freeze_message(freeze_message());
  for (int j = 0; j < taps_; ++j) r.add_ff(ff_[j]);
  r.set_ff_sum(ff_.sum());  // the compensator's static gain
  for (int i = 0; i < taps_; ++i) {
    for (int j = 0; j < taps_; ++j) r.add_covariance(p_(i, j));  // row-major, as initial_covariance
  }
}

// ---------------------------------------------------------------------------------------------
// Offline least squares (seed 001 Eqs. 15-18)

RlsInitialisation rls_least_squares(std::span<const double> command, std::span<const double> measured, int taps) {
  if (taps < 1 || taps > RlsCompensator::kMaxTaps) {
    throw std::invalid_argument(
        fmt::format("least-squares FIR with {} taps; expected 1..{}", taps, RlsCompensator::kMaxTaps));
  }
  if (command.size() != measured.size()) {
    throw std::invalid_argument(
        fmt::format("least squares on {} command and {} measured samples; expected equal "
                    "lengths",
                    command.size(), measured.size()));
  }
  const auto n = static_cast<std::size_t>(taps);
  if (command.size() < n || command.size() - n + 1 < n) {
    throw std::invalid_argument(fmt::format("least squares on {} samples for {} taps; expected at least {} samples",
                                            command.size(), taps, 2 * n - 1));
  }
  // Normal equations accumulated row by row: Phi^T Phi and Phi^T Y, rows i = taps-1 .. N-1.
  Eigen::MatrixXd normal = Eigen::MatrixXd::Zero(taps, taps);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(taps);
  Eigen::VectorXd row(taps);
  for (std::size_t i = n - 1; i < command.size(); ++i) {
    for (std::size_t j = 0; j < n; ++j) row[static_cast<Eigen::Index>(j)] = measured[i - j];
    normal.selfadjointView<Eigen::Lower>().rankUpdate(row);
    rhs += row * command[i];
  }
  normal = normal.selfadjointView<Eigen::Lower>();
  // A pivot below 1e-12 of the largest counts as zero: a rank test independent of the signals' units.
  Eigen::FullPivLU<Eigen::MatrixXd> lu(taps, taps);
  lu.setThreshold(1e-12);
  lu.compute(normal);
  if (!rhs.allFinite() || !normal.allFinite() || !lu.isInvertible()) {
    throw std::invalid_argument(
        fmt::format("least squares on {} samples for {} taps: Phi^T Phi is singular; expected "
                    "a measured record that excites every tap (not zero, not constant)",
                    command.size(), taps));
  }
  RlsInitialisation out;
  out.covariance = lu.inverse();
  out.covariance = (out.covariance + out.covariance.transpose()) / 2;  // (Phi^T Phi)^-1 is symmetric
  out.ff = lu.solve(rhs);
  out.samples = command.size() - n + 1;
  return out;
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<ActuatorController> make_controller(const config::Controller& controller, double rate_hz) {
  const double dt_s = 1.0 / rate_hz;
  switch (controller.kind_case()) {
    case config::Controller::kExtrapolation:
      return std::make_unique<PolynomialExtrapolationController>(
          controller.extrapolation().delay_s(), static_cast<int>(controller.extrapolation().order()), dt_s);
    case config::Controller::kFeedforward: {
      const auto& denominator = controller.feedforward().denominator();
      return std::make_unique<ModelFeedforwardController>(
          std::span<const double>(denominator.data(), static_cast<std::size_t>(denominator.size())), dt_s);
    }
    case config::Controller::kRls:
      return std::make_unique<RlsCompensator>(controller.rls(), dt_s);
    case config::Controller::kPassThrough:
    case config::Controller::KIND_NOT_SET:
      break;
  }
  return std::make_unique<PassThroughController>();
}

}  // namespace rths
