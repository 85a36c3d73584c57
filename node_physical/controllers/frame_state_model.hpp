#pragma once

#include <array>
#include <cstdint>

#include <Eigen/Dense>

#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/root_estimate.hpp"

namespace rths {

// How the estimation model is stepped over a sample: one classical Runge-Kutta step with the command
// held (the benchmark's own plant integration, ode4), or seed 003 Eqs. 15-16's forward Euler, kept for
// A/B runs (docs/marths-ukf.md, choice 6).
enum class FrameDiscretisation : std::uint8_t { kRungeKutta4, kForwardEuler };

// The estimation model of seed 003's SS variants (EKF-SS, UKF-SS): the minimal 8-state realisation of
// H(s | theta) in mm, as two cascades with unit-DC-gain stages so that every state is a stroke-like
// quantity (docs/marths-ukf.md, choice 5):
//   column 1: x_a = a1 a2 / ((s + a1)(s + a2)) u1, m = (s + b1)(s + b2) / (b1 b2) x_a,
//             f = (c1^2 + c2^2) / F(s) m;
//   column 2: x_d = d1 d2 / ((s + d1)(s + d2)) u2, g = (c1^2 + c2^2) / F(s) x_d;
//   y1 = H11(0) f + H12(0) (g + g' / p1),   y2 = H21(0) f + H22(0) (g + g' / p2),
// the states x_a, x_a' / (a1 + a2), f, f' / wf, x_d, x_d' / (d1 + d2), g, g' / wf (wf^2 = c1^2 + c2^2).
// Seed 003 augments the state with the roots theta, which a random walk carries (Eq. 13): the
// Jacobians below are of the step and the output with respect to that augmented state [z, theta],
// derived by hand (frame_state_model.cpp) for the EKF; the tests hold them to finite differences.
struct FrameStateModel {
  static constexpr int kStates = 8;
  static constexpr int kRoots = FramePlantModel::kRoots;
  static constexpr int kAugmented = kStates + kRoots;
  using State = Eigen::Matrix<double, kStates, 1>;
  using Theta = Eigen::Matrix<double, kRoots, 1>;
  using Input = Eigen::Vector2d;
  using Gains = std::array<double, FramePlantModel::kGains>;
  // d(step) / d[z, theta]: rows the stepped state (the roots' rows are the identity's, not stored).
  using StepJacobian = Eigen::Matrix<double, kStates, kAugmented>;
  // d(output) / d[z, theta].
  using OutputJacobian = Eigen::Matrix<double, 2, kAugmented>;

  // The state at rest under a constant command u.
  static State equilibrium(const Input& u);
  // One step of dt_s with u held.
  static State step(const State& z, const Theta& theta, const Gains& gain, const Input& u, double dt_s,
                    FrameDiscretisation scheme);
  // The strokes the state reads as (no feedthrough).
  static Input output(const State& z, const Theta& theta, const Gains& gain);

  // The Jacobian of step() at (z, theta): exact for the discrete map (the chain rule through the
  // Runge-Kutta stages), not the continuous model's. With `stepped`, also step()'s result, from the
  // same stages (what an EKF's prediction needs both of).
  static StepJacobian step_jacobian(const State& z, const Theta& theta, const Gains& gain, const Input& u, double dt_s,
                                    FrameDiscretisation scheme, State* stepped = nullptr);
  static OutputJacobian output_jacobian(const State& z, const Theta& theta, const Gains& gain);

  // The model as a continuous-time state space at theta, dz/dt = A z + B u, y = C z (no
  // feedthrough): C (sI - A)^-1 B is H(s | theta), which the tests hold to FramePlantModel::response.
  // What a model-based design (a regulator, a Kalman filter) starts from.
  struct Linear {
    Eigen::Matrix<double, kStates, kStates> a;
    Eigen::Matrix<double, kStates, 2> b;
    Eigen::Matrix<double, 2, kStates> c;
  };
  static Linear linear(const Theta& theta, const Gains& gain);
};

// H(0 | model), the plant's static gains: [i][j] the stroke of actuator i per unit command of j.
Eigen::Matrix2d static_gain_matrix(const FramePlantModel& model);

// The estimate of the SS estimators (EKF-SS, UKF-SS): the augmented state x = [z, theta].
struct AugmentedEstimate : RootEstimate<FrameStateModel::kAugmented> {
  using RootEstimate::RootEstimate;
  // The model at rest under the command u.
  void start(const FrameStateModel::Input& u) { x.head<FrameStateModel::kStates>() = FrameStateModel::equilibrium(u); }
};

}  // namespace rths
