// Setup transformations (node_physical/setups/, docs/setup-transformations.md): the
// strokes against the distance between each actuator's ends computed here from their coordinates;
// the round trip interface -> strokes -> interface over the valid range; the interface forces against
// virtual work with a finite-difference Jacobian; the stroke velocities against finite differences
// of the strokes; least squares with redundant actuators; refusals outside the valid range; no
// allocation in the step's calls; the config rules (sizes, rank, degenerate geometry) with the field
// and the line named.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <numbers>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/config/config.hpp"
#include "common/config/setup_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "experiment.pb.h"
#include "node_physical/plants/setup_transform.hpp"
#include "node_physical/setups/inclined_actuator_setup.hpp"
#include "node_physical/setups/matrix_setup.hpp"
#include "node_physical/setups/two_actuators_setup.hpp"
#include "support/alloc_counter.hpp"
#include "support/test_support.hpp"

namespace rths::test_setup_transform {
namespace {

using Vec = std::vector<double>;

constexpr double kPi = std::numbers::pi;
// Round trip interface -> strokes -> interface, and inverse against forward: what "exact" means in
// double precision for rig-sized lengths (metres): a picometre, thousands of roundings.
constexpr double kRoundTripM = 1e-12;
// Forward strokes against the distance of the ends computed here: both round a few times on lengths
// of a few metres (2.2e-16 x 3 m per rounding).
constexpr double kDistanceM = 1e-14;
// Central differences with this step (m): truncation h^2 |s'''| / 6 ~ 1e-13 of the slope on metre
// lengths, rounding 2.2e-16 x L / h ~ 1e-9 of it; a wrong Jacobian (the reference geometry instead
// of the deformed one, a transpose, a sign) is off by 1e-2 or more at the displacements used.
constexpr double kStepM = 1e-6;
constexpr double kDerivativeTolerance = 1e-7;  // relative to |f| |du| or |v|
// A sweep keeps this far from the singular configuration (m): near it a rounding of a stroke grows
// by L / distance in the interface displacement, so the round trip's error is about 1e-16 L^2 /
// distance (3.5e-13 m at 1 mm measured, 2.3e-12 m at 0.1 mm).
constexpr double kSingularMarginM = 1e-3;

double radians(double deg) {
  return deg * kPi / 180.0;
}

double dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

double norm(std::span<const double> a) {
  return std::sqrt(dot(a, a));
}

// d strokes / du along w at u by central differences of strokes().
Vec stroke_derivative(SetupTransform& setup, const Vec& u, const Vec& w) {
  Vec plus(u);
  Vec minus(u);
  for (std::size_t i = 0; i < u.size(); ++i) {
    plus[i] += kStepM * w[i];
    minus[i] -= kStepM * w[i];
  }
  Vec s_plus(setup.actuators());
  Vec s_minus(setup.actuators());
  EXPECT_TRUE(setup.strokes(plus, s_plus));
  EXPECT_TRUE(setup.strokes(minus, s_minus));
  Vec slope(setup.actuators());
  for (std::size_t j = 0; j < slope.size(); ++j) slope[j] = (s_plus[j] - s_minus[j]) / (2.0 * kStepM);
  return slope;
}

// Unit directions in the interface DOFs: each DOF alone and all together.
std::vector<Vec> directions(std::size_t dofs) {
  std::vector<Vec> out;
  for (std::size_t i = 0; i < dofs; ++i) {
    Vec w(dofs, 0.0);
    w[i] = 1.0;
    out.push_back(w);
  }
  Vec all(dofs, 1.0 / std::sqrt(static_cast<double>(dofs)));
  out.push_back(all);
  return out;
}

// Virtual work at the deformed geometry of u: the interface forces do on any du what the load
// cells' forces do on the strokes' change ds = (d strokes / du) du.
void expect_virtual_work(SetupTransform& setup, const Vec& u, const Vec& actuator_forces_n) {
  Vec s(setup.actuators());
  Vec interface_forces(setup.dofs());
  ASSERT_TRUE(setup.strokes(u, s));
  ASSERT_TRUE(setup.interface_forces(s, actuator_forces_n, interface_forces));
  for (const Vec& du : directions(setup.dofs())) {
    const double interface_work = dot(interface_forces, du);
    const double actuator_work = dot(actuator_forces_n, stroke_derivative(setup, u, du));
    EXPECT_NEAR(interface_work, actuator_work, kDerivativeTolerance * norm(actuator_forces_n))
        << "u = " << fmt::format("{}", u) << ", du = " << fmt::format("{}", du);
  }
}

// The strokes' rates are the strokes' derivative along the velocity.
void expect_velocities(SetupTransform& setup, const Vec& u, const Vec& v) {
  Vec rate(setup.actuators());
  ASSERT_TRUE(setup.stroke_velocities(u, v, rate));
  const Vec expected = stroke_derivative(setup, u, v);
  for (std::size_t j = 0; j < rate.size(); ++j) {
    EXPECT_NEAR(rate[j], expected[j], kDerivativeTolerance * norm(v))
        << "actuator " << j << ", u = " << fmt::format("{}", u);
  }
}

// The larger of two errors, a NaN sticking (std::max would drop it, and a bound on the result pass).
void keep_worst(double& worst, double error) {
  worst = std::isnan(error) ? error : std::max(worst, error);
}

// Largest |u - interface_displacements(strokes(u))| over the points (every one must be in range).
double round_trip_error(SetupTransform& setup, const std::vector<Vec>& points) {
  double worst = 0.0;
  Vec s(setup.actuators());
  Vec back(setup.dofs());
  for (const Vec& u : points) {
    EXPECT_TRUE(setup.strokes(u, s)) << fmt::format("{}", u);
    EXPECT_TRUE(setup.interface_displacements(s, back)) << fmt::format("{}", u);
    for (std::size_t i = 0; i < u.size(); ++i) keep_worst(worst, std::abs(back[i] - u[i]));
  }
  return worst;
}

// ---- constant matrix -------------------------------------------------------------------------------

// A horizontal, a vertical and a 45-degree diagonal actuator on one point, linearised: each row is
// the actuator's unit axis (small displacements).
const Vec kThreeOnTwo{1.0, 0.0, 0.0, 1.0, std::numbers::sqrt2 / 2, std::numbers::sqrt2 / 2};

// T u with T row-major actuators x dofs, written out here.
Vec times(const Vec& t, std::size_t dofs, const Vec& u) {
  Vec out(t.size() / dofs, 0.0);
  for (std::size_t j = 0; j < out.size(); ++j) {
    for (std::size_t i = 0; i < dofs; ++i) out[j] += t[j * dofs + i] * u[i];
  }
  return out;
}

TEST(SetupMatrix, StrokesAreTheMatrixTimesTheDisplacementAndForcesItsTranspose) {
  MatrixSetup setup(3, kThreeOnTwo, 2);
  ASSERT_EQ(setup.dofs(), 2U);
  ASSERT_EQ(setup.actuators(), 3U);
  const Vec u{0.012, -0.034};
  Vec s(3);
  ASSERT_TRUE(setup.strokes(u, s));
  const Vec expected = times(kThreeOnTwo, 2, u);
  for (std::size_t j = 0; j < 3; ++j) EXPECT_NEAR(s[j], expected[j], 1e-16) << j;

  // T^T f, written out: each load cell's force on the DOFs its row moves.
  const Vec f{1200.0, -300.0, 800.0};
  Vec interface_forces(2);
  ASSERT_TRUE(setup.interface_forces(s, f, interface_forces));
  EXPECT_NEAR(interface_forces[0], 1200.0 + 800.0 * std::numbers::sqrt2 / 2, 1e-12);
  EXPECT_NEAR(interface_forces[1], -300.0 + 800.0 * std::numbers::sqrt2 / 2, 1e-12);
  expect_virtual_work(setup, u, f);
  expect_velocities(setup, u, {0.2, -0.05});
}

TEST(SetupMatrix, SquareRoundTripIsExactToRounding) {
  // A lever and a coupling: the actuators do not sit on the DOFs one by one.
  const Vec t{1.0, 0.5, 0.3, 1.2};
  MatrixSetup setup(2, t, 2);
  std::vector<Vec> points;
  for (int i = -25; i <= 25; ++i) {
    for (int j = -25; j <= 25; ++j) points.push_back({0.02 * i, 0.02 * j});  // +-0.5 m
  }
  const double worst = round_trip_error(setup, points);
  EXPECT_LT(worst, kRoundTripM);
  ::testing::Test::RecordProperty("max_round_trip_error_m", fmt::format("{:.3g}", worst));
}

TEST(SetupMatrix, RedundantActuatorsRecoverConsistentStrokesExactly) {
  MatrixSetup setup(3, kThreeOnTwo, 2);
  double worst = 0.0;
  Vec back(2);
  for (int i = -25; i <= 25; ++i) {
    for (int j = -25; j <= 25; ++j) {
      const Vec u{0.02 * i, 0.02 * j};
      // Consistent strokes (T u for some u), computed here: least squares finds that u.
      ASSERT_TRUE(setup.interface_displacements(times(kThreeOnTwo, 2, u), back));
      keep_worst(worst, std::abs(back[0] - u[0]));
      keep_worst(worst, std::abs(back[1] - u[1]));
    }
  }
  EXPECT_LT(worst, kRoundTripM);
  ::testing::Test::RecordProperty("max_round_trip_error_m", fmt::format("{:.3g}", worst));
}

TEST(SetupMatrix, InconsistentStrokesGiveTheLeastSquaresFit) {
  // Three readings that no u explains (sensor noise, a slack pin): the fit leaves a residual
  // orthogonal to every column of T, T^T (T u - s) = 0 (the normal equations).
  MatrixSetup setup(3, kThreeOnTwo, 2);
  const Vec s{0.010, 0.020, 0.025};  // consistent would be (0.010 + 0.020) / sqrt 2 = 0.0212
  Vec u(2);
  ASSERT_TRUE(setup.interface_displacements(s, u));
  const Vec fit = times(kThreeOnTwo, 2, u);
  for (std::size_t column = 0; column < 2; ++column) {
    double normal = 0.0;
    for (std::size_t j = 0; j < 3; ++j) normal += kThreeOnTwo[j * 2 + column] * (fit[j] - s[j]);
    EXPECT_NEAR(normal, 0.0, 1e-15) << "column " << column;
  }
  // And it is not the trivial answer of the first two actuators alone.
  EXPECT_GT(std::abs(u[0] - s[0]), 1e-4);
}

// ---- one inclined actuator -------------------------------------------------------------------------

struct Inclined {
  double length_m;
  double angle_deg;
  double offset_m;
};

// Aligned from either side, inclined up and down, from the far side, the steepest allowed, offsets.
const std::array<Inclined, 7> kInclined{{{1.0, 0.0, 0.0},
                                         {3.0, 180.0, 0.0},
                                         {2.0, 30.0, 0.0},
                                         {1.5, -60.0, 0.05},
                                         {2.5, 150.0, -0.1},
                                         {2.0, 80.0, 0.0},
                                         {2.0, -100.0, 0.3}}};

std::string name(const Inclined& c) {
  return fmt::format("L0 {} m, angle {} deg, offset {} m", c.length_m, c.angle_deg, c.offset_m);
}

// Along-DOF reach of the specimen end at the reference, L0 cos(theta): the foot of the perpendicular
// from the fixed end is at u = -a0.
double a0(const Inclined& c) {
  return c.length_m * std::cos(radians(c.angle_deg));
}

// Displacements over the valid range: the specimen end from kSingularMarginM short of the foot to
// two actuator lengths beyond the reference, on the reference's side.
std::vector<Vec> inclined_sweep(const Inclined& c, int points) {
  const double side = a0(c) > 0 ? 1.0 : -1.0;
  const double far = std::abs(a0(c)) + 2.0 * c.length_m;
  std::vector<Vec> out;
  for (int k = 0; k <= points; ++k) {
    const double x = kSingularMarginM + (far - kSingularMarginM) * k / points;  // distance past the foot
    out.push_back({side * x - a0(c)});
  }
  return out;
}

TEST(SetupInclinedActuator, StrokeIsTheDistanceBetweenTheEndsLessTheReferenceLength) {
  for (const Inclined& c : kInclined) {
    InclinedActuatorSetup setup(c.length_m, c.angle_deg, c.offset_m);
    for (const Vec& u : inclined_sweep(c, 200)) {
      // Fixed end at the origin; the specimen end moved by u along x, held e off across it.
      const double fixed_x = 0.0;
      const double fixed_y = 0.0;
      const double end_x = c.length_m * std::cos(radians(c.angle_deg)) + u[0];
      const double end_y = c.length_m * std::sin(radians(c.angle_deg)) + c.offset_m;
      const double expected = std::hypot(end_x - fixed_x, end_y - fixed_y) - c.length_m;
      Vec s(1);
      ASSERT_TRUE(setup.strokes(u, s)) << name(c) << ", u " << u[0];
      EXPECT_NEAR(s[0], expected, kDistanceM) << name(c) << ", u " << u[0];
    }
  }
}

TEST(SetupInclinedActuator, AlignedActuatorStrokesAreTheDisplacement) {
  // theta = 0: the stroke is u; theta = 180 (pushing from the other side): -u.
  InclinedActuatorSetup ahead(1.0, 0.0);
  InclinedActuatorSetup behind(1.0, 180.0);
  for (const double u : {-0.3, -0.01, 0.0, 0.02, 0.4}) {
    Vec s(1);
    ASSERT_TRUE(ahead.strokes(Vec{u}, s));
    EXPECT_NEAR(s[0], u, 1e-15);
    ASSERT_TRUE(behind.strokes(Vec{u}, s));
    EXPECT_NEAR(s[0], -u, 1e-15);
  }
}

TEST(SetupInclinedActuator, RoundTripIsExactOverTheValidRange) {
  double worst_of_all = 0.0;
  for (const Inclined& c : kInclined) {
    InclinedActuatorSetup setup(c.length_m, c.angle_deg, c.offset_m);
    const double worst = round_trip_error(setup, inclined_sweep(c, 20000));
    EXPECT_LT(worst, kRoundTripM) << name(c);
    ::testing::Test::RecordProperty(name(c), fmt::format("{:.3g}", worst));
    keep_worst(worst_of_all, worst);
  }
  ::testing::Test::RecordProperty("max_round_trip_error_m", fmt::format("{:.3g}", worst_of_all));
}

TEST(SetupInclinedActuator, ForceIsTheLoadCellsProjectionByVirtualWork) {
  for (const Inclined& c : kInclined) {
    InclinedActuatorSetup setup(c.length_m, c.angle_deg, c.offset_m);
    for (const Vec& u : inclined_sweep(c, 8)) {
      SCOPED_TRACE(name(c));
      expect_virtual_work(setup, u, {2500.0});
      expect_virtual_work(setup, u, {-700.0});
      expect_velocities(setup, u, {0.35});
    }
  }
}

TEST(SetupInclinedActuator, OutsideTheValidRangeIsRefusedAndTheOutputsAreKept) {
  const Inclined c{2.0, 30.0, 0.1};
  InclinedActuatorSetup setup(c.length_m, c.angle_deg, c.offset_m);
  const double h = c.length_m * std::sin(radians(c.angle_deg)) + c.offset_m;
  constexpr double kKept = 123.0;
  Vec out{kKept};
  // At or past the foot of the perpendicular (u = -a0), and the strokes that would put it there.
  for (const double u : {-a0(c), -a0(c) - 0.5}) {
    EXPECT_FALSE(setup.strokes(Vec{u}, out)) << u;
    EXPECT_FALSE(setup.stroke_velocities(Vec{u}, Vec{0.1}, out)) << u;
  }
  for (const double s : {h - c.length_m, h - c.length_m - 0.2, -c.length_m, -2.0 * c.length_m}) {
    EXPECT_FALSE(setup.interface_displacements(Vec{s}, out)) << s;
    EXPECT_FALSE(setup.interface_forces(Vec{s}, Vec{100.0}, out)) << s;
  }
  EXPECT_EQ(out[0], kKept);
  // Just inside, both ways work.
  EXPECT_TRUE(setup.strokes(Vec{-a0(c) + 1e-3}, out));
  EXPECT_TRUE(setup.interface_displacements(Vec{h - c.length_m + 1e-6}, out));
  // The message a stopping site gives names the bounds.
  EXPECT_NE(setup.valid_range().find(fmt::format("{:.9g}", -a0(c))), std::string::npos) << setup.valid_range();
}

// ---- two actuators on one point --------------------------------------------------------------------

struct Pair {
  double length0_m;
  double angle0_deg;
  double length1_m;
  double angle1_deg;
};

// Horizontal and vertical, skewed, from below on both sides, and crossing at the smallest angle
// allowed (10 degrees).
const std::array<Pair, 4> kPairs{
    {{2.0, 0.0, 1.5, 90.0}, {1.8, 20.0, 2.5, 135.0}, {1.2, -30.0, 1.6, -150.0}, {2.0, 0.0, 2.0, 10.0}}};

std::string name(const Pair& c) {
  return fmt::format("actuators ({} m, {} deg) and ({} m, {} deg)", c.length0_m, c.angle0_deg, c.length1_m,
                     c.angle1_deg);
}

// Fixed end of actuator i, the point's reference position at the origin: L0 back along the axis.
std::array<double, 2> fixed_end(const Pair& c, int i) {
  const double length = i == 0 ? c.length0_m : c.length1_m;
  const double angle = i == 0 ? c.angle0_deg : c.angle1_deg;
  return {-length * std::cos(radians(angle)), -length * std::sin(radians(angle))};
}

// Signed distance of p from the line through the fixed ends, positive on the reference's side.
double from_fixed_line(const Pair& c, const Vec& p) {
  const auto a = fixed_end(c, 0);
  const auto b = fixed_end(c, 1);
  const double bx = b[0] - a[0];
  const double by = b[1] - a[1];
  const auto cross = [&](double px, double py) { return (bx * (py - a[1]) - by * (px - a[0])) / std::hypot(bx, by); };
  const double reference = cross(0.0, 0.0);
  return (reference > 0 ? 1.0 : -1.0) * cross(p[0], p[1]);
}

// A +-1 m grid (2 cm pitch) on the reference's side, kSingularMarginM or more from the fixed ends'
// line.
std::vector<Vec> pair_sweep(const Pair& c) {
  std::vector<Vec> out;
  for (int i = -50; i <= 50; ++i) {
    for (int j = -50; j <= 50; ++j) {
      const Vec p{0.02 * i, 0.02 * j};
      if (from_fixed_line(c, p) >= kSingularMarginM) out.push_back(p);
    }
  }
  return out;
}

TEST(SetupTwoActuators, StrokesAreTheDistancesFromTheFixedEnds) {
  for (const Pair& c : kPairs) {
    TwoActuatorsSetup setup(c.length0_m, c.angle0_deg, c.length1_m, c.angle1_deg);
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(setup.fixed_end(i).x(), fixed_end(c, i)[0], 1e-15) << name(c);
      EXPECT_NEAR(setup.fixed_end(i).y(), fixed_end(c, i)[1], 1e-15) << name(c);
    }
    for (const Vec& p : pair_sweep(c)) {
      Vec s(2);
      ASSERT_TRUE(setup.strokes(p, s)) << name(c) << fmt::format(", u {}", p);
      for (int i = 0; i < 2; ++i) {
        const auto a = fixed_end(c, i);
        const double expected = std::hypot(p[0] - a[0], p[1] - a[1]) - (i == 0 ? c.length0_m : c.length1_m);
        EXPECT_NEAR(s[static_cast<std::size_t>(i)], expected, kDistanceM) << name(c) << fmt::format(", u {}", p);
      }
    }
  }
}

TEST(SetupTwoActuators, RoundTripIsExactOverTheValidRange) {
  double worst_of_all = 0.0;
  std::size_t points = 0;
  for (const Pair& c : kPairs) {
    TwoActuatorsSetup setup(c.length0_m, c.angle0_deg, c.length1_m, c.angle1_deg);
    const std::vector<Vec> sweep = pair_sweep(c);
    points += sweep.size();
    const double worst = round_trip_error(setup, sweep);
    EXPECT_LT(worst, kRoundTripM) << name(c);
    ::testing::Test::RecordProperty(name(c), fmt::format("{:.3g} m over {} points", worst, sweep.size()));
    keep_worst(worst_of_all, worst);
  }
  EXPECT_GT(points, 25000U);  // most of each +-1 m grid is on the valid side
  ::testing::Test::RecordProperty("max_round_trip_error_m", fmt::format("{:.3g}", worst_of_all));
  ::testing::Test::RecordProperty("points", static_cast<int>(points));
}

TEST(SetupTwoActuators, TheInverseKeepsTheReferencesBranch) {
  // The mirror image of a point across the fixed ends' line is as far from both fixed ends: the
  // same strokes. The inverse gives the point on the reference's side, and the mirror itself is out
  // of range.
  for (const Pair& c : kPairs) {
    TwoActuatorsSetup setup(c.length0_m, c.angle0_deg, c.length1_m, c.angle1_deg);
    const auto a = fixed_end(c, 0);
    const auto b = fixed_end(c, 1);
    const double ex = (b[0] - a[0]) / std::hypot(b[0] - a[0], b[1] - a[1]);
    const double ey = (b[1] - a[1]) / std::hypot(b[0] - a[0], b[1] - a[1]);
    for (const Vec& p : {Vec{0.0, 0.0}, Vec{0.3, -0.2}, Vec{-0.25, 0.15}}) {
      if (from_fixed_line(c, p) < kSingularMarginM) continue;
      const double along = (p[0] - a[0]) * ex + (p[1] - a[1]) * ey;
      const Vec mirror{2.0 * (a[0] + along * ex) - p[0], 2.0 * (a[1] + along * ey) - p[1]};
      for (int i = 0; i < 2; ++i) {
        const auto f = fixed_end(c, i);
        ASSERT_NEAR(std::hypot(mirror[0] - f[0], mirror[1] - f[1]), std::hypot(p[0] - f[0], p[1] - f[1]), 1e-12);
      }
      Vec s(2);
      Vec back(2);
      ASSERT_TRUE(setup.strokes(p, s));
      ASSERT_TRUE(setup.interface_displacements(s, back));
      EXPECT_NEAR(back[0], p[0], kRoundTripM) << name(c);
      EXPECT_NEAR(back[1], p[1], kRoundTripM) << name(c);
      EXPECT_FALSE(setup.strokes(mirror, s)) << name(c) << fmt::format(", mirror {}", mirror);
    }
  }
}

TEST(SetupTwoActuators, ForcesByVirtualWorkAndVelocitiesByFiniteDifferences) {
  for (const Pair& c : kPairs) {
    TwoActuatorsSetup setup(c.length0_m, c.angle0_deg, c.length1_m, c.angle1_deg);
    const std::vector<Vec> sweep = pair_sweep(c);
    // Every 997th point of the grid: the reference's neighbourhood and far corners alike.
    for (std::size_t k = 0; k < sweep.size(); k += 997) {
      SCOPED_TRACE(name(c) + fmt::format(", u {}", sweep[k]));
      expect_virtual_work(setup, sweep[k], {1800.0, -950.0});
      expect_velocities(setup, sweep[k], {0.3, -0.2});
    }
  }
}

TEST(SetupTwoActuators, StrokesWhoseCirclesDoNotMeetAreRefused) {
  const Pair c = kPairs[0];  // fixed ends (-2, 0) and (0, -1.5): 2.5 m apart
  TwoActuatorsSetup setup(c.length0_m, c.angle0_deg, c.length1_m, c.angle1_deg);
  constexpr double kKept = 123.0;
  Vec out{kKept, kKept};
  // Too short to reach each other (1.0 + 1.0 < 2.5), one inside the other (3.9 > 2.5 + 1.0), a
  // length of zero or less, and the touching circles of the singular configuration (2.0 + 0.5).
  for (const Vec& s : {Vec{-1.0, -0.5}, Vec{1.9, -0.5}, Vec{-2.0, 0.0}, Vec{0.0, -1.6}, Vec{0.0, -1.0}}) {
    EXPECT_FALSE(setup.interface_displacements(s, out)) << fmt::format("{}", s);
    EXPECT_FALSE(setup.interface_forces(s, Vec{1.0, 1.0}, out)) << fmt::format("{}", s);
  }
  EXPECT_EQ(out, (Vec{kKept, kKept}));
  EXPECT_NE(setup.valid_range().find("line through the fixed ends (-2, 0) m and (0, -1.5) m"), std::string::npos)
      << setup.valid_range();
}

// ---- every kind ------------------------------------------------------------------------------------

std::vector<std::unique_ptr<SetupTransform>> one_of_each() {
  std::vector<std::unique_ptr<SetupTransform>> out;
  out.push_back(std::make_unique<MatrixSetup>(3, kThreeOnTwo, 2));
  out.push_back(std::make_unique<InclinedActuatorSetup>(2.0, 30.0, 0.05));
  out.push_back(std::make_unique<TwoActuatorsSetup>(1.8, 20.0, 2.5, 135.0));
  return out;
}

TEST(SetupTransform, NonFiniteInputsAreRefusedAndTheOutputsAreKept) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kKept = 123.0;
  for (const auto& setup : one_of_each()) {
    const std::size_t dofs = setup->dofs();
    const std::size_t actuators = setup->actuators();
    for (const double bad : {kNan, kInf, -kInf}) {
      for (std::size_t at = 0; at < std::max(dofs, actuators); ++at) {
        Vec u(dofs, 0.01);
        Vec v(dofs, 0.1);
        Vec s(actuators, 0.001);
        Vec f(actuators, 100.0);
        Vec to_actuators(actuators, kKept);
        Vec to_interface(dofs, kKept);
        if (at < dofs) {
          u[at] = bad;
          EXPECT_FALSE(setup->strokes(u, to_actuators));
          EXPECT_FALSE(setup->stroke_velocities(u, v, to_actuators));
          u[at] = 0.01;
          v[at] = bad;
          EXPECT_FALSE(setup->stroke_velocities(u, v, to_actuators));
        }
        if (at < actuators) {
          s[at] = bad;
          EXPECT_FALSE(setup->interface_displacements(s, to_interface));
          EXPECT_FALSE(setup->interface_forces(s, f, to_interface));
          s[at] = 0.001;
          f[at] = bad;
          EXPECT_FALSE(setup->interface_forces(s, f, to_interface));
          s[at] = bad;
          EXPECT_FALSE(setup->actuator_forces(s, Vec(dofs, 100.0), to_actuators));
        }
        EXPECT_EQ(to_actuators, Vec(actuators, kKept)) << setup->valid_range();
        EXPECT_EQ(to_interface, Vec(dofs, kKept)) << setup->valid_range();
      }
    }
  }
}

