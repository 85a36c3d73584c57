#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <Eigen/Dense>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/controllers/frame_inverse_command.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/frame_state_model.hpp"
#include "node_physical/controllers/iir_filter.hpp"
#include "node_physical/controllers/root_estimate.hpp"
#include "node_physical/controllers/site_controller.hpp"
#include "node_physical/controllers/unscented_transform.hpp"
#include "results.pb.h"

namespace rths {

// Why an estimate stopped (InverseDynamicsController::frozen()).
enum class EstimateFreeze : std::uint8_t { kNone, kNotFinite, kIndefinite, kUnstableInverse };

// What seed 003's four compensators (Ruiz & Song 2024: EKF-TF, UKF-TF, EKF-SS, UKF-SS) share, in
// actuator coordinates of the maRTHS two-actuator plant: the command is the inverse of the plant model
// H(s | theta) applied to the stroke targets (blocks I-III, FrameInverseCommand), and the model's ten
// roots theta are estimated every step (block IV, the derived class's estimator). The gains k11 k21
// k12 k22 stay at their initial values (seed 003 Eq. 24). Signals are in millimetres inside
// (signal_scale), as in seed 003. What is shared (docs/marths-ukf.md has the choices with numbers):
//
// - Timing. The command of step k goes out before the reading of tick k is taken (hardware-true), so
//   the call of step k updates the estimate with the reading of tick k-1, after its prediction with the
//   command of step k-2, the first that reading shows; then commands from the updated model.
// - Filtering: seed 003's Butterworth low-pass (filter_order, filter_cutoff_hz; 0 disables) on the
//   command and the measurement the estimator sees, both alike, so the pair keeps the plant's relation.
// - Start: the plant is taken to rest at its first reading y0 (the site ramps it there) under the
//   command u0 = H(0 | theta0)^-1 y0, the command before the first step; the estimator starts there
//   (an SS model at the equilibrium of u0, the TF model at rest at y0), the low-passes at their
//   equilibrium (they filter the deviations from y0 and u0), the inverse at rest at the first target.
// - A held reading (Measurement::held: none came) updates nothing: the estimate is predicted over the
//   step and its filter skips the sample, so that what it learns does not depend on a repeated value.
// - Guards: a non-finite value in the measurement, the command or the update, or an estimator's own
//   failure (a covariance that lost definiteness), freezes the estimate for the rest of the run
//   (report() and warning() say when and why); the commands continue with the last good model. Every
//   root is held at or above 1 % of its initial value after each update, and an estimate whose inverse
//   would be unstable (z <= 1 % of its initial value) freezes the estimate too.
class InverseDynamicsController : public SiteController {
 public:
  using Input = FrameStateModel::Input;
  using Theta = FrameStateModel::Theta;
  static constexpr int kRoots = FramePlantModel::kRoots;

  [[nodiscard]] std::size_t actuators() const final { return 2; }
  void command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
               std::span<InterfaceMotion> commands, double dt_s) final;
  void report(std::size_t actuator, results::ControllerReport& out) const final;
  [[nodiscard]] std::string warning() const final;

  // The model commanding now: the initial gains with the estimated roots.
  [[nodiscard]] const FramePlantModel& model() const { return model_; }
  [[nodiscard]] const FramePlantModel& initial_model() const { return initial_; }
  [[nodiscard]] std::uint64_t updates() const { return updates_; }
  [[nodiscard]] std::uint64_t clamps() const { return clamps_; }  // roots held at their floor
  [[nodiscard]] EstimateFreeze frozen() const { return frozen_; }
  [[nodiscard]] std::int64_t frozen_at_step() const { return frozen_at_step_; }  // -1 while estimating
  // The line for the log once frozen ("" while estimating): the step, the reason, the value.
  [[nodiscard]] std::string freeze_message() const;

 protected:
  // name: the estimator as the log names it ("UKF", "EKF", "EKF-TF", "UKF-TF"); c: its config, whose
  // fields every seed 003 config has alike. For a config that passed its rules
  // (validate_inverse_dynamics); throws std::invalid_argument for a filter order or a target window
  // beyond their arrays or a model that cannot be inverted.
  template <class Config>
  InverseDynamicsController(const char* name, const Config& c, const FramePlantModel& initial, double rate_hz)
      : InverseDynamicsController(name, initial, rate_hz, c.signal_scale(), c.filter_order(), c.filter_cutoff_hz(),
                                  c.target_window()) {}

