// The maRTHS site's force estimate (seed 000 §2.7, §5.2 Eq. 31): the benchmark's 5-DOF frame computed
// independently (marths_frame.hpp) against its digest's numbers, and FrameForceModel on it: static
// condensation to the digest's reduced stiffness, the backward differences' start and their error on a
// sinusoid against the closed forms, the uncontrolled joint's moment, the real-time contract, and the
// config's rules.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config/frame_force_checks.hpp"
#include "common/dynamics/eigen_problems.hpp"
#include "smith_predictor/frame_model/frame_force_model.hpp"
#include "support/alloc_counter.hpp"
#include "support/marths_frame.hpp"

namespace rths::test_frame_force_model {
namespace {

using test::MarthsFrame;
using Complex = std::complex<double>;

constexpr double kDt = 1.0 / 1024.0;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

config::FrameForceModel to_config(const MarthsFrame& frame) {
  config::FrameForceModel m;
  m.set_dofs(MarthsFrame::kDofs);
  for (int i = 0; i < MarthsFrame::kDofs; ++i) {
    for (int j = 0; j < MarthsFrame::kDofs; ++j) {
      m.add_mass_kg(frame.mass(i, j));
      m.add_damping_ns_per_m(frame.damping(i, j));
      m.add_stiffness_n_per_m(frame.stiffness(i, j));
    }
  }
  return m;
}

// The frame's matrices times T = [I; -Koo^-1 Kot] (n x 2), computed here with an explicit inverse, and
// the condensed stiffness Ktt - Kto Koo^-1 Kot.
struct Condensed {
  Eigen::Matrix<double, 5, 2> mass_t, damping_t, stiffness_t;
  Eigen::Matrix2d reduced;
};

Condensed condensed(const MarthsFrame& frame) {
  const Eigen::Matrix3d koo = frame.stiffness.bottomRightCorner<3, 3>();
  const Eigen::Matrix<double, 3, 2> kot = frame.stiffness.bottomLeftCorner<3, 2>();
  Eigen::Matrix<double, 5, 2> t;
  t.topRows<2>().setIdentity();
  t.bottomRows<3>() = -koo.inverse() * kot;
  Condensed c;
  c.mass_t = frame.mass * t;
  c.damping_t = frame.damping * t;
  c.stiffness_t = frame.stiffness * t;
  c.reduced = frame.stiffness.topLeftCorner<2, 2>() -
              frame.stiffness.topRightCorner<2, 3>() * koo.inverse() * frame.stiffness.bottomLeftCorner<3, 2>();
  return c;
}

// ---------------------------------------------------------------------------------------------
// The package's frame, computed independently, against the digest's numbers.

TEST(MarthsFrame, MassesMatchTheDigestInKgAndKgSquareMetres) {
  const MarthsFrame f = test::marths_frame();
  // Digest (seed 000 §2.7): diag(8.4540 kg, 0.89044, 0.89044, 0.40905, 0.40905 kg m^2), to its digits.
  const std::array<double, 5> digest{8.4540, 0.89044, 0.89044, 0.40905, 0.40905};
  const std::array<double, 5> half_last_digit{5e-5, 5e-6, 5e-6, 5e-6, 5e-6};
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(f.mass(i, i), digest[static_cast<std::size_t>(i)], half_last_digit[static_cast<std::size_t>(i)]) << i;
  }
  EXPECT_EQ((f.mass - Eigen::Matrix<double, 5, 5>(f.mass.diagonal().asDiagonal())).norm(), 0.0);
}

TEST(MarthsFrame, StiffnessRowsMatchTheDigest) {
  const MarthsFrame f = test::marths_frame();
  const double a = 2.14202e6;
  // clang-format off
  const std::array<std::array<double, 5>, 5> digest{{
      {1.33595e7, a, a, a, a},
      {a, 1.35824e6, 2.21193e5, 0, 4.57929e5},
      {a, 2.21193e5, 1.35824e6, 4.57929e5, 0},
      {a, 0, 4.57929e5, 9.15858e5, 0},
      {a, 4.57929e5, 0, 0, 9.15858e5},
  }};
  // clang-format on
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) {
      const double d = digest[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      // Six significant digits: within half a unit of the sixth.
      EXPECT_NEAR(f.stiffness(i, j), d, d == 0 ? 0.0 : 5e-6 * std::abs(d)) << i << "," << j;
    }
  }
}