// The emulated rig's direction: the load-cell forces of interface forces, mapped back, are those
// interface forces; with redundant actuators the split is the least-norm one, (T+)^T F, which lies in
// T's column space (no part of it is the actuators fighting each other).
TEST(SetupTransform, ActuatorForcesAreTheLeastNormInverseOfTheInterfaceForces) {
  for (const auto& setup : one_of_each()) {
    const Vec u(setup->dofs(), 0.015);
    Vec s(setup->actuators());
    ASSERT_TRUE(setup->strokes(u, s));
    Vec wanted(setup->dofs());
    for (std::size_t i = 0; i < wanted.size(); ++i) wanted[i] = 1500.0 - 700.0 * static_cast<double>(i);
    Vec f(setup->actuators());
    Vec back(setup->dofs());
    ASSERT_TRUE(setup->actuator_forces(s, wanted, f));
    ASSERT_TRUE(setup->interface_forces(s, f, back));
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      EXPECT_NEAR(back[i], wanted[i], 1e-12 * norm(wanted)) << setup->valid_range();
    }
  }
  // The redundant matrix: f = T y for some y, i.e. orthogonal to T's left null space, here the
  // direction n with T^T n = 0.
  MatrixSetup three(3, kThreeOnTwo, 2);
  const Vec n{1.0, 1.0, -std::numbers::sqrt2};  // x + y - sqrt2 (x + y) / sqrt2 = 0 on both DOFs
  Vec f(3);
  const Vec s(3, 0.0);
  ASSERT_TRUE(three.actuator_forces(s, Vec{1500.0, 800.0}, f));
  EXPECT_NEAR(dot(f, n), 0.0, 1e-12 * norm(f));
}

