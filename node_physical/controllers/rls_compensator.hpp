#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <Eigen/Dense>

#include "node_physical/controllers/actuator_controller.hpp"
#include "node_physical/controllers/iir_filter.hpp"

namespace rths {

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

}  // namespace rths