  void freeze(EstimateFreeze reason, double value);
  // True when an EKF's innovation covariance S (symmetric 2 x 2) is positive definite; else a freeze
  // (kIndefinite) naming its smaller eigenvalue.
  bool innovation_definite(const Eigen::Matrix2d& innovation);
  // An EKF's update of the prior (x, P) with the observation's Jacobian h, the residual (observed
  // minus predicted) and R = r I, into the estimate's proposal: S = h P h^T + R, K = P h^T S^-1,
  // x + K residual, and Joseph's form (I - K h) P (I - K h)^T + K R K^T (symmetric and >= 0 by
  // construction, where a Q of 0 leaves nothing to make up for rounding). False (and a freeze) when S
  // is not positive definite.
  template <int N>
  bool ekf_update(RootEstimate<N>& estimate, const Eigen::Matrix<double, N, 1>& x,
                  const Eigen::Matrix<double, N, N>& prior, const Eigen::Matrix<double, 2, N>& h, const Input& residual,
                  double r) {
    const Eigen::Matrix<double, N, 2> ph = prior * h.transpose();
    Eigen::Matrix2d innovation = h * ph;
    innovation.diagonal().array() += r;
    if (!innovation_definite(innovation)) return false;
    const Eigen::Matrix<double, N, 2> k = ph * innovation.inverse();
    estimate.x_next = x + k * residual;
    const Eigen::Matrix<double, N, N> joseph = Eigen::Matrix<double, N, N>::Identity() - k * h;
    estimate.p_next = joseph * prior * joseph.transpose() + r * k * k.transpose();
    return true;
  }
  // A UKF's sigma points: a lower Cholesky factor of P into `lower` (true), or a freeze (kIndefinite,
  // naming P's smallest eigenvalue) when P has none: the guarded Cholesky of docs/marths-ukf.md, choice 7.
  template <int N>
  bool sigma_factor(const Eigen::Matrix<double, N, N>& p, Eigen::Matrix<double, N, N>& lower) {
    const Eigen::LLT<Eigen::Matrix<double, N, N>> llt(p);
    lower = llt.matrixL();
    if (llt.info() == Eigen::Success && lower.allFinite()) return true;
    const Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, N, N>> eigen(p, Eigen::EigenvaluesOnly);
    freeze(EstimateFreeze::kIndefinite, eigen.eigenvalues().minCoeff());
    return false;
  }
  // A UKF's update of the prior (mean, P) whose sigma points `sigma` map to `outputs`, with the
  // observation `observed` and R = r I, into the estimate's proposal: S = the outputs' UT covariance
  // + R, K = (the UT cross-covariance) S^-1, mean + K (observed - the outputs' UT mean), P - K S K^T.
  // False (and a freeze) when S is not positive definite.
  template <int N, int C>
  bool ukf_update(RootEstimate<N>& estimate, const UnscentedWeights& w, const Eigen::Matrix<double, N, 1>& mean,
                  const Eigen::Matrix<double, N, N>& prior, const Eigen::Matrix<double, N, C>& sigma,
                  const Eigen::Matrix<double, 2, C>& outputs, const Input& observed, double r) {
    const Input output_mean = unscented_mean(w, outputs);
    Eigen::Matrix2d innovation = unscented_covariance(w, outputs, output_mean, outputs, output_mean);
    innovation.diagonal().array() += r;
    if (!innovation_definite(innovation)) return false;
    const Eigen::Matrix<double, N, 2> k =
        unscented_covariance(w, sigma, mean, outputs, output_mean) * innovation.inverse();
    estimate.x_next = mean + k * (observed - output_mean);
    estimate.p_next = prior - k * innovation * k.transpose();
    return true;
  }
  // The roots of an estimator's proposal into theta (true), or a freeze when it is not finite.
  template <int N>
  bool propose(RootEstimate<N>& estimate, Theta& theta) {
    double bad = 0.0;
    if (!estimate.settle_proposal(bad)) {
      freeze(EstimateFreeze::kNotFinite, bad);
      return false;
    }
    theta = estimate.x_next.template tail<kRoots>();
    return true;
  }
  [[nodiscard]] double dt_s() const { return dt_s_; }

 private:
  InverseDynamicsController(const char* name, const FramePlantModel& initial, double rate_hz, double signal_scale,
                            std::uint32_t filter_order, double filter_cutoff_hz, std::uint32_t target_window);