TEST(SetupTransform, TheStepCallsAllocateNothing) {
  for (const auto& setup : one_of_each()) {
    Vec u(setup->dofs(), 0.01);
    Vec v(setup->dofs(), 0.1);
    Vec s(setup->actuators());
    Vec rate(setup->actuators());
    Vec f(setup->actuators(), 100.0);
    Vec back(setup->dofs());
    Vec forces(setup->dofs());
    const std::uint64_t before = test::allocations_on_this_thread();
    bool ok = true;
    for (int step = 0; step < 100; ++step) {
      ok = setup->strokes(u, s) && ok;
      ok = setup->stroke_velocities(u, v, rate) && ok;
      ok = setup->interface_displacements(s, back) && ok;
      ok = setup->interface_forces(s, f, forces) && ok;
      ok = setup->actuator_forces(s, forces, rate) && ok;
    }
    EXPECT_EQ(test::allocations_on_this_thread() - before, 0U) << setup->valid_range();
    EXPECT_TRUE(ok);
  }
}

// ---- from the config -------------------------------------------------------------------------------

constexpr const char* kSource = "setup.textproto";

// A small experiment whose one site has `channels` channels and the given setup block.
std::string experiment_with(int channels, const std::string& setup) {
  std::string site_channels;
  std::string influence;
  for (int c = 0; c < channels; ++c) {
    site_channels += "  channel { specimen { spring { stiffness_n_per_m: 1e4 } } }\n";
    for (int d = 0; d < 2; ++d) influence += fmt::format("{}{}", influence.empty() ? "" : ", ", d == c ? -1 : 0);
  }
  return fmt::format(
      "structure {{ dofs: 2 mass_kg: [1000, 0, 0, 1000] stiffness_n_per_m: [2e5, -1e5, -1e5, 1e5] }}\n"
      "ground_motion {{ synthetic {{ }} }}\n"
      "site {{\n"
      "  name: \"rig\"\n"
      "  influence: [{}]\n"
      "{}"
      "  {}\n"
      "}}\n",
      influence, site_channels, setup);
}

