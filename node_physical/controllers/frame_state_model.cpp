#include "node_physical/controllers/frame_state_model.hpp"

#include <cmath>

namespace rths {

namespace {

using Root = FramePlantModel::Root;
using Gain = FramePlantModel::Gain;
using State = FrameStateModel::State;
using Theta = FrameStateModel::Theta;
using Input = FrameStateModel::Input;
using StepJacobian = FrameStateModel::StepJacobian;
constexpr int kStates = FrameStateModel::kStates;

// The model's quantities the derivative and the output need, computed once per evaluation.
struct StateCoefficients {
  double a_sum, a_product, b_sum, b_product, c1, wf, wf2, d_sum, d_product;
  double g11, g21;  // column 1's static gains H11(0), H21(0)
  double h12, h22;  // k12 / (d1 d2 wf2), k22 / (d1 d2 wf2): column 2's output weights
  double p1, p2;

  StateCoefficients(const Theta& t, const FrameStateModel::Gains& k)
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

// m = (s + b1)(s + b2) / (b1 b2) x_a from x_a's state and input, expanded for its derivatives.
double stage_m(const State& z, const StateCoefficients& c, const Input& u) {
  return c.a_product / c.b_product * (u[0] - z[0]) + z[0] + c.a_sum * (c.b_sum - c.a_sum) / c.b_product * z[1];
}

// dz/dt of the two cascades (written as it was first realised: the UKF's numbers stay bit for bit).
State derivative(const State& z, const StateCoefficients& c, const Input& u) {
  State dz;
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

// The derivative's coefficients q = (a_sum, a_product, b_sum, b_product, c1, wf, d_sum, d_product).
enum Q : std::uint8_t { kASum, kAProduct, kBSum, kBProduct, kC1, kWf, kDSum, kDProduct, kQ };

// d(dz/dt) / d[z, theta] = [A(theta) | d(dz/dt)/dq dq/dtheta].
StepJacobian derivative_jacobian(const State& z, const Theta& t, const StateCoefficients& c, const Input& u) {
  StepJacobian j = StepJacobian::Zero();
  // d/dz: the cascades' matrix A(theta).
  j(0, 1) = c.a_sum;
  j(1, 0) = -c.a_product / c.a_sum;
  j(1, 1) = -c.a_sum;
  j(2, 3) = c.wf;
  j(3, 0) = c.wf * (1.0 - c.a_product / c.b_product);
  j(3, 1) = c.wf * c.a_sum * (c.b_sum - c.a_sum) / c.b_product;
  j(3, 2) = -c.wf;
  j(3, 3) = -2.0 * c.c1;
  j(4, 5) = c.d_sum;
  j(5, 4) = -c.d_product / c.d_sum;
  j(5, 5) = -c.d_sum;
  j(6, 7) = c.wf;
  j(7, 4) = c.wf;
  j(7, 6) = -c.wf;
  j(7, 7) = -2.0 * c.c1;

  // d(dz/dt) / dq.
  Eigen::Matrix<double, kStates, kQ> dq = Eigen::Matrix<double, kStates, kQ>::Zero();
  const double ua = u[0] - z[0];
  const double ud = u[1] - z[4];
  dq(0, kASum) = z[1];
  dq(1, kASum) = -c.a_product / (c.a_sum * c.a_sum) * ua - z[1];
  dq(1, kAProduct) = ua / c.a_sum;
  dq(2, kWf) = z[3];
  dq(3, kASum) = c.wf * (c.b_sum - 2.0 * c.a_sum) * z[1] / c.b_product;
  dq(3, kAProduct) = c.wf * ua / c.b_product;
  dq(3, kBSum) = c.wf * c.a_sum * z[1] / c.b_product;
  dq(3, kBProduct) = -c.wf * (c.a_product * ua + c.a_sum * (c.b_sum - c.a_sum) * z[1]) / (c.b_product * c.b_product);
  dq(3, kC1) = -2.0 * z[3];
  dq(3, kWf) = stage_m(z, c, u) - z[2];
  dq(4, kDSum) = z[5];
  dq(5, kDSum) = -c.d_product / (c.d_sum * c.d_sum) * ud - z[5];
  dq(5, kDProduct) = ud / c.d_sum;
  dq(6, kWf) = z[7];
  dq(7, kC1) = -2.0 * z[7];
  dq(7, kWf) = z[4] - z[6];

  // dq / dtheta.
  Eigen::Matrix<double, kQ, FrameStateModel::kRoots> qt = Eigen::Matrix<double, kQ, FrameStateModel::kRoots>::Zero();
  qt(kASum, Root::kA1) = qt(kASum, Root::kA2) = 1.0;
  qt(kAProduct, Root::kA1) = t[Root::kA2];
  qt(kAProduct, Root::kA2) = t[Root::kA1];
  qt(kBSum, Root::kB1) = qt(kBSum, Root::kB2) = 1.0;
  qt(kBProduct, Root::kB1) = t[Root::kB2];
  qt(kBProduct, Root::kB2) = t[Root::kB1];
  qt(kC1, Root::kC1) = 1.0;
  qt(kWf, Root::kC1) = t[Root::kC1] / c.wf;
  qt(kWf, Root::kC2) = t[Root::kC2] / c.wf;
  qt(kDSum, Root::kD1) = qt(kDSum, Root::kD2) = 1.0;
  qt(kDProduct, Root::kD1) = t[Root::kD2];
  qt(kDProduct, Root::kD2) = t[Root::kD1];
  j.rightCols<FrameStateModel::kRoots>() = dq * qt;
  return j;
}

}  // namespace

State FrameStateModel::equilibrium(const Input& u) {
  State z = State::Zero();
  z[0] = z[2] = u[0];
  z[4] = z[6] = u[1];
  return z;
}

State FrameStateModel::step(const State& z, const Theta& theta, const Gains& gain, const Input& u, double dt_s,
                            FrameDiscretisation scheme) {
  const StateCoefficients c(theta, gain);
  if (scheme == FrameDiscretisation::kForwardEuler) return z + dt_s * derivative(z, c, u);
  const State k1 = derivative(z, c, u);
  const State k2 = derivative(z + (dt_s / 2.0) * k1, c, u);
  const State k3 = derivative(z + (dt_s / 2.0) * k2, c, u);
  const State k4 = derivative(z + dt_s * k3, c, u);
  return z + (dt_s / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
}

Input FrameStateModel::output(const State& z, const Theta& theta, const Gains& gain) {
  const StateCoefficients c(theta, gain);
  const double g_rate = c.wf * z[7];
  return {c.g11 * z[2] + c.h12 * (g_rate + c.p1 * z[6]), c.g21 * z[2] + c.h22 * (g_rate + c.p2 * z[6])};
}

// The chain rule through the stages, theta constant across them: with J(x) = [A | F_theta] at a stage
// point and K_i = d k_i / d[z, theta],
//   K1 = J(x), K2 = J(x2) (E + dt/2 K1), K3 = J(x3) (E + dt/2 K2), K4 = J(x4) (E + dt K3),
// E = [I 0] the state's rows of the identity, J(x) (E + c K) = J(x) E + c A(x) K; the step's
// Jacobian is E + dt/6 (K1 + 2 K2 + 2 K3 + K4). Forward Euler: E + dt J(x).
StepJacobian FrameStateModel::step_jacobian(const State& z, const Theta& theta, const Gains& gain, const Input& u,
                                            double dt_s, FrameDiscretisation scheme, State* stepped) {
  const StateCoefficients c(theta, gain);
  StepJacobian identity = StepJacobian::Zero();
  identity.leftCols<kStates>().setIdentity();
  if (scheme == FrameDiscretisation::kForwardEuler) {
    if (stepped != nullptr) *stepped = z + dt_s * derivative(z, c, u);
    return identity + dt_s * derivative_jacobian(z, theta, c, u);
  }
  const auto stage = [&](const State& x, const StepJacobian& previous, double fraction) {
    const StepJacobian j = derivative_jacobian(x, theta, c, u);
    return StepJacobian(j + fraction * dt_s * j.leftCols<kStates>() * previous);
  };
  const State k1 = derivative(z, c, u);
  const State x2 = z + (dt_s / 2.0) * k1;
  const State k2 = derivative(x2, c, u);
  const State x3 = z + (dt_s / 2.0) * k2;
  const State k3 = derivative(x3, c, u);
  const State x4 = z + dt_s * k3;
  if (stepped != nullptr) *stepped = z + (dt_s / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + derivative(x4, c, u));
  const StepJacobian j1 = derivative_jacobian(z, theta, c, u);
  const StepJacobian j2 = stage(x2, j1, 0.5);
  const StepJacobian j3 = stage(x3, j2, 0.5);
  const StepJacobian j4 = stage(x4, j3, 1.0);
  return identity + (dt_s / 6.0) * (j1 + 2.0 * j2 + 2.0 * j3 + j4);
}

// y1 = g11 f + h12 (wf g' + p1 g), y2 = g21 f + h22 (wf g' + p2 g), with g11 = k11 b1 b2 / (a1 a2 wf^2),
// h12 = k12 / (d1 d2 wf^2): d g11 / d r = e g11 / r for a root r that enters as r^e (e = +1 for b1,
// b2; -1 for a1, a2), d g11 / d ci = -2 ci g11 / wf^2, alike for g21, h12, h22.
FrameStateModel::OutputJacobian FrameStateModel::output_jacobian(const State& z, const Theta& theta,
                                                                 const Gains& gain) {
  const StateCoefficients c(theta, gain);
  const double wf2 = c.wf2;
  OutputJacobian j = OutputJacobian::Zero();
  const std::array<double, 2> g{c.g11, c.g21};
  const std::array<double, 2> h{c.h12, c.h22};
  const std::array<double, 2> p{c.p1, c.p2};
  const std::array<int, 2> p_root{Root::kP1, Root::kP2};
  const double g_rate = c.wf * z[7];
  for (int i = 0; i < 2; ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    j(row, 2) = g[i];
    j(row, 6) = h[i] * p[i];
    j(row, 7) = h[i] * c.wf;
    const double column2 = g_rate + p[i] * z[6];  // h's factor
    const auto root = [&](int r) { return kStates + r; };
    j(row, root(Root::kA1)) = -g[i] / theta[Root::kA1] * z[2];
    j(row, root(Root::kA2)) = -g[i] / theta[Root::kA2] * z[2];
    j(row, root(Root::kB1)) = g[i] / theta[Root::kB1] * z[2];
    j(row, root(Root::kB2)) = g[i] / theta[Root::kB2] * z[2];
    j(row, root(Root::kD1)) = -h[i] / theta[Root::kD1] * column2;
    j(row, root(Root::kD2)) = -h[i] / theta[Root::kD2] * column2;
    j(row, root(p_root[i])) = h[i] * z[6];
    for (const int ci : {Root::kC1, Root::kC2}) {
      const double share = -2.0 * theta[ci] / wf2;  // d log(wf^2) / d ci, negated
      j(row, root(ci)) = share * (g[i] * z[2] + h[i] * column2) + h[i] * theta[ci] / c.wf * z[7];
    }
  }
  return j;
}

Eigen::Matrix2d static_gain_matrix(const FramePlantModel& model) {
  Eigen::Matrix2d h0;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) h0(i, j) = model.static_gain(i, j);
  }
  return h0;
}

FrameStateModel::Linear FrameStateModel::linear(const Theta& theta, const Gains& gain) {
  const StateCoefficients c(theta, gain);
  const State zero = State::Zero();
  Linear out;
  out.a = derivative_jacobian(zero, theta, c, Input::Zero()).leftCols<kStates>();
  // d(dz/dt)/du: the inputs enter x_a's and x_d's accelerations, and m (f's input) directly.
  out.b.setZero();
  out.b(1, 0) = c.a_product / c.a_sum;
  out.b(3, 0) = c.wf * c.a_product / c.b_product;
  out.b(5, 1) = c.d_product / c.d_sum;
  out.c = output_jacobian(zero, theta, gain).leftCols<kStates>();
  return out;
}

}  // namespace rths
