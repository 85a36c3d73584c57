#include "node_physical/controllers/rls_compensator.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {
namespace {

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

RlsCompensator::RlsCompensator(const config::RlsCompensator& parameters, double dt_s)
    : taps_(static_cast<int>(parameters.taps())),
      forgetting_factor_(parameters.forgetting_factor()),
      signal_scale_(parameters.signal_scale()),
      divergence_limit_(parameters.divergence_limit()),
      adaptation_threshold_m_(parameters.adaptation_threshold_m()) {
  // What protects memory (the taps' fixed capacity, the initial values' sizes) and the loader's
  // contract; the config's rules are in validate().
  const auto n = static_cast<std::size_t>(taps_);
  if (taps_ < 1 || taps_ > kMaxTaps ||
      (parameters.initial_ff_size() != 0 && static_cast<std::size_t>(parameters.initial_ff_size()) != n) ||
      (parameters.initial_covariance_size() != 0 &&
       static_cast<std::size_t>(parameters.initial_covariance_size()) != n * n)) {
    throw std::invalid_argument(
        fmt::format("RLS compensator with {} taps, initial_ff of {} entries and initial_covariance of {}; "
                    "expected 1..{} taps, taps and taps x taps entries (or none)",
                    taps_, parameters.initial_ff_size(), parameters.initial_covariance_size(), kMaxTaps));
  }
  if (parameters.has_calibration_path()) {
    throw std::invalid_argument(
        fmt::format("RLS calibration_path \"{}\" is unresolved; the config loader copies the "
                    "calibration file into initial_ff/initial_covariance",
                    parameters.calibration_path()));
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

namespace {

void validate(const config::RlsCompensator& rls, const ComponentContext& context, const Checker& check) {
  const std::uint64_t taps = rls.taps();  // its square fits: the checks never overflow, whatever the config says
  check.expect(taps >= 1 && taps <= static_cast<std::uint64_t>(RlsCompensator::kMaxTaps), "taps",
               fmt::format("is {}, expected 1..{} taps", taps, RlsCompensator::kMaxTaps));
  check.expect(rls.forgetting_factor() > 0 && rls.forgetting_factor() <= 1, "forgetting_factor",
               fmt::format("is {}, expected a forgetting factor in (0, 1] (seed 001 uses 1)", rls.forgetting_factor()));
  check.expect(rls.filter_order() >= 1 && rls.filter_order() <= IirFilter::kMaxOrder, "filter_order",
               fmt::format("is {}, expected a Butterworth order 1..{}", rls.filter_order(), IirFilter::kMaxOrder));
  const double nyquist = context.rate_hz / 2;
  check.expect(rls.filter_cutoff_hz() > 0 && rls.filter_cutoff_hz() < nyquist, "filter_cutoff_hz",
               fmt::format("is {}, expected a cutoff > 0 Hz and below the Nyquist frequency {} Hz",
                           rls.filter_cutoff_hz(), nyquist));
  check.expect(rls.signal_scale() > 0, "signal_scale",
               fmt::format("is {}, expected > 0 (1000: millimetres)", rls.signal_scale()));
  check.expect(rls.initial_covariance_scale() > 0, "initial_covariance_scale",
               fmt::format("is {}, expected > 0", rls.initial_covariance_scale()));
  check.expect(rls.divergence_limit() > 0, "divergence_limit",
               fmt::format("is {}, expected > 0", rls.divergence_limit()));
  check.expect(rls.adaptation_threshold_m() >= 0, "adaptation_threshold_m",
               fmt::format("is {}, expected >= 0 m", rls.adaptation_threshold_m()));
  const bool inline_values = rls.initial_ff_size() > 0 || rls.initial_covariance_size() > 0;
  check.expect(!(inline_values && rls.has_calibration_path()), "calibration_path",
               "is given with initial_ff/initial_covariance; expected one source of the initial values");
  const auto ff_size = static_cast<std::uint64_t>(rls.initial_ff_size());
  const auto covariance_size = static_cast<std::uint64_t>(rls.initial_covariance_size());
  check.expect(ff_size == 0 || ff_size == taps, "initial_ff",
               fmt::format("has {} entries, expected taps = {}", rls.initial_ff_size(), taps));
  check.expect(covariance_size == 0 || covariance_size == taps * taps, "initial_covariance",
               fmt::format("has {} entries, expected taps x taps = {}", rls.initial_covariance_size(), taps * taps));
}

std::unique_ptr<ActuatorController> make(const config::RlsCompensator& rls, const ComponentContext& context) {
  return std::make_unique<RlsCompensator>(rls, 1.0 / context.rate_hz);
}

[[maybe_unused]] const bool kRlsCompensatorRegistered = register_controller<config::RlsCompensator>(validate, make);

}  // namespace
}  // namespace rths