// The one-line message the config is refused with; "loaded" when it loads.
std::string config_error(int channels, const std::string& setup) {
  try {
    (void)parse_experiment(experiment_with(channels, setup), kSource);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "loaded";
}

// "setup.textproto:<line of the setup block>: " + the rest.
std::string at_setup_line(int channels, const std::string& rest) {
  const std::string text = experiment_with(channels, "setup {");
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find("setup {")), '\n');
  return fmt::format("{}:{}: {}", kSource, line, rest);
}

TEST(SetupConfig, EachKindLoadsAndBuilds) {
  struct Case {
    int channels;
    std::string setup;
    std::size_t actuators;
  };
  for (const Case& c : {Case{2, "setup { matrix { actuators: 3 value: [1, 0, 0, 1, 0.7071, 0.7071] } }", 3},
                        Case{1, "setup { inclined_actuator { length_m: 2 angle_deg: 30 } }", 1},
                        Case{2,
                             "setup { two_actuators { actuator { length_m: 2 angle_deg: 0 } actuator { length_m: "
                             "1.5 angle_deg: 90 } } }",
                             2}}) {
    const config::Experiment experiment = parse_experiment(experiment_with(c.channels, c.setup), kSource);
    const auto setup = make_setup_transform(experiment.site(0));
    EXPECT_EQ(setup->dofs(), static_cast<std::size_t>(c.channels)) << c.setup;
    EXPECT_EQ(setup->actuators(), c.actuators) << c.setup;
  }
}