// Independent of how C was built: the eigenvalues of the state matrix [0 I; -M^-1 K, -M^-1 C] of a
// classically damped system are -zeta w +- i w sqrt(1 - zeta^2), so every mode's damping ratio is
// -Re(lambda) / |lambda|. The package rounds w to 0.01 rad/s in C only, which moves zeta by 0.05 x
// 0.005 / 357 = 7e-7 at most.
TEST(MarthsFrame, ModalDampingIsFivePercentOnEveryMode) {
  const MarthsFrame f = test::marths_frame();
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(10, 10);
  a.topRightCorner(5, 5).setIdentity();
  const Eigen::MatrixXd m_inv = Eigen::MatrixXd(f.mass).inverse();
  a.bottomLeftCorner(5, 5) = -m_inv * f.stiffness;
  a.bottomRightCorner(5, 5) = -m_inv * f.damping;
  const Eigen::VectorXcd eigenvalues = general_eigenvalues(a);
  for (int i = 0; i < 10; ++i) {
    const Complex lambda = eigenvalues(i);
    EXPECT_NEAR(-lambda.real() / std::abs(lambda), 0.05, 1e-5) << lambda;
  }
  EXPECT_LT((f.damping - f.damping.transpose()).cwiseAbs().maxCoeff(), 1e-9 * f.damping.cwiseAbs().maxCoeff());
}

// ---------------------------------------------------------------------------------------------
// FrameForceModel on the package's frame.

TEST(FrameForceModel, ConstantMotionGivesTheDigestsCondensedStiffnessFromTheFirstStep) {
  const MarthsFrame f = test::marths_frame();
  FrameForceModel model(to_config(f), 2);
  ASSERT_EQ(model.dofs(), 5U);
  ASSERT_EQ(model.channels(), 2U);
  // Digest: K_red = [[2.32412e6, 8.61232e5], [8.61232e5, 1.08595e6]] (N/m, N/rad; N m/m, N m/rad).
  const std::array<std::array<double, 2>, 2> digest{{{2.32412e6, 8.61232e5}, {8.61232e5, 1.08595e6}}};
  const Eigen::Matrix2d independent = condensed(f).reduced;
  for (int unit = 0; unit < 2; ++unit) {
    model.reset();
    std::array<double, 2> t{};
    t[static_cast<std::size_t>(unit)] = 1.0;
    std::array<double, 2> force{};
    for (int k = 0; k < 3; ++k) {  // at rest from the first sample: the same static force every step
      ASSERT_TRUE(model.step(t, force, kDt));
      for (std::size_t i = 0; i < 2; ++i) {
        const double d = digest[i][static_cast<std::size_t>(unit)];
        EXPECT_NEAR(force[i], d, 5e-6 * d) << i << "," << unit;
        EXPECT_NEAR(force[i], independent(static_cast<int>(i), unit), 1e-9 * d) << i << "," << unit;
      }
    }
  }
}

// f = (K T) t + (C T) t' + (M T) t'' with the differences written out: the model's start and the two
// steps after a jump.
TEST(FrameForceModel, BackwardDifferencesStartFromRestAndSettleTwoStepsAfterAJump) {
  const MarthsFrame f = test::marths_frame();
  const Condensed c = condensed(f);
  FrameForceModel model(to_config(f), 2);
  const auto expected = [&](const Eigen::Vector2d& t, const Eigen::Vector2d& v, const Eigen::Vector2d& a) {
    return Eigen::Matrix<double, 5, 1>(c.stiffness_t * t + c.damping_t * v + c.mass_t * a);
  };
  const auto check = [&](const Eigen::Matrix<double, 5, 1>& want, const std::array<double, 2>& force, int k) {
    const double scale = want.cwiseAbs().maxCoeff();
    for (int i = 0; i < 5; ++i) {
      EXPECT_NEAR(model.dof_forces()[static_cast<std::size_t>(i)], want(i), 1e-9 * scale)
          << "step " << k << " dof " << i;
    }
    EXPECT_EQ(force[0], model.dof_forces()[0]);
    EXPECT_EQ(force[1], model.dof_forces()[1]);
  };
  const Eigen::Vector2d zero = Eigen::Vector2d::Zero();
  const Eigen::Vector2d t0(1e-3, 2e-3);
  const Eigen::Vector2d t1(1.5e-3, 1e-3);
  std::array<double, 2> force{};
  // Step 0: velocity and acceleration 0 (Simulink's Derivative starts at 0).
  ASSERT_TRUE(model.step(std::array{t0(0), t0(1)}, force, kDt));
  check(expected(t0, zero, zero), force, 0);
  // Step 1: v = (t1 - t0) / dt, a = (v - 0) / dt.
  ASSERT_TRUE(model.step(std::array{t1(0), t1(1)}, force, kDt));
  const Eigen::Vector2d v1 = (t1 - t0) / kDt;
  check(expected(t1, v1, v1 / kDt), force, 1);
  // Held: step 2 has v = 0 and a = -v1 / dt, step 3 is static again.
  ASSERT_TRUE(model.step(std::array{t1(0), t1(1)}, force, kDt));
  check(expected(t1, zero, -v1 / kDt), force, 2);
  ASSERT_TRUE(model.step(std::array{t1(0), t1(1)}, force, kDt));
  check(expected(t1, zero, zero), force, 3);
  EXPECT_NEAR(force[0], (c.reduced * t1)(0), 1e-9 * std::abs((c.reduced * t1)(0)));
}

