// Which setup transformations can be built (docs/setup-transformations.md): positive lengths, angles
// in range, a layout that controls its DOFs, a matrix of full column rank, and a kind that drives as
// many DOFs as the site has channels.
#include "rths/common/setup_checks.hpp"

#include <Eigen/Core>
#include <Eigen/SVD>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string_view>
#include <utility>

namespace rths {
namespace {

// An angle typed as the bound itself (80 degrees, 10 degrees) must pass although its cosine is not
// exact.
constexpr double kAngleToleranceDeg = 1e-9;

double to_radians(double deg) {
  return deg * std::numbers::pi / 180.0;
}
double to_degrees(double rad) {
  return rad * 180.0 / std::numbers::pi;
}

std::optional<SetupProblem> length_problem(std::string field, double length_m) {
  if (std::isfinite(length_m) && length_m > 0) return std::nullopt;
  return SetupProblem{
      std::move(field),
      fmt::format("is {}, expected the actuator's pin-to-pin length at zero stroke (m, > 0)", length_m)};
}

std::optional<SetupProblem> angle_problem(std::string field, double angle_deg) {
  if (angle_deg >= -180.0 && angle_deg <= 180.0) return std::nullopt;
  return SetupProblem{std::move(field), fmt::format("is {}, expected an angle from -180 to 180 degrees", angle_deg)};
}

// An angle for a message: to the microdegree, without the 7e-15 of asin(sin(180 deg)).
double tidy_deg(double deg) {
  return std::round(deg * 1e6) / 1e6 + 0.0;
}

// The kind's problem with its field placed under the kind's member of the oneof.
std::optional<SetupProblem> within(std::string_view kind, std::optional<SetupProblem> problem) {
  if (problem) {
    problem->field = problem->field.empty() ? std::string(kind) : fmt::format("{}.{}", kind, problem->field);
  }
  return problem;
}

std::string channels_text(std::size_t dofs) {
  return fmt::format("{} channel{}", dofs, dofs == 1 ? "" : "s");
}

}  // namespace

std::optional<SetupProblem> setup_matrix_problem(std::size_t actuators, std::span<const double> t_row_major,
                                                 std::size_t dofs) {
  if (dofs == 0) return SetupProblem{"", "drives no interface DOF: the site has no channels"};
  if (actuators < dofs) {
    return SetupProblem{"actuators", fmt::format("is {}, expected at least one actuator per interface DOF (the site "
                                                 "has {}): fewer actuators cannot drive every DOF",
                                                 actuators, channels_text(dofs))};
  }
  if (t_row_major.size() != actuators * dofs) {
    return SetupProblem{"value", fmt::format("has {} entries, expected actuators x DOFs = {} x {} = {} (row-major: "
                                             "one row per actuator, one column per channel)",
                                             t_row_major.size(), actuators, dofs, actuators * dofs)};
  }
  for (std::size_t i = 0; i < t_row_major.size(); ++i) {
    if (!std::isfinite(t_row_major[i])) {
      return SetupProblem{fmt::format("value[{}]", i), fmt::format("is {}, expected a finite number", t_row_major[i])};
    }
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> t(t_row_major.data(), static_cast<Eigen::Index>(actuators),
                                     static_cast<Eigen::Index>(dofs));
  // Singular values, descending: the rank and how close T is to losing it, in one number.
  const Eigen::VectorXd sigma = Eigen::JacobiSVD<RowMajor>(t).singularValues();
  const double largest = sigma(0);
  const double smallest = sigma(sigma.size() - 1);
  if (largest > 0 && smallest > kSetupRankTolerance * largest) return std::nullopt;
  return SetupProblem{"value", fmt::format("is rank deficient: smallest singular value {:.6g}, largest {:.6g} (at "
                                           "most {:g} of it); expected full column rank: every DOF moves some "
                                           "actuator, and no two motions of the DOFs move the actuators alike",
                                           smallest, largest, kSetupRankTolerance)};
}

std::optional<SetupProblem> inclined_actuator_problem(double length_m, double angle_deg, double offset_m) {
  if (auto problem = length_problem("length_m", length_m)) return problem;
  if (auto problem = angle_problem("angle_deg", angle_deg)) return problem;
  // The angle between the actuator's axis and the DOF's line, 0..90 degrees.
  const double off_line_deg = to_degrees(std::acos(std::min(1.0, std::abs(std::cos(to_radians(angle_deg))))));
  const double steepest_deg = 90.0 - kSetupMinCrossingDeg;
  if (off_line_deg > steepest_deg + kAngleToleranceDeg) {
    return SetupProblem{
        "angle_deg",
        fmt::format("is {} degrees: the actuator lies {:.4g} degrees off the DOF's line; expected at most {:g} "
                    "(|angle_deg| <= {:g} or >= {:g}): steeper, an error of the stroke reading grows more than {:.2g} "
                    "times in the interface displacement, and at 90 degrees the DOF is not controlled",
                    angle_deg, tidy_deg(off_line_deg), steepest_deg, steepest_deg, 180.0 - steepest_deg,
                    1.0 / std::sin(to_radians(kSetupMinCrossingDeg)))};
  }
  if (!(std::abs(offset_m) < length_m)) {
    return SetupProblem{"offset_m", fmt::format("is {} m, expected a crosswise offset of the specimen point below "
                                                "length_m = {} m in magnitude (a larger one is a unit mistake)",
                                                offset_m, length_m)};
  }
  return std::nullopt;
}

std::optional<SetupProblem> two_actuators_problem(double length0_m, double angle0_deg, double length1_m,
                                                  double angle1_deg) {
  if (auto problem = length_problem("actuator[0].length_m", length0_m)) return problem;
  if (auto problem = angle_problem("actuator[0].angle_deg", angle0_deg)) return problem;
  if (auto problem = length_problem("actuator[1].length_m", length1_m)) return problem;
  if (auto problem = angle_problem("actuator[1].angle_deg", angle1_deg)) return problem;
  // The Jacobian's rows at the reference are the two unit axes: its determinant is the sine of the
  // angle between them.
  const double crossing_deg =
      to_degrees(std::asin(std::min(1.0, std::abs(std::sin(to_radians(angle1_deg - angle0_deg))))));
  if (crossing_deg + kAngleToleranceDeg >= kSetupMinCrossingDeg) return std::nullopt;
  return SetupProblem{"actuator[1].angle_deg",
                      fmt::format("is {} degrees: the axes of actuator 0 ({} degrees) and actuator 1 cross at {:.4g} "
                                  "degrees; expected {:g} degrees or more: closer to parallel, an error of a stroke "
                                  "reading grows more than {:.2g} times in the point's position, and parallel axes "
                                  "cannot tell its two DOFs apart",
                                  angle1_deg, angle0_deg, tidy_deg(crossing_deg), kSetupMinCrossingDeg,
                                  1.0 / std::sin(to_radians(kSetupMinCrossingDeg)))};
}

std::optional<SetupProblem> rigid_coupler_problem(double arm_m, double angle_deg) {
  if (!(std::isfinite(arm_m) && arm_m > 0)) {
    return SetupProblem{"arm_m",
                        fmt::format("is {}, expected the distance from the node to each actuator's pin (m, > 0; "
                                    "the benchmark's coupler: 0.29539)",
                                    arm_m)};
  }
  // At 0 degrees the two pins coincide in height and the rotation is not controlled; at 90 the
  // actuators pull on the node's vertical line and the translation is not.
  if (!(std::isfinite(angle_deg) && angle_deg >= 1.0 && angle_deg <= 89.0)) {
    return SetupProblem{"angle_deg", fmt::format("is {} degrees, expected 1 to 89: each pin's angle from the node's "
                                                 "horizontal (the benchmark's coupler: 25.4633)",
                                                 angle_deg)};
  }
  return std::nullopt;
}

namespace {

// The kind's own rules and the kind against the site's DOFs.
std::optional<SetupProblem> setup_kind_problem(const config::SetupTransform& setup, std::size_t dofs) {
  switch (setup.kind_case()) {
    case config::SetupTransform::kMatrix: {
      const auto& matrix = setup.matrix();
      if (!matrix.has_actuators()) {
        return SetupProblem{"matrix.actuators", fmt::format("missing; expected the number of actuators (at least the "
                                                            "site's {})",
                                                            channels_text(dofs))};
      }
      const std::span<const double> values(matrix.value().data(), static_cast<std::size_t>(matrix.value_size()));
      return within("matrix", setup_matrix_problem(matrix.actuators(), values, dofs));
    }
    case config::SetupTransform::kInclinedActuator: {
      if (dofs != 1) {
        return SetupProblem{"inclined_actuator",
                            fmt::format("drives one interface DOF, but the site has {}; expected a site of one "
                                        "channel, or a matrix",
                                        channels_text(dofs))};
      }
      const auto& actuator = setup.inclined_actuator();
      if (!actuator.has_length_m()) {
        return SetupProblem{"inclined_actuator.length_m",
                            "missing; expected the actuator's pin-to-pin length at zero stroke (m, > 0)"};
      }
      if (!actuator.has_angle_deg()) {
        return SetupProblem{"inclined_actuator.angle_deg",
                            "missing; expected the angle from the DOF's direction to the actuator's axis (degrees, "
                            "-180 to 180; 0: aligned)"};
      }
      return within("inclined_actuator",
                    inclined_actuator_problem(actuator.length_m(), actuator.angle_deg(), actuator.offset_m()));
    }
    case config::SetupTransform::kTwoActuators: {
      if (dofs != 2) {
        return SetupProblem{"two_actuators",
                            fmt::format("drives two interface DOFs (x and y of one point), but the site has {}; "
                                        "expected a site of two channels",
                                        channels_text(dofs))};
      }
      const auto& pair = setup.two_actuators();
      if (pair.actuator_size() != 2) {
        return SetupProblem{"two_actuators.actuator",
                            fmt::format("has {} {}, expected 2: actuator {{ length_m: ... angle_deg: ... }} for "
                                        "each of the two actuators",
                                        pair.actuator_size(), pair.actuator_size() == 1 ? "entry" : "entries")};
      }
      for (int i = 0; i < 2; ++i) {
        const auto& actuator = pair.actuator(i);
        if (!actuator.has_length_m()) {
          return SetupProblem{fmt::format("two_actuators.actuator[{}].length_m", i),
                              "missing; expected the actuator's pin-to-pin length at zero stroke (m, > 0)"};
        }
        if (!actuator.has_angle_deg()) {
          return SetupProblem{fmt::format("two_actuators.actuator[{}].angle_deg", i),
                              "missing; expected the angle from +x (channel 0's direction) to the actuator's axis "
                              "(degrees, -180 to 180)"};
        }
      }
      return within("two_actuators", two_actuators_problem(pair.actuator(0).length_m(), pair.actuator(0).angle_deg(),
                                                           pair.actuator(1).length_m(), pair.actuator(1).angle_deg()));
    }
    case config::SetupTransform::kRigidCoupler: {
      if (dofs != 2) {
        return SetupProblem{"rigid_coupler",
                            fmt::format("drives two interface DOFs (a node's translation and rotation), but the site "
                                        "has {}; expected a site of two channels",
                                        channels_text(dofs))};
      }
      const auto& coupler = setup.rigid_coupler();
      if (!coupler.has_arm_m()) {
        return SetupProblem{"rigid_coupler.arm_m",
                            "missing; expected the distance from the node to each actuator's pin (m, > 0)"};
      }
      if (!coupler.has_angle_deg()) {
        return SetupProblem{"rigid_coupler.angle_deg",
                            "missing; expected the angle of each pin from the node's horizontal (degrees, 1 to 89)"};
      }
      return within("rigid_coupler", rigid_coupler_problem(coupler.arm_m(), coupler.angle_deg()));
    }
    case config::SetupTransform::KIND_NOT_SET:
      break;
  }
  return SetupProblem{"",
                      "has no transformation; expected matrix { actuators: ... value: [...] }, inclined_actuator { "
                      "length_m: ... angle_deg: ... }, two_actuators { actuator { ... } actuator { ... } } or "
                      "rigid_coupler { arm_m: ... angle_deg: ... }"};
}

}  // namespace

std::size_t setup_actuators(const config::SetupTransform& setup) {
  switch (setup.kind_case()) {
    case config::SetupTransform::kMatrix:
      return setup.matrix().actuators();
    case config::SetupTransform::kInclinedActuator:
      return 1;
    case config::SetupTransform::kTwoActuators:
    case config::SetupTransform::kRigidCoupler:
      return 2;
    case config::SetupTransform::KIND_NOT_SET:
      break;
  }
  return 0;
}

std::size_t driven_channels(const config::Site& site) {
  return site.has_setup() ? setup_actuators(site.setup()) : static_cast<std::size_t>(site.channel_size());
}

std::optional<SetupProblem> setup_problem(const config::SetupTransform& setup, std::size_t dofs) {
  if (auto problem = setup_kind_problem(setup, dofs)) return problem;
  const std::size_t actuators = setup_actuators(setup);
  const auto limits = static_cast<std::size_t>(setup.stroke_limit_m_size());
  if (limits != 0 && limits != actuators) {
    return SetupProblem{"stroke_limit_m", fmt::format("has {} value{}, expected one per actuator ({})", limits,
                                                      limits == 1 ? "" : "s", actuators)};
  }
  for (std::size_t i = 0; i < limits; ++i) {
    const double limit = setup.stroke_limit_m(static_cast<int>(i));
    if (!(std::isfinite(limit) && limit > 0)) {
      return SetupProblem{fmt::format("stroke_limit_m[{}]", i),
                          fmt::format("is {}, expected actuator {}'s stroke limit (m, > 0)", limit, i)};
    }
  }
  return std::nullopt;
}

}  // namespace rths