TEST(SetupConfig, SizesThatDoNotFitTheSiteAreRefusedNamingTheFieldAndLine) {
  EXPECT_EQ(config_error(2, "setup { matrix { actuators: 2 value: [1, 0, 1] } }"),
            at_setup_line(2,
                          "site[0].setup.matrix.value: has 3 entries, expected actuators x DOFs = 2 x 2 = 4 "
                          "(row-major: one row per actuator, one column per channel)"));
  EXPECT_EQ(config_error(2, "setup { matrix { actuators: 1 value: [1, 0] } }"),
            at_setup_line(2,
                          "site[0].setup.matrix.actuators: is 1, expected at least one actuator per interface "
                          "DOF (the site has 2 channels): fewer actuators cannot drive every DOF"));
  EXPECT_EQ(config_error(2, "setup { inclined_actuator { length_m: 2 angle_deg: 30 } }"),
            at_setup_line(2,
                          "site[0].setup.inclined_actuator: drives one interface DOF, but the site has 2 channels; "
                          "expected a site of one channel, or a matrix"));
  EXPECT_EQ(config_error(1,
                         "setup { two_actuators { actuator { length_m: 2 angle_deg: 0 } actuator { length_m: 1.5 "
                         "angle_deg: 90 } } }"),
            at_setup_line(1,
                          "site[0].setup.two_actuators: drives two interface DOFs (x and y of one point), but the "
                          "site has 1 channel; expected a site of two channels"));
  EXPECT_EQ(config_error(2, "setup { two_actuators { actuator { length_m: 2 angle_deg: 0 } } }"),
            at_setup_line(2,
                          "site[0].setup.two_actuators.actuator: has 1 entry, expected 2: actuator { length_m: "
                          "... angle_deg: ... } for each of the two actuators"));
  EXPECT_NE(config_error(2, "setup { }").find("site[0].setup: has no transformation; expected matrix"),
            std::string::npos);
}