// A sinusoid t_k = Im(A exp(i w k dt)) from k = 0. From k = 2 on the differences are exact for the
// operator D = (1 - exp(-i w dt)) / dt: t'_k = Im(D A e^(i w t_k)), t''_k = Im(D^2 A e^(i w t_k)), so
//   f_k = Im((K T + D C T + D^2 M T) A e^(i w t_k))    (exact),
// against the continuous f(t) = Im((K T + i w C T - w^2 M T) A e^(i w t)): the error is a sinusoid of
// amplitude |(D - i w) (C T A)_i + (D^2 + w^2) (M T A)_i| per DOF, where |D - i w| <= w^2 dt / 2 and
// |D^2 + w^2| <= 2 w |D - i w| <= w^3 dt (first order in dt: the differences lag half a step).
TEST(FrameForceModel, ASinusoidGivesTheBackwardDifferenceClosedFormWithinItsDerivedError) {
  const MarthsFrame f = test::marths_frame();
  const Condensed c = condensed(f);
  for (const double hz : {2.29, 12.74, 40.0}) {
    FrameForceModel model(to_config(f), 2);
    const double w = 2 * M_PI * hz;
    const Eigen::Vector2cd amplitude(Complex(2e-3, 0.0), std::polar(4e-3, 0.6));  // 2 mm, 4 mrad
    const Complex d = (1.0 - std::exp(Complex(0, -w * kDt))) / kDt;
    const Complex iw(0, w);
    const Eigen::Matrix<Complex, 5, 1> exact =
        (c.stiffness_t.cast<Complex>() + d * c.damping_t.cast<Complex>() + d * d * c.mass_t.cast<Complex>()) *
        amplitude;
    const Eigen::Matrix<Complex, 5, 1> continuous =
        (c.stiffness_t.cast<Complex>() + iw * c.damping_t.cast<Complex>() - w * w * c.mass_t.cast<Complex>()) *
        amplitude;
    const Eigen::Matrix<Complex, 5, 1> ct_a = c.damping_t.cast<Complex>() * amplitude;
    const Eigen::Matrix<Complex, 5, 1> mt_a = c.mass_t.cast<Complex>() * amplitude;
    // The derived bounds on the operators' errors hold.
    ASSERT_LE(std::abs(d - iw), w * w * kDt / 2);
    ASSERT_LE(std::abs(d * d + w * w), w * w * w * kDt);

    std::array<double, 5> max_error{};
    std::array<double, 2> force{};
    const int steps = static_cast<int>(std::ceil(3.0 / hz / kDt));  // three periods
    for (int k = 0; k < steps; ++k) {
      const Complex phase = std::exp(Complex(0, w * k * kDt));
      const Eigen::Vector2cd now = amplitude * phase;
      ASSERT_TRUE(model.step(std::array{now(0).imag(), now(1).imag()}, force, kDt));
      if (k < 2) continue;
      for (int i = 0; i < 5; ++i) {
        const double got = model.dof_forces()[static_cast<std::size_t>(i)];
        EXPECT_NEAR(got, (exact(i) * phase).imag(), 1e-9 * std::abs(exact(i)) + 1e-9) << hz << " Hz, dof " << i;
        max_error[static_cast<std::size_t>(i)] =
            std::max(max_error[static_cast<std::size_t>(i)], std::abs(got - (continuous(i) * phase).imag()));
      }
    }
    for (int i = 0; i < 5; ++i) {
      const double predicted = std::abs((d - iw) * ct_a(i) + (d * d + w * w) * mt_a(i));
      const double bound = w * w * kDt / 2 * std::abs(ct_a(i)) + w * w * w * kDt * std::abs(mt_a(i));
      EXPECT_LE(predicted, bound) << hz << " Hz, dof " << i;
      // The error is the predicted sinusoid: its largest sample reaches within 1 % of its amplitude.
      EXPECT_LE(max_error[static_cast<std::size_t>(i)], predicted * (1 + 1e-6) + 1e-9) << hz << " Hz, dof " << i;
      EXPECT_GE(max_error[static_cast<std::size_t>(i)], 0.99 * predicted) << hz << " Hz, dof " << i;
    }
  }
}

