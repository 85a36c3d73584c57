// The maRTHS rigid coupler (RigidCouplerSetup, node_physical/setups/; seed 000 Eqs.
// 21-30): strokes against the horizontal motion of the pins rotated here from the benchmark's pin
// coordinates (fcn_coupler_geometry.m) and against Eq. 28 as printed; the measured strokes back to
// the node against Eqs. 29-30; exact round trips; the linear coupler against the exact one to second
// order in the rotation; J^T forces by virtual work, their inverse, the strokes' velocities; the valid
// range; the config rules with the field named.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/config/config.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "experiment.pb.h"
#include "node_physical/plants/setup_transform.hpp"
#include "node_physical/setups/rigid_coupler_setup.hpp"
#include "support/alloc_counter.hpp"

namespace rths::test_rigid_coupler {
namespace {

using std::numbers::pi;
using Pair = std::array<double, 2>;

// The benchmark's pins relative to the node (fcn_coupler_geometry.m): actuator 0 (bottom) at (x, -y),
// actuator 1 (top) at (x, +y), m.
constexpr double kPinX = 0.26670;
constexpr double kPinY = 0.127;
const double kArm = std::hypot(kPinX, kPinY);                  // p
const double kAlphaDeg = std::atan2(kPinY, kPinX) * 180 / pi;  // alpha

// Exact: a few roundings on lengths under a metre (2.2e-16 x 0.3 m each).
constexpr double kExactM = 1e-15;
// Round trips through asin and the cosines: conditioning 1 / cos(theta) <= 600 at 89.9 degrees.
constexpr double kRoundTrip = 1e-12;

double radians(double deg) {
  return deg * pi / 180.0;
}

// Stroke i for the node at (x, theta), computed from the pins' coordinates: the rigid coupler turns
// pin i about the node by theta and carries it by x; the horizontal actuator's stroke is the pin's
// horizontal motion (Eqs. 21-22).
double pin_stroke(int i, double x, double theta) {
  const double px = kPinX;
  const double py = i == 0 ? -kPinY : kPinY;
  const double turned_x = std::cos(theta) * px - std::sin(theta) * py;
  return x + (turned_x - px);
}

RigidCouplerSetup benchmark_coupler(bool linear = false) {
  return {kArm, kAlphaDeg, linear};
}

Pair strokes(SetupTransform& s, double x, double theta) {
  Pair out{};
  EXPECT_TRUE(s.strokes(Pair{x, theta}, out)) << "x " << x << ", theta " << theta;
  return out;
}

Pair node(SetupTransform& s, const Pair& strokes_m) {
  Pair out{};
  EXPECT_TRUE(s.interface_displacements(strokes_m, out)) << strokes_m[0] << ", " << strokes_m[1];
  return out;
}

const std::array<double, 5> kXs{-0.004, 0.0, 1e-7, 0.0025, 0.03};
const std::array<double, 12> kThetas{-1.4, -0.5, -0.01, -1e-6, 0.0, 1e-9, 3e-4, 0.003, 0.2, 0.9, 1.2, 1.5};

TEST(RigidCoupler, TheBenchmarksArmAndAngleFromItsPinCoordinates) {
  // Seed 000's digest: p = 0.2953945 m (the paper's 295.39 mm), alpha = 25.4633 degrees (25.46).
  EXPECT_NEAR(kArm, 0.2953945, 0.5e-7);
  EXPECT_NEAR(kAlphaDeg, 25.4633, 0.5e-4);
  // p sin(alpha) is the pins' height: the linearised strokes x +- 126.98 theta (mm, rad) of the digest.
  EXPECT_NEAR(kArm * std::sin(radians(kAlphaDeg)), kPinY, 1e-16);
}

TEST(RigidCoupler, StrokesAreTheRotatedPinsHorizontalMotion) {
  RigidCouplerSetup coupler = benchmark_coupler();
  for (const double x : kXs) {
    for (const double theta : kThetas) {
      const Pair s = strokes(coupler, x, theta);
      EXPECT_NEAR(s[0], pin_stroke(0, x, theta), kExactM) << "x " << x << ", theta " << theta;
      EXPECT_NEAR(s[1], pin_stroke(1, x, theta), kExactM) << "x " << x << ", theta " << theta;
    }
  }
  // Counter-clockwise rotation extends the bottom actuator and retracts the top one.
  const Pair s = strokes(coupler, 0.0, 0.01);
  EXPECT_GT(s[0], 0.0);
  EXPECT_LT(s[1], 0.0);
}

// Eq. 28 as printed, in mm with p = 295.39 and alpha = 25.46 degrees, against the setup built with
// those numbers. The printed form loses p eps to cancellation (6e-14 mm); the setup's does not.
TEST(RigidCoupler, StrokesAreEq28AsPrinted) {
  constexpr double kArmMm = 295.39;
  constexpr double kAlpha = 25.46;
  RigidCouplerSetup coupler(kArmMm / 1000, kAlpha, false);
  for (const double x : kXs) {
    for (const double theta : kThetas) {
      const double x_mm = 1000 * x;
      const double eta1 = x_mm + kArmMm * (std::cos(theta - kAlpha * pi / 180) - std::cos(-kAlpha * pi / 180));
      const double eta2 = x_mm + kArmMm * (std::cos(theta + kAlpha * pi / 180) - std::cos(kAlpha * pi / 180));
      const Pair s = strokes(coupler, x, theta);
      EXPECT_NEAR(1000 * s[0], eta1, 1e-12) << "x " << x << ", theta " << theta;
      EXPECT_NEAR(1000 * s[1], eta2, 1e-12) << "x " << x << ", theta " << theta;
    }
  }
}

// Eqs. 29-30 (with the measured stroke of actuator 0 where Eq. 30 prints the target's), evaluated
// here as printed, and the node the pins were moved from.
TEST(RigidCoupler, MeasuredStrokesGiveTheNodeOfEqs29And30) {
  RigidCouplerSetup coupler = benchmark_coupler();
  const double alpha = radians(kAlphaDeg);
  for (const double x : kXs) {
    for (const double theta : kThetas) {
      const Pair measured{pin_stroke(0, x, theta), pin_stroke(1, x, theta)};
      const Pair back = node(coupler, measured);
      const double theta29 = std::asin((measured[0] - measured[1]) / (2 * kArm * std::sin(alpha)));
      const double x30 = measured[0] - kArm * (std::cos(theta29 - alpha) - std::cos(alpha));
      EXPECT_NEAR(back[1], theta29, kRoundTrip) << "x " << x << ", theta " << theta;
      EXPECT_NEAR(back[0], x30, kRoundTrip) << "x " << x << ", theta " << theta;
      EXPECT_NEAR(back[1], theta, kRoundTrip) << "x " << x << ", theta " << theta;
      EXPECT_NEAR(back[0], x, kRoundTrip) << "x " << x << ", theta " << theta;
    }
  }
}

// Both ways, over rotations up to 89.9 degrees and strokes whose difference reaches 0.999 of the
// valid range's 2 p sin(alpha); the linear coupler everywhere.
TEST(RigidCoupler, RoundTripsAreExactOverTheValidRange) {
  for (const bool linear : {false, true}) {
    RigidCouplerSetup coupler = benchmark_coupler(linear);
    for (const double x : kXs) {
      for (int tenths = -899; tenths <= 899; ++tenths) {
        const double deg = tenths / 10.0;
        const Pair back = node(coupler, strokes(coupler, x, radians(deg)));
        ASSERT_NEAR(back[0], x, kRoundTrip) << "linear " << linear << ", x " << x << ", " << deg << " deg";
        ASSERT_NEAR(back[1], radians(deg), kRoundTrip) << "linear " << linear << ", x " << x << ", " << deg << " deg";
      }
    }
    const double reach = 2 * kPinY;  // 2 p sin(alpha)
    for (const double mean : {-0.05, 0.0, 0.003}) {
      for (int thousandths = -999; thousandths <= 999; thousandths += 3) {
        const double fraction = thousandths / 1000.0;
        const Pair s{mean + fraction * reach / 2, mean - fraction * reach / 2};
        const Pair again = strokes(coupler, node(coupler, s)[0], node(coupler, s)[1]);
        ASSERT_NEAR(again[0], s[0], kRoundTrip) << "linear " << linear << ", fraction " << fraction;
        ASSERT_NEAR(again[1], s[1], kRoundTrip) << "linear " << linear << ", fraction " << fraction;
      }
    }
  }
}

// s_i - s_i,linear = p (cos(theta + alpha_i) - cos(alpha_i) + sin(alpha_i) theta), at most p theta^2 / 2
// (Taylor's remainder, |cos''| <= 1), and -p cos(alpha) theta^2 / 2 to within a relative |theta|
// tan(alpha) / 3 + theta^2 / 12 (the next terms). The linear inverse of exact strokes: x off by at most
// p theta^2 / 2, theta = asin of the linear one's, off by at most |theta|^3 / 6.
TEST(RigidCoupler, TheLinearCouplerIsTheExactOneToSecondOrderInTheRotation) {
  RigidCouplerSetup exact = benchmark_coupler();
  RigidCouplerSetup linear = benchmark_coupler(true);
  const double alpha = radians(kAlphaDeg);
  for (const double x : {0.0, 0.004}) {
    for (const double theta : {-0.1, -0.01, -1e-3, -1e-4, 1e-4, 1e-3, 0.01, 0.1}) {
      const Pair se = strokes(exact, x, theta);
      const Pair sl = strokes(linear, x, theta);
      for (int i = 0; i < 2; ++i) {
        const double diff = se[static_cast<std::size_t>(i)] - sl[static_cast<std::size_t>(i)];
        EXPECT_LE(std::abs(diff), kArm * theta * theta / 2 + kExactM) << "actuator " << i << ", theta " << theta;
        const double leading = -kArm * std::cos(alpha) * theta * theta / 2;
        const double bound = std::abs(theta) * std::tan(alpha) / 3 + theta * theta / 12 + 1e-7;
        EXPECT_NEAR(diff / leading, 1.0, bound) << "actuator " << i << ", theta " << theta;
      }
      const Pair back = node(linear, se);
      EXPECT_LE(std::abs(back[0] - x), kArm * theta * theta / 2 + kExactM) << "theta " << theta;
      EXPECT_LE(std::abs(back[1] - theta), std::pow(std::abs(theta), 3) / 6 + kExactM) << "theta " << theta;
    }
  }
}

// d strokes / d (x, theta) along du by central differences: truncation h^2 p / 6 ~ 5e-14 of the
// slope with h = 1e-6, rounding 2.2e-16 x 0.3 / 1e-6 ~ 7e-11; tolerance 1e-8.
Pair stroke_derivative(SetupTransform& s, const Pair& u, const Pair& du) {
  constexpr double kH = 1e-6;
  const Pair plus = strokes(s, u[0] + kH * du[0], u[1] + kH * du[1]);
  const Pair minus = strokes(s, u[0] - kH * du[0], u[1] - kH * du[1]);
  return {(plus[0] - minus[0]) / (2 * kH), (plus[1] - minus[1]) / (2 * kH)};
}

// Virtual work at the deformed geometry: the node's force and moment do on any (dx, dtheta) what the
// actuators' forces do on the strokes' change. At theta = 0, the moment is p sin(alpha) (f0 - f1).
TEST(RigidCoupler, InterfaceForcesAreTheActuatorsVirtualWork) {
  constexpr double kTolerance = 1e-8;
  const Pair f{3000.0, -1200.0};  // N, compression positive
  for (const bool linear : {false, true}) {
    RigidCouplerSetup coupler = benchmark_coupler(linear);
    for (const double theta : {-1.2, -0.05, 0.0, 0.002, 0.4, 1.3}) {
      const Pair u{0.003, theta};
      const Pair s = strokes(coupler, u[0], u[1]);
      Pair force{};
      ASSERT_TRUE(coupler.interface_forces(s, f, force));
      for (const Pair& du : {Pair{1, 0}, Pair{0, 1}, Pair{std::sqrt(0.5), std::sqrt(0.5)}}) {
        const Pair ds = stroke_derivative(coupler, u, du);
        const double node_work = force[0] * du[0] + force[1] * du[1];
        const double actuator_work = f[0] * ds[0] + f[1] * ds[1];
        EXPECT_NEAR(node_work, actuator_work, kTolerance * std::hypot(f[0], f[1]))
            << "linear " << linear << ", theta " << theta << ", du " << du[0] << ", " << du[1];
      }
      // The velocities: the same derivative along the velocity.
      const Pair v{0.01, -0.2};
      Pair rate{};
      ASSERT_TRUE(coupler.stroke_velocities(u, v, rate));
      const Pair along = stroke_derivative(coupler, u, v);
      EXPECT_NEAR(rate[0], along[0], kTolerance);
      EXPECT_NEAR(rate[1], along[1], kTolerance);
    }
    Pair force{};
    ASSERT_TRUE(coupler.interface_forces(Pair{0.0, 0.0}, f, force));
    EXPECT_NEAR(force[0], f[0] + f[1], 1e-12);
    EXPECT_NEAR(force[1], kPinY * (f[0] - f[1]), 1e-12);
  }
}

// actuator_forces() solves J^T f = F: back through interface_forces() to 1e-12 of the loads (the
// determinant 2 p cos(theta) sin(alpha) is 0.044 m at 80 degrees: a factor 6 of conditioning).
TEST(RigidCoupler, ActuatorForcesInvertTheInterfaceForces) {
  const Pair load{5000.0, -800.0};  // N and N m
  for (const bool linear : {false, true}) {
    RigidCouplerSetup coupler = benchmark_coupler(linear);
    for (const double theta : {-1.4, -0.3, 0.0, 1e-5, 0.7, 1.4}) {
      const Pair s = strokes(coupler, -0.002, theta);
      Pair f{};
      ASSERT_TRUE(coupler.actuator_forces(s, load, f));
      Pair again{};
      ASSERT_TRUE(coupler.interface_forces(s, f, again));
      EXPECT_NEAR(again[0], load[0], 1e-12 * std::abs(load[0]) * 10) << "linear " << linear << ", theta " << theta;
      EXPECT_NEAR(again[1], load[1], 1e-12 * std::abs(load[0]) * 10) << "linear " << linear << ", theta " << theta;
    }
  }
}

// The exact coupler refuses a rotation of 90 degrees or more (both rows of J become (1, -p cos
// alpha): translation and rotation cannot be told apart), strokes that differ by 2 p sin(alpha) or
// more, and anything not finite, leaving the outputs as they were; the linear one is valid for every
// finite input. A result that would overflow is refused too.
TEST(RigidCoupler, OutsideTheValidRangeIsRefusedAndTheOutputsAreKept) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kBig = std::numeric_limits<double>::max();
  const Pair kept{-7.0, -7.0};
  const auto refused = [&](auto call) {
    Pair out = kept;
    const bool ok = call(out);
    return !ok && out == kept;
  };
  RigidCouplerSetup exact = benchmark_coupler();
  RigidCouplerSetup linear = benchmark_coupler(true);
  for (const double theta : {pi / 2, -pi / 2, 2.0, -3.0, kNan, kInf}) {
    EXPECT_TRUE(refused([&](Pair& out) { return exact.strokes(Pair{0.0, theta}, out); })) << theta;
    EXPECT_TRUE(refused([&](Pair& out) {
      return exact.stroke_velocities(Pair{0.0, theta}, Pair{0.1, 0.1}, out);
    })) << theta;
  }
  Pair sink{};
  EXPECT_TRUE(exact.strokes(Pair{0.0, std::nextafter(pi / 2, 0.0)}, sink));
  EXPECT_TRUE(linear.strokes(Pair{0.0, 2.0}, sink));
  for (SetupTransform* s : {static_cast<SetupTransform*>(&exact), static_cast<SetupTransform*>(&linear)}) {
    EXPECT_TRUE(refused([&](Pair& out) { return s->strokes(Pair{kNan, 0.0}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->strokes(Pair{0.0, kNan}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->stroke_velocities(Pair{0.0, 0.1}, Pair{kNan, 0.0}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->interface_displacements(Pair{kNan, 0.0}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->interface_displacements(Pair{0.0, kInf}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->interface_forces(Pair{0.0, 0.0}, Pair{kNan, 1.0}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->actuator_forces(Pair{0.0, 0.0}, Pair{1.0, kInf}, out); }));
    // Finite inputs whose results overflow.
    EXPECT_TRUE(refused([&](Pair& out) { return s->interface_forces(Pair{0.0, 0.0}, Pair{kBig, kBig}, out); }));
    EXPECT_TRUE(refused([&](Pair& out) { return s->stroke_velocities(Pair{0.0, 0.1}, Pair{kBig, kBig}, out); }));
  }
  EXPECT_TRUE(refused([&](Pair& out) { return linear.strokes(Pair{kBig, kBig}, out); }));
  EXPECT_TRUE(refused([&](Pair& out) { return linear.interface_displacements(Pair{kBig, kBig}, out); }));
  // Strokes that differ by the reach 2 p sin(alpha) (theta = 90 degrees) or more.
  const double reach = 2 * kArm * std::sin(radians(kAlphaDeg));
  for (const double d : {reach, -reach, 1.5 * reach}) {
    EXPECT_TRUE(refused([&](Pair& out) { return exact.interface_displacements(Pair{d, 0.0}, out); })) << d;
    EXPECT_TRUE(refused([&](Pair& out) { return exact.interface_forces(Pair{d, 0.0}, Pair{1.0, 1.0}, out); })) << d;
    EXPECT_TRUE(refused([&](Pair& out) { return exact.actuator_forces(Pair{d, 0.0}, Pair{1.0, 1.0}, out); })) << d;
  }
  EXPECT_TRUE(linear.interface_displacements(Pair{1.5 * reach, 0.0}, sink));
  EXPECT_NE(exact.valid_range().find(fmt::format("2 p sin(alpha) = {:.9g} m", reach)), std::string::npos)
      << exact.valid_range();
}

TEST(RigidCoupler, TheStepCallsAllocateNothing) {
  RigidCouplerSetup coupler = benchmark_coupler();
  Pair s{};
  Pair u{};
  Pair f{};
  const std::uint64_t before = test::allocations_on_this_thread();
  for (int k = 0; k < 100; ++k) {
    const Pair node_motion{0.001 * k, 0.001 * k};
    EXPECT_TRUE(coupler.strokes(node_motion, s));
    EXPECT_TRUE(coupler.stroke_velocities(node_motion, Pair{0.01, 0.01}, u));
    EXPECT_TRUE(coupler.interface_displacements(s, u));
    EXPECT_TRUE(coupler.interface_forces(s, Pair{100.0, -50.0}, f));
    EXPECT_TRUE(coupler.actuator_forces(s, f, u));
  }
  EXPECT_EQ(test::allocations_on_this_thread(), before);
}

// ---- the config rules (common/config/setup_checks.hpp) --------------------------------------------------

// A one-site experiment of two channels with the given setup block; the one-line message it is
// refused with, or "loaded".
std::string config_error(const std::string& setup) {
  const std::string text = fmt::format(
      "structure {{ dofs: 2 mass_kg: [1000, 0, 0, 1000] stiffness_n_per_m: [2e5, -1e5, -1e5, 1e5] }}\n"
      "ground_motion {{ synthetic {{ }} }}\n"
      "site {{\n"
      "  name: \"rig\"\n"
      "  influence: [-1, 0, 0, -1]\n"
      "  channel {{ specimen {{ spring {{ stiffness_n_per_m: 1e4 }} }} }}\n"
      "  channel {{ specimen {{ spring {{ stiffness_n_per_m: 1e4 }} }} }}\n"
      "  {}\n"
      "}}\n",
      setup);
  try {
    (void)parse_experiment(text, "coupler.textproto");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "loaded";
}

// A site of two channels with a coupler of `arm_m` and `angle_deg`.
config::Site coupler_site(double arm_m, double angle_deg) {
  config::Site site;
  site.add_channel();
  site.add_channel();
  site.mutable_setup()->mutable_rigid_coupler()->set_arm_m(arm_m);
  site.mutable_setup()->mutable_rigid_coupler()->set_angle_deg(angle_deg);
  return site;
}

// The problems the coupler's registered rules find, each line's path from the setup's kind down.
std::vector<std::string> coupler_problems(double arm_m, double angle_deg) {
  const config::Site site = coupler_site(arm_m, angle_deg);
  Problems problems;
  check_component(site.setup(), "kind", ComponentContext{.site = &site}, Checker(problems));
  return problems.lines();
}

TEST(RigidCoupler, ConfigRulesNameTheFieldAndWhatWasExpected) {
  // The bounds of the angle are allowed, the benchmark's coupler too.
  EXPECT_TRUE(coupler_problems(0.29539, 25.4633).empty());
  EXPECT_TRUE(coupler_problems(0.29539, 1.0).empty());
  EXPECT_TRUE(coupler_problems(0.29539, 89.0).empty());
  for (const double arm :
       {0.0, -0.3, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const std::vector<std::string> problems = coupler_problems(arm, 25.4633);
    ASSERT_EQ(problems.size(), 1U) << arm;
    EXPECT_EQ(
        problems[0].rfind(
            fmt::format("rigid_coupler.arm_m: is {}, expected the distance from the node to each actuator's pin", arm),
            0),
        0U)
        << problems[0];
  }
  for (const double angle : {0.0, 0.999, 89.001, 90.0, -25.0, std::numeric_limits<double>::quiet_NaN()}) {
    const std::vector<std::string> problems = coupler_problems(0.29539, angle);
    ASSERT_EQ(problems.size(), 1U) << angle;
    EXPECT_EQ(problems[0].rfind(fmt::format("rigid_coupler.angle_deg: is {} degrees, expected 1 to 89", angle), 0), 0U)
        << problems[0];
  }
  // The factory refuses by the same rules, naming the member.
  try {
    (void)make_setup_transform(coupler_site(-0.3, 25.4633));
    ADD_FAILURE() << "a coupler of negative arm was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("setup.rigid_coupler.arm_m: is -0.3", 0), 0U) << e.what();
  }
  // Through the config loader: file, line and the field from the site down.
  EXPECT_EQ(config_error("setup { rigid_coupler { arm_m: 0.29539 angle_deg: 25.4633 } }"), "loaded");
  const std::string angle = config_error("setup { rigid_coupler { arm_m: 0.29539 angle_deg: 0.5 } }");
  EXPECT_EQ(
      angle.rfind("coupler.textproto:8: site[0].setup.rigid_coupler.angle_deg: is 0.5 degrees, expected 1 to 89", 0),
      0U)
      << angle;
  const std::string arm = config_error("setup { rigid_coupler { arm_m: 0 angle_deg: 25 } }");
  EXPECT_EQ(arm.rfind("coupler.textproto:8: site[0].setup.rigid_coupler.arm_m: is 0, expected the distance", 0), 0U)
      << arm;
  EXPECT_NE(
      config_error("setup { rigid_coupler { angle_deg: 25 } }").find("site[0].setup.rigid_coupler.arm_m: missing"),
      std::string::npos);
}

}  // namespace
}  // namespace rths::test_rigid_coupler