TEST(SetupConfig, StrokeLimitsAreOnePerActuatorAndPositive) {
  EXPECT_EQ(config_error(2,
                         "setup { matrix { actuators: 3 value: [1, 0, 0, 1, 0.7071, 0.7071] } stroke_limit_m: [0.1, "
                         "0.1, 0.2] }"),
            "loaded");
  EXPECT_EQ(config_error(2,
                         "setup { matrix { actuators: 3 value: [1, 0, 0, 1, 0.7071, 0.7071] } stroke_limit_m: [0.1] "
                         "}"),
            at_setup_line(2, "site[0].setup.stroke_limit_m: has 1 value, expected one per actuator (3)"));
  EXPECT_EQ(config_error(1, "setup { inclined_actuator { length_m: 2 angle_deg: 30 } stroke_limit_m: [-0.1] }"),
            at_setup_line(1, "site[0].setup.stroke_limit_m[0]: is -0.1, expected actuator 0's stroke limit (m, > 0)"));
}

TEST(SetupConfig, ARankDeficientMatrixIsRefused) {
  // The second actuator moves exactly as twice the first: u = (1, -0.5) moves neither.
  const std::string e = config_error(2, "setup { matrix { actuators: 2 value: [1, 2, 2, 4] } }");
  EXPECT_NE(e.find(at_setup_line(2, "site[0].setup.matrix.value: is rank deficient: smallest singular value")),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("expected full column rank"), std::string::npos) << e;
  // Three actuators, one column of zeros: the second DOF moves no actuator.
  EXPECT_NE(config_error(2, "setup { matrix { actuators: 3 value: [1, 0, 2, 0, 3, 0] } }").find("is rank deficient"),
            std::string::npos);
  EXPECT_EQ(config_error(2, "setup { matrix { actuators: 2 value: [1, 2, 2, 4.001] } }"), "loaded");
}