// The uncontrolled joint's moment (the package's M29 = -f3, not fed back by a site of two channels):
// no stiffness part after the condensation, so nil under a held motion; under motion only its damping
// and inertia, small beside the controlled joint's moment f2 at the frequencies of the structure.
TEST(FrameForceModel, TheCondensedJointsCarryNoStaticForceAndTheUncontrolledMomentIsSmall) {
  const MarthsFrame f = test::marths_frame();
  FrameForceModel model(to_config(f), 2);
  std::array<double, 2> force{};
  ASSERT_TRUE(model.step(std::array{3e-3, -2e-3}, force, kDt));
  for (std::size_t i = 2; i < 5; ++i) {
    EXPECT_NEAR(model.dof_forces()[i], 0.0, 1e-9 * std::abs(force[0])) << i;
  }
  // Under a sinusoid of 2 mm and 4 mrad: the ratio of the amplitudes |f3| / |f2| over a period.
  const auto ratio = [&](double hz) {
    FrameForceModel m(to_config(f), 2);
    const double w = 2 * M_PI * hz;
    double f2 = 0.0;
    double f3 = 0.0;
    const int steps = static_cast<int>(std::ceil(2.0 / hz / kDt));
    for (int k = 0; k < steps; ++k) {
      const double tk = k * kDt;
      EXPECT_TRUE(m.step(std::array{2e-3 * std::sin(w * tk), 4e-3 * std::sin(w * tk + 0.6)}, force, kDt));
      if (k < 2) continue;
      f2 = std::max(f2, std::abs(m.dof_forces()[1]));
      f3 = std::max(f3, std::abs(m.dof_forces()[2]));
    }
    return f3 / f2;
  };
  EXPECT_LT(ratio(2.29), 1e-3);          // the reference structure's first mode
  EXPECT_LT(ratio(12.74), 1e-2);         // its second
  EXPECT_GT(ratio(12.74), ratio(2.29));  // grows with frequency: damping and inertia only
}

TEST(FrameForceModel, ANonFiniteInputOrForceLeavesTheForcesAndTheMotionUntouched) {
  const MarthsFrame f = test::marths_frame();
  FrameForceModel model(to_config(f), 2);
  FrameForceModel clean(to_config(f), 2);
  std::array<double, 2> force{};
  std::array<double, 2> clean_force{};
  ASSERT_TRUE(model.step(std::array{1e-3, 1e-3}, force, kDt));
  ASSERT_TRUE(clean.step(std::array{1e-3, 1e-3}, clean_force, kDt));
  const std::array<double, 2> held = force;
  for (const auto& bad : {std::array{kNaN, 1e-3}, std::array{1e-3, std::numeric_limits<double>::infinity()},
                          std::array{1e305, 1e-3}}) {  // the last: finite, but K t overflows
    EXPECT_FALSE(model.step(bad, force, kDt));
    EXPECT_EQ(force, held);
  }
  EXPECT_FALSE(model.step(std::array{2e-3, 1e-3}, force, 0.0));
  EXPECT_FALSE(model.step(std::array{2e-3, 1e-3}, force, kNaN));
  EXPECT_FALSE(model.step(std::array{2e-3}, force, kDt));
  std::array<double, 3> three{};
  EXPECT_FALSE(model.step(std::array{2e-3, 1e-3}, three, kDt));
  EXPECT_EQ(force, held);
  // The refused steps left no trace: the next good step is the clean model's.
  ASSERT_TRUE(model.step(std::array{2e-3, 1e-3}, force, kDt));
  ASSERT_TRUE(clean.step(std::array{2e-3, 1e-3}, clean_force, kDt));
  EXPECT_EQ(force, clean_force);
}

TEST(FrameForceModel, ResetStartsAgainFromRest) {
  const MarthsFrame f = test::marths_frame();
  FrameForceModel model(to_config(f), 2);
  FrameForceModel fresh(to_config(f), 2);
  std::array<double, 2> force{};
  std::array<double, 2> fresh_force{};
  ASSERT_TRUE(model.step(std::array{1e-3, 0.0}, force, kDt));
  ASSERT_TRUE(model.step(std::array{2e-3, 0.0}, force, kDt));
  model.reset();
  ASSERT_TRUE(model.step(std::array{3e-3, 1e-3}, force, kDt));
  ASSERT_TRUE(fresh.step(std::array{3e-3, 1e-3}, fresh_force, kDt));
  EXPECT_EQ(force, fresh_force);
}

