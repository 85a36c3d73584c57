#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <Eigen/Dense>

#include "experiment.pb.h"
#include "rths/node_physical/actuator_controller.hpp"

namespace rths {

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

// Horiuchi et al. (1999) polynomial extrapolation of the target over a delay. The weights are fixed
// for the dt_s given here, the site's step, which every command() call is expected to repeat.
class PolynomialExtrapolationController final : public ActuatorController {
 public:
  static constexpr int kMaxOrder = 8;
  PolynomialExtrapolationController(double delay_s, int order, double dt_s);
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& previous, double dt_s) override;
  void report(results::ControllerReport& out) const override;

 private:
  using Weights = std::array<double, kMaxOrder + 1>;
  double delay_s_;
  int order_;
  int count_ = 0;                             // targets seen, up to order + 1
  std::array<double, kMaxOrder + 1> past_{};  // targets, newest first
  // Per polynomial degree m (row m): Lagrange weights of the value, first and second derivative at
  // delay_s ahead of the newest of m + 1 equally spaced targets, derivatives already divided by dt^k.
  std::array<Weights, kMaxOrder + 1> value_{};
  std::array<Weights, kMaxOrder + 1> velocity_{};
  std::array<Weights, kMaxOrder + 1> acceleration_{};
};

// Inverse of a low-order actuator model applied to the target (config ModelFeedforward).
class ModelFeedforwardController final : public ActuatorController {
 public:
  static constexpr int kMaxModelOrder = 3;
  ModelFeedforwardController(std::span<const double> denominator, double dt_s);
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& previous, double dt_s) override;
  void report(results::ControllerReport& out) const override;
  // The FIR the inverse reduces to: command = sum_j fir()[j] * target(i - j).
  [[nodiscard]] std::span<const double> fir() const { return {fir_.data(), static_cast<std::size_t>(order_) + 1}; }

 private:
  int order_;
  std::array<double, kMaxModelOrder + 1> denominator_{};  // a_n .. a0 as configured
  std::array<double, kMaxModelOrder + 1> fir_{};
  std::array<InterfaceMotion, kMaxModelOrder + 1> past_{};  // targets, newest first
  bool started_ = false;
};

// Why an RLS compensator stopped adapting (results::RlsController::Freeze in the run summaries).
enum class RlsFreeze : std::uint8_t { kNone, kNotFinite, kDiverged };

// Seed 001 RoDeAC compensator of one actuator (config RlsCompensator). Each step: first the RLS
// update with the previous step's pair (filtered command, filtered measured taps; a-priori error),
// then the command FF . target taps. The measurement of step i is only known after the command of
// step i, so this is the causal form of seed 001's loop. A held measurement (Measurement::held: no
// reading came) is no evidence of what the command did: adaptation pauses on it and until the held
// values have left the taps and the filters (resume_wait_steps()), the command going on with FF.
class RlsCompensator final : public ActuatorController {
 public:
  static constexpr int kMaxTaps = 8;
  using Vector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxTaps, 1>;
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxTaps, kMaxTaps>;

  RlsCompensator(const config::RlsCompensator& parameters, double dt_s);
  InterfaceMotion command(const InterfaceMotion& target, const Measurement& previous, double dt_s) override;

  [[nodiscard]] const Vector& ff() const;
  [[nodiscard]] const Matrix& covariance() const;
  [[nodiscard]] RlsFreeze frozen() const;
  [[nodiscard]] std::int64_t frozen_at_step() const;  // -1 while adapting
  [[nodiscard]] std::uint64_t updates() const;        // RLS updates applied
  [[nodiscard]] std::uint64_t held_pauses() const;    // steps without an update for a held measurement
  // Steps after the last held measurement before adaptation resumes: the taps, and one period of the
  // filters' cutoff, by which their response to the held stretch has passed.
  [[nodiscard]] std::int64_t resume_wait_steps() const { return resume_wait_; }
  // One line for the log once frozen ("" while adapting): the reason, the step and the offending value.
  [[nodiscard]] std::string freeze_message() const;
  void report(results::ControllerReport& out) const override;
  [[nodiscard]] std::string warning() const override { return freeze_message(); }

 private:
  void update(double command_f);
  void freeze(RlsFreeze reason, int index, double value);

  int taps_;
  double forgetting_factor_;
  double signal_scale_;
  double divergence_limit_;
  double adaptation_threshold_m_;
  Vector ff_;
  Matrix p_;
  IirFilter command_filter_;
  IirFilter measured_filter_;
  Vector target_taps_;    // x_t(i) .. x_t(i-taps+1), scaled
  Vector velocity_taps_;  // the target velocities and accelerations alike (m/s, m/s^2)
  Vector acceleration_taps_;
  Vector measured_taps_;       // filtered measurements x_mf(i-1) .. x_mf(i-taps), scaled
  double last_command_ = 0.0;  // x_c(i-1), scaled
  bool has_last_command_ = false;
  bool armed_ = false;            // a target has exceeded adaptation_threshold_m
  std::int64_t resume_wait_ = 0;  // see resume_wait_steps()
  std::int64_t paused_ = 0;       // steps left without adaptation since the last held measurement
  std::uint64_t held_pauses_ = 0;
  std::int64_t step_ = 0;
  std::uint64_t updates_ = 0;
  RlsFreeze frozen_ = RlsFreeze::kNone;
  std::int64_t frozen_at_step_ = -1;
  int frozen_index_ = -1;  // FF entry that diverged, -1 for a non-finite value elsewhere
  double frozen_value_ = 0.0;
};

// Offline least-squares initialisation of the RLS (seed 001 Eqs. 15-18) from an open-loop record:
// FF0 = (Phi^T Phi)^-1 Phi^T Y, P0 = (Phi^T Phi)^-1, Phi rows the measured taps [x_m(i) .. x_m(i-taps+1)]
// and Y the command (= target) x_c(i), for i = taps-1 .. N-1, signals as given (metres; the
// compensator's signal_scale then makes P0 a weak prior, as in seed 001). Throws
// std::invalid_argument when Phi^T Phi is singular.
struct RlsInitialisation {
  Eigen::VectorXd ff;
  Eigen::MatrixXd covariance;
  std::size_t samples = 0;
};
RlsInitialisation rls_least_squares(std::span<const double> command, std::span<const double> measured, int taps);

// The controller a config describes (pass-through when none is set).
std::unique_ptr<ActuatorController> make_controller(const config::Controller& controller, double rate_hz);

}  // namespace rths