TEST(SetupConfig, DegenerateGeometryIsRefused) {
  const auto rejects = [](int channels, const std::string& setup, const std::string& expected) {
    const std::string e = config_error(channels, setup);
    EXPECT_NE(e.find(expected), std::string::npos) << setup << "\n  gave: " << e;
  };
  // Perpendicular to its DOF, or steeper than 80 degrees from it.
  rejects(1, "setup { inclined_actuator { length_m: 2 angle_deg: 90 } }",
          "site[0].setup.inclined_actuator.angle_deg: is 90 degrees: the actuator lies 90 degrees off the DOF's "
          "line; expected at most 80 (|angle_deg| <= 80 or >= 100)");
  rejects(1, "setup { inclined_actuator { length_m: 2 angle_deg: -95 } }", "lies 85 degrees off");
  rejects(1, "setup { inclined_actuator { length_m: 0 angle_deg: 30 } }",
          "site[0].setup.inclined_actuator.length_m: is 0, expected the actuator's pin-to-pin length at zero stroke "
          "(m, > 0)");
  rejects(1, "setup { inclined_actuator { length_m: 2 angle_deg: 200 } }", "expected an angle from -180 to 180");
  rejects(1, "setup { inclined_actuator { length_m: 2 angle_deg: 10 offset_m: 2 } }",
          "site[0].setup.inclined_actuator.offset_m: is 2 m");
  rejects(1, "setup { inclined_actuator { length_m: 2 } }", "site[0].setup.inclined_actuator.angle_deg: missing");
  // Parallel axes, from the same side or opposite sides, and nearly parallel.
  for (const char* angle : {"0", "180", "-175"}) {
    rejects(2,
            fmt::format("setup {{ two_actuators {{ actuator {{ length_m: 2 angle_deg: 0 }} actuator {{ length_m: 1 "
                        "angle_deg: {} }} }} }}",
                        angle),
            "site[0].setup.two_actuators.actuator[1].angle_deg: is " + std::string(angle) +
                " degrees: the axes of actuator 0 (0 degrees) and actuator 1 cross at");
  }
  rejects(2,
          "setup { two_actuators { actuator { length_m: -1 angle_deg: 0 } actuator { length_m: 1 angle_deg: 90 } } }",
          "site[0].setup.two_actuators.actuator[0].length_m: is -1");
  // The bounds themselves are allowed.
  EXPECT_EQ(config_error(1, "setup { inclined_actuator { length_m: 2 angle_deg: 80 } }"), "loaded");
  EXPECT_EQ(config_error(1, "setup { inclined_actuator { length_m: 2 angle_deg: -100 } }"), "loaded");
  EXPECT_EQ(config_error(2,
                         "setup { two_actuators { actuator { length_m: 2 angle_deg: 0 } actuator { length_m: 2 "
                         "angle_deg: 10 } } }"),
            "loaded");
}