TEST(FrameForceModel, StepAllocatesNothing) {
  FrameForceModel model(to_config(test::marths_frame()), 2);
  std::array<double, 2> force{};
  const auto before = test::allocations_on_this_thread();
  for (int k = 0; k < 100; ++k) {
    ASSERT_TRUE(model.step(std::array{1e-3 * std::sin(0.1 * k), 1e-3 * std::cos(0.1 * k)}, force, kDt));
  }
  EXPECT_FALSE(model.step(std::array{kNaN, 0.0}, force, kDt));
  EXPECT_EQ(test::allocations_on_this_thread(), before);
}

// Without condensed DOFs the model is the channels' own: f = K t + C t' + M t''.
TEST(FrameForceModel, AModelOfTheChannelsAloneIsUsedAsGiven) {
  config::FrameForceModel m;
  m.set_dofs(1);
  m.add_mass_kg(2.0);
  m.add_damping_ns_per_m(30.0);
  m.add_stiffness_n_per_m(1000.0);
  FrameForceModel model(m, 1);
  EXPECT_TRUE(model.condensation().empty());
  std::array<double, 1> force{};
  ASSERT_TRUE(model.step(std::array{0.0}, force, 0.01));
  ASSERT_TRUE(model.step(std::array{0.01}, force, 0.01));
  // v = 1 m/s, a = 100 m/s^2: 1000 x 0.01 + 30 x 1 + 2 x 100.
  EXPECT_NEAR(force[0], 10.0 + 30.0 + 200.0, 1e-9);
}

// ---------------------------------------------------------------------------------------------
// The config's rules: each names its field.

TEST(FrameForceConfig, EveryRuleNamesItsField) {
  const config::FrameForceModel good = to_config(test::marths_frame());
  EXPECT_FALSE(frame_force_model_problem(good, 2).has_value());
  EXPECT_FALSE(frame_force_model_problem(good, 5).has_value());  // every DOF a channel: no condensation

  const auto field_of = [](const config::FrameForceModel& m, std::size_t channels) {
    const auto p = frame_force_model_problem(m, channels);
    return p ? p->field : std::string("(accepted)");
  };
  config::FrameForceModel m = good;
  m.clear_dofs();
  EXPECT_EQ(field_of(m, 2), "dofs");
  EXPECT_EQ(field_of(good, 6), "dofs");  // fewer DOFs than channels
  EXPECT_EQ(field_of(good, 0), "");      // a site without channels

  m = good;
  m.mutable_mass_kg()->RemoveLast();
  EXPECT_EQ(field_of(m, 2), "mass_kg");
  m = good;
  m.add_damping_ns_per_m(0.0);
  EXPECT_EQ(field_of(m, 2), "damping_ns_per_m");
  m = good;
  m.set_damping_ns_per_m(7, kNaN);
  EXPECT_EQ(field_of(m, 2), "damping_ns_per_m[7]");
  m = good;
  m.set_stiffness_n_per_m(24, std::numeric_limits<double>::infinity());
  EXPECT_EQ(field_of(m, 2), "stiffness_n_per_m[24]");

  m = good;
  m.set_stiffness_n_per_m(1, m.stiffness_n_per_m(1) * 1.001);  // (0, 1) no longer (1, 0)
  const auto asymmetric = frame_force_model_problem(m, 2);
  ASSERT_TRUE(asymmetric.has_value());
  EXPECT_EQ(asymmetric->field, "stiffness_n_per_m");
  EXPECT_NE(asymmetric->what.find("(0, 1)"), std::string::npos) << asymmetric->what;
  EXPECT_NE(asymmetric->what.find("symmetric"), std::string::npos) << asymmetric->what;

  // The last base rotation without stiffness: Koo loses its rank, nothing restrains that joint.
  m = good;
  for (int j = 0; j < 5; ++j) {
    m.set_stiffness_n_per_m(4 * 5 + j, 0.0);
    m.set_stiffness_n_per_m(j * 5 + 4, 0.0);
  }
  const auto singular = frame_force_model_problem(m, 2);
  ASSERT_TRUE(singular.has_value());
  EXPECT_EQ(singular->field, "stiffness_n_per_m");
  EXPECT_NE(singular->what.find("singular"), std::string::npos) << singular->what;
  // The same stiffness is fine when that DOF is a channel (nothing condensed is singular then)...
  EXPECT_FALSE(frame_force_model_problem(m, 5).has_value());
  // ... and the model refuses to be built from it, naming the field.
  try {
    FrameForceModel model(m, 2);
    FAIL() << "a singular Koo was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("force_model.stiffness_n_per_m"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rths::test_frame_force_model