  // What an estimator implements (the shell calls them; its derived class overrides them privately).
  // Block IV at the call of step k >= 1: the prediction (when `predict`; the call of step 1 has the
  // start's reading and none) under `command`, the filtered command of step k-2, then the update with
  // `measured`, the filtered reading of tick k-1 (mm), unless `measured` is null (the reading was
  // held: no new measurement came, and the estimate learns nothing from a repeated one); the proposed
  // roots into `theta`. On a failure the estimator calls freeze() and returns false; nothing of its
  // state is committed before accept().
  virtual bool estimate(const Input* measured, const Input& command, bool predict, Theta& theta) = 0;
  // The last proposal is committed, with the roots the floor held (theta).
  virtual void accept(const Theta& theta) = 0;
  // The start: the plant at rest at the reading y0 under the command u0 (mm).
  virtual void start(const Input& command, const Input& measured) = 0;
  // The report's member of this controller (the config's member name).
  virtual results::InverseDynamicsReport& report_member(results::ControllerReport& out) const = 0;

  void update(const Input& measured_mm, bool held);

  const char* name_;
  FramePlantModel initial_;
  FramePlantModel model_;
  FrameInverseCommand inverse_;
  double dt_s_;
  double signal_scale_;
  std::array<double, kRoots> floor_{};  // 1 % of the initial roots
  double zero_floor_ = 0.0;             // 1 % of the initial transmission zero
  std::array<IirFilter, 2> command_filter_;
  std::array<IirFilter, 2> measured_filter_;
  Input command_reference_ = Input::Zero();   // u0
  Input measured_reference_ = Input::Zero();  // y0
  // The filtered commands of the last two steps, newest first (mm): the prediction of call k steps
  // the model from tick k-2 to k-1 with the command of step k-2, the first the reading of tick k-1 shows.
  std::array<Input, 2> filtered_commands_{Input::Zero(), Input::Zero()};
  StrokeCommands stroke_commands_;
  std::int64_t step_ = 0;
  std::uint64_t updates_ = 0;
  std::uint64_t clamps_ = 0;
  EstimateFreeze frozen_ = EstimateFreeze::kNone;
  std::int64_t frozen_at_step_ = -1;
  double frozen_value_ = 0.0;
};

// The rules every seed 003 compensator's config shares (the messages UkfInverseDynamics,
// EkfInverseDynamics, EkfTfInverseDynamics and UkfTfInverseDynamics have these fields alike): the
// model it starts from (`initial_model`; absent: the site's actuator_plant { two_actuator_frame }),
// the signal scale, the low-pass, the command law's target window and the covariances P0, Q and R.
// Each estimator's validate() adds its own.
void validate_inverse_dynamics(const config::TwoActuatorFramePlant* initial_model, double signal_scale,
                               std::uint32_t filter_order, double filter_cutoff_hz, std::uint32_t target_window,
                               const std::array<double, 3>& covariances, const ComponentContext& context,
                               const Checker& check);
template <class Config>
void validate_inverse_dynamics(const Config& c, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(c.has_initial_model() ? &c.initial_model() : nullptr, c.signal_scale(), c.filter_order(),
                            c.filter_cutoff_hz(), c.target_window(),
                            {c.initial_covariance(), c.process_noise(), c.measurement_noise()}, context, check);
}

// The model the estimate starts from: the configured one, else the site's plant as identified (its
// nominal: the uncertainty is what the estimate must find). For a config that passed the rules.
template <class Config>
FramePlantModel initial_model_of(const Config& c, const ComponentContext& context) {
  return model_of_site_or(c.has_initial_model() ? &c.initial_model() : nullptr, context);
}

// The estimation model's discretisation a config names.
inline FrameDiscretisation frame_discretisation(config::ModelDiscretisation d) {
  return d == config::FORWARD_EULER ? FrameDiscretisation::kForwardEuler : FrameDiscretisation::kRungeKutta4;
}

// The rules of a UKF's sigma points (UkfInverseDynamics and UkfTfInverseDynamics alike) for a state of
// `dimension`: 0 < alpha <= 1, beta >= 0, dimension + kappa > 0 (seed 003: 0.4, 2, 0).
void validate_sigma_points(double alpha, double beta, double kappa, int dimension, const Checker& check);
template <class Config>
void validate_sigma_points(const Config& c, int dimension, const Checker& check) {
  validate_sigma_points(c.alpha(), c.beta(), c.kappa(), dimension, check);
}

}  // namespace rths
