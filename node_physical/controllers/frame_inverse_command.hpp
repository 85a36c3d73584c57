#pragma once

#include <array>

#include "node_physical/controllers/frame_plant_model.hpp"

namespace rths {

// Seed 003's blocks I-III, shared by its four compensators (EKF-TF, UKF-TF, EKF-SS, UKF-SS): the
// command is the inverse of the plant model H(s | theta) applied to the stroke targets; the model's
// roots are the estimator's (block IV). How the improper inverse is realised, lag-free (choices 1-4 of
// docs/marths-ukf.md):
//
// 1. Inverse, exact and lag-free (blocks I-III). H factors as
//      H(s) = F(s)^-1 M(s) diag(g(s), h(s)),   M(s) = [[k11, k12 (s + p1)], [k21, k22 (s + p2)]],
//      g = (s + b1)(s + b2) / ((s + a1)(s + a2)),   h = 1 / ((s + d1)(s + d2)),
//    so H^-1 = diag(1/g, 1/h) M(s)^-1 F(s) and u = H^-1 w runs as: v = F(s) w (the target's first two
//    derivatives); M(s) q = v, whose second row eliminated gives one stable first-order state,
//      (k11 k22 - k12 k21) q2' + (k11 k22 p2 - k12 k21 p1) q2 = k11 v2 - k21 v1,
//    and q1 algebraically; u1 = q1 / g (biproper, poles -b1 -b2) and u2 = (s + d1)(s + d2) q2 (needs
//    q2'', hence the target's third derivative). Three states, the three poles of H^-1 (-b1, -b2 and
//    -z at the transmission zero z = (k11 k22 p2 - k12 k21 p1) / (k11 k22 - k12 k21), 31.9 rad/s nominally),
//    all stable for positive roots; three derivatives, the plant's largest relative degree (column 2).
//    Seed 003 Eq. 8 multiplies by the common denominator Delta(s) instead, which needs six. No
//    low-pass is put in front: any low-pass of relative degree 3 lags by ~3 / cutoff (9.5 ms at
//    50 Hz, 14 % NRMS at 2.3 Hz), an order of magnitude above the error budget.
// 2. Timing. The plant reads y_k before u_k acts (hardware-true), so u_k first shows in y_{k+1}, and
//    a held u_k stands for the continuous inverse at the middle of its step. The command therefore
//    inverts the target at t_k + dt/2 -- half a step beyond the newest target -- and y_{k+1} meets
//    x_t(k+1): no step of latency. The residual is the hold's O((w dt)^2 / 24).
// 3. Derivatives (block I): the cubic fitted to the last `target_window` targets by least squares
//    (through the last four when the window is 4, this class's default; the configs' is 16),
//    evaluated with its first three derivatives half a step ahead (fixed weights). A cubic target is
//    differentiated exactly by any window, so the fit adds no lag; the cubic's relative error is
//    O((w T)^(4-n)) in the n-th derivative over a window of T, and it is the lowest order that has a
//    third derivative (the derivative terms cannot lag, since the pole a1 at 2.65 Hz makes them much
//    of the command in the band). The window bounds what the inverse makes of a target's noise:
//    through four targets the third derivative's gain at half the step rate is 8 / dt^3, and a target
//    that alternates by a micrometre each step (sensor noise fed back through a massless DOF) becomes
//    commands of 16 mm; fitted to eight targets the gain is 0.24 / dt^3 and the commands a tenth, and
//    sixteen cut the maRTHS site's command chatter twentyfold (docs/marths-ukf.md, choice 3).
// 4. Discretisation of the inverse's three states: the trapezoidal rule (Tustin) on the sequence of
//    half-step-advanced targets, re-evaluated every step from the current estimate (no allocation, a
//    few dozen flops); A-stable whatever the roots, warping O((w dt)^2 / 12) in the band. The states
//    carry over when theta moves, which it does slowly.
// 5. Evaluation point. The command law evaluates the inverse half a step beyond its newest target
//    (choice 2). Seed 003's TF estimation model (FrameCommandModel) runs the same inverse on the
//    measured strokes and evaluates it half a step before the newest reading, between the two newest
//    readings: the middle of the step over which the command that reading shows was held.
// 6. Root sensitivities (the TF estimation model): the inverse's states are themselves functions of
//    the roots over the run (q2 follows e / det with the slow pole -z, 31.9 rad/s, so its value
//    depends on z over the last ~0.1 s), and a derivative of one step alone would miss that path: the
//    derivative of q2 with respect to z would come out ~1 / (z dt / 2) = 64 times too small. The
//    states' derivatives are carried from step to step (forward sensitivities, as a recursive
//    prediction-error method carries them), their values taken at the roots committed each step.
// Blocks I-III: u = H^-1(s | model) applied to a signal at the evaluation point (choices 1-6 above).
// Signals in the caller's units (the controller passes mm). No allocation after construction.
class FrameInverseCommand {
 public:
  using Vector2 = std::array<double, 2>;
  using Roots = std::array<double, FramePlantModel::kRoots>;
  // d(command) / d(roots), row per command.
  using RootJacobian = std::array<Roots, 2>;
  static constexpr int kExtrapolationOrder = 3;
  // The targets the cubic of choice 3 may be fitted to: from the four it passes through up to this.
  static constexpr int kMaxTargetWindow = 32;
  // The fewest: the four targets the cubic passes through (Lagrange's weights).
  static constexpr int kMinTargetWindow = kExtrapolationOrder + 1;
  // Where the inverse is evaluated, in steps from the newest sample of its input.
  static constexpr double kHalfStepAhead = 0.5;  // the command law (choice 2)
  static constexpr double kHalfStepBack = -0.5;  // the TF estimation model (choice 5)