// A site of `channels` channels (nothing else) with `setup` as its setup.
config::Site site_with(std::size_t channels, const config::SetupTransform& setup) {
  config::Site site;
  for (std::size_t c = 0; c < channels; ++c) site.add_channel();
  *site.mutable_setup() = setup;
  return site;
}

// The factory refuses a setup by the rules the config validator applies (the kind's registered ones,
// the stroke limits), naming the field below `setup`; the transformations' constructors keep only the
// guards of their memory (tests/node_physical/unit/test_setup_contract.cpp).
TEST(SetupConfig, TheFactoryRefusesByTheValidatorsRules) {
  config::SetupTransform setup;
  setup.mutable_matrix()->set_actuators(2);
  for (const double v : {1.0, 2.0, 2.0, 4.0}) setup.mutable_matrix()->add_value(v);
  try {
    (void)make_setup_transform(site_with(2, setup));
    ADD_FAILURE() << "a rank-deficient matrix was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("setup.matrix.value: is rank deficient", 0), 0U) << e.what();
  }
  config::SetupTransform pair;
  for (const double angle : {30.0, 35.0}) {
    config::PlanarActuator& actuator = *pair.mutable_two_actuators()->add_actuator();
    actuator.set_length_m(angle == 30.0 ? 2.0 : 1.0);
    actuator.set_angle_deg(angle);
  }
  try {
    (void)make_setup_transform(site_with(2, pair));
    ADD_FAILURE() << "actuators crossing at 5 degrees were built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("setup.two_actuators.actuator[1].angle_deg: is 35 degrees"), std::string::npos)
        << e.what();
  }
  // The kind against the site's DOFs.
  config::SetupTransform inclined;
  inclined.mutable_inclined_actuator()->set_length_m(2.0);
  inclined.mutable_inclined_actuator()->set_angle_deg(30.0);
  EXPECT_THROW((void)make_setup_transform(site_with(2, inclined)), std::invalid_argument);
  EXPECT_EQ(make_setup_transform(site_with(1, inclined))->actuators(), 1U);
}

TEST(SetupConfig, TheDocumentsExamplesLoad) {
  // Every `setup { ... }` block of docs/setup-transformations.md is a setup the rules accept, for
  // the site the block's comment line above names ("# a site of N channels").
  std::ifstream in(test::source_dir() / "docs" / "setup-transformations.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  std::size_t examples = 0;
  for (std::size_t at = doc.find("```textproto\n"); at != std::string::npos; at = doc.find("```textproto\n", at)) {
    at += std::string_view("```textproto\n").size();
    const std::size_t end = doc.find("```", at);
    ASSERT_NE(end, std::string::npos);
    const std::string block = doc.substr(at, end - at);
    const std::size_t channels_at = block.find("a site of ");
    ASSERT_NE(channels_at, std::string::npos) << block;
    const std::size_t channels = std::stoul(block.substr(channels_at + std::string_view("a site of ").size()));
    config::Site site;
    parse_text_message(block, "docs/setup-transformations.md", site);
    ASSERT_TRUE(site.has_setup()) << block;
    for (std::size_t c = 0; c < channels; ++c) site.add_channel();
    Problems problems;
    EXPECT_TRUE(check_setup(site.setup(), ComponentContext{.site = &site}, Checker(problems, "setup")))
        << block << "\n  " << problems.lines().front();
    EXPECT_EQ(make_setup_transform(site)->dofs(), channels);
    ++examples;
  }
  EXPECT_EQ(examples, 3U);  // one per kind
}

}  // namespace
}  // namespace rths::test_setup_transform