  // Throws std::invalid_argument naming the parameter when the model cannot be inverted stably
  // (a root not positive and finite, k11 k22 = k12 k21, or a transmission zero z <= 0) or the window
  // is outside 4..kMaxTargetWindow. With `root_sensitivities`, each step also carries the derivatives
  // of the states with respect to the roots (choice 6), which command_under() then uses.
  // `target_window`: the inputs the cubic of choice 3 is fitted to.
  FrameInverseCommand(const FramePlantModel& model, double dt_s, double evaluated_at = kHalfStepAhead,
                      bool root_sensitivities = false, int target_window = kMinTargetWindow);

  // The model of the next step on; the states carry over. False (and the model unchanged) when it
  // cannot be inverted stably (invertible()).
  bool set_model(const FramePlantModel& model);
  // True when the model's inverse is stable and finite (the constructor's conditions).
  [[nodiscard]] static bool invertible(const FramePlantModel& model);
  // The transmission zero z of the model (rad/s; choice 1).
  [[nodiscard]] static double transmission_zero(const FramePlantModel& model);

  // The command of this step for the input of this step. The first call starts at rest at that
  // input. A non-finite input gives non-finite commands and leaves every state as it was.
  Vector2 step(const Vector2& target);
  // What step(target) would return were the model's roots `roots` (the gains the model's), and its
  // derivative with respect to them when `jacobian` is not null (forward-mode differentiation of the
  // same arithmetic). With root sensitivities the states too are taken at `roots`, to first order
  // (states + dstates/droots (roots - the model's)), and the derivative is the whole history's;
  // without, the states are the model's and the derivative is this step's. Commits nothing. For a
  // finite target.
  [[nodiscard]] Vector2 command_under(const Roots& roots, const Vector2& target, RootJacobian* jacobian) const;
  // The cubic through the last four inputs one step on (4 x0 - 6 x1 + 4 x2 - x3): what stands in for
  // an input that did not come. For a started inverse.
  [[nodiscard]] Vector2 extrapolated() const;

  // The states the inverse carries from step to step, of scalar type S (double, or a value carrying its
  // derivatives with respect to the roots): q2 and its last input e (M^-1), the filter
  // 1 / ((s + b1)(s + b2)) of q1 (x, x') and its last input q1.
  template <class S>
  struct StatesOf {
    S q2{}, e{}, x{}, x_rate{}, q1{};
  };
  using States = StatesOf<double>;
  // The input's value and first three derivatives at the evaluation point, per channel.
  using Derivatives = std::array<std::array<double, 4>, 2>;
  // The inverse's coefficients from the roots (of scalar type S: double, or a value carrying its
  // derivatives with respect to the roots) and the gains, which the estimate never moves.
  template <class S>
  struct Coefficients {
    S c1, wf2, a_sum, a_product, b_sum, b_product, d_sum, d_product, p1;
    double k11, k12, k21;
    double determinant;  // k11 k22 - k12 k21
    S zero;              // z (rad/s)
  };

 private:
  // The input's derivatives with `target` as the newest sample (the history is not changed).
  [[nodiscard]] Derivatives derivatives(const Vector2& target) const;
  // The roots' shift from the model's, along which the states move to first order (zero without root
  // sensitivities).
  [[nodiscard]] Roots shift_of(const Roots& roots) const;

  double dt_s_;
  FramePlantModel model_;
  Coefficients<double> c_{};  // model_'s
  // weights_[n][j]: the n-th derivative at the evaluation point of the cubic fitted to the window, per
  // input j steps back (j < window_).
  std::array<std::array<double, kMaxTargetWindow>, 4> weights_{};
  int window_;
  std::array<Vector2, kMaxTargetWindow> past_{};  // inputs, newest first (window_ of them kept)
  bool started_ = false;
  States states_;
  bool root_sensitivities_;
  // d(state) / d(roots) for the states in States's order (zero unless root_sensitivities_).
  std::array<Roots, 5> sensitivity_{};
};

}  // namespace rths
