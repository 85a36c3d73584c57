// Two horizontal actuators on a rigid coupler bolted to one node (config RigidCoupler): the maRTHS
// benchmark's transfer system (seed 000 Eqs. 21-30).
#include "node_physical/setups/rigid_coupler_setup.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <memory>
#include <numbers>

#include "common/config/setup_checks.hpp"
#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/setups/setup_kind.hpp"

namespace rths {

using setup_kind::to_radians;
using setup_kind::write_if_finite;

RigidCouplerSetup::RigidCouplerSetup(double arm_m, double angle_deg, bool linear)
    : SetupTransform(2, 2),
      arm_m_(arm_m),
      alpha_rad_(to_radians(angle_deg)),
      linear_(linear),
      lever_m_(arm_m_ * std::sin(alpha_rad_)) {}

void RigidCouplerSetup::slopes(double theta_rad, double& slope0, double& slope1) const {
  if (linear_) {
    slope0 = lever_m_;
    slope1 = -lever_m_;
    return;
  }
  slope0 = -arm_m_ * std::sin(theta_rad - alpha_rad_);
  slope1 = -arm_m_ * std::sin(theta_rad + alpha_rad_);
}

bool RigidCouplerSetup::strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) {
  const double x = interface_displacement_m[0];
  const double theta = interface_displacement_m[1];
  if (!std::isfinite(x) || !std::isfinite(theta)) return false;
  if (linear_) return write_if_finite(std::array{x + lever_m_ * theta, x - lever_m_ * theta}, strokes_m);
  if (!(std::abs(theta) < std::numbers::pi / 2)) return false;
  const double half = std::sin(theta / 2);
  return write_if_finite(std::array{x - 2.0 * arm_m_ * std::sin(theta / 2 - alpha_rad_) * half,
                                    x - 2.0 * arm_m_ * std::sin(theta / 2 + alpha_rad_) * half},
                         strokes_m);
}

bool RigidCouplerSetup::stroke_velocities(std::span<const double> interface_displacement_m,
                                          std::span<const double> interface_velocity_m_per_s,
                                          std::span<double> stroke_velocity_m_per_s) {
  const double theta = interface_displacement_m[1];
  const double vx = interface_velocity_m_per_s[0];
  const double vtheta = interface_velocity_m_per_s[1];
  if (!std::isfinite(interface_displacement_m[0]) || !std::isfinite(theta) || !std::isfinite(vx) ||
      !std::isfinite(vtheta) || (!linear_ && !(std::abs(theta) < std::numbers::pi / 2))) {
    return false;
  }
  double slope0 = 0;
  double slope1 = 0;
  slopes(theta, slope0, slope1);
  return write_if_finite(std::array{vx + slope0 * vtheta, vx + slope1 * vtheta}, stroke_velocity_m_per_s);
}

bool RigidCouplerSetup::rotation(std::span<const double> strokes_m, double& theta_rad) const {
  const double ratio = (strokes_m[0] - strokes_m[1]) / (2.0 * lever_m_);
  if (!std::isfinite(ratio) || !std::isfinite(strokes_m[0])) return false;
  if (linear_) {
    theta_rad = ratio;
    return true;
  }
  if (!(std::abs(ratio) < 1.0)) return false;
  theta_rad = std::asin(ratio);
  return true;
}

bool RigidCouplerSetup::interface_displacements(std::span<const double> strokes_m,
                                                std::span<double> interface_displacement_m) {
  double theta = 0;
  if (!rotation(strokes_m, theta)) return false;
  const double x = linear_ ? 0.5 * (strokes_m[0] + strokes_m[1])
                           : strokes_m[0] + 2.0 * arm_m_ * std::sin(theta / 2 - alpha_rad_) * std::sin(theta / 2);
  return write_if_finite(std::array{x, theta}, interface_displacement_m);
}

bool RigidCouplerSetup::interface_forces(std::span<const double> strokes_m, std::span<const double> actuator_forces_n,
                                         std::span<double> interface_forces_n) {
  double theta = 0;
  if (!std::isfinite(actuator_forces_n[0]) || !std::isfinite(actuator_forces_n[1]) || !rotation(strokes_m, theta)) {
    return false;
  }
  double slope0 = 0;
  double slope1 = 0;
  slopes(theta, slope0, slope1);
  // J^T f: the force along x and the moment about the node.
  return write_if_finite(std::array{actuator_forces_n[0] + actuator_forces_n[1],
                                    slope0 * actuator_forces_n[0] + slope1 * actuator_forces_n[1]},
                         interface_forces_n);
}

bool RigidCouplerSetup::actuator_forces(std::span<const double> strokes_m, std::span<const double> interface_forces_n,
                                        std::span<double> actuator_forces_n) {
  double theta = 0;
  if (!std::isfinite(interface_forces_n[0]) || !std::isfinite(interface_forces_n[1]) || !rotation(strokes_m, theta)) {
    return false;
  }
  double slope0 = 0;
  double slope1 = 0;
  slopes(theta, slope0, slope1);
  // f_0 + f_1 = F, slope0 f_0 + slope1 f_1 = M; the determinant slope1 - slope0 = 2 p cos(theta)
  // sin(alpha) is not 0 inside the valid range.
  const double det = slope1 - slope0;
  const double f0 = (slope1 * interface_forces_n[0] - interface_forces_n[1]) / det;
  const double f1 = (interface_forces_n[1] - slope0 * interface_forces_n[0]) / det;
  if (!std::isfinite(f0) || !std::isfinite(f1)) return false;
  actuator_forces_n[0] = f0;
  actuator_forces_n[1] = f1;
  return true;
}

std::string RigidCouplerSetup::valid_range() const {
  if (linear_) return "every finite stroke (the linear coupler)";
  return fmt::format(
      "a rotation below 90 degrees in magnitude: the strokes differ by less than 2 p sin(alpha) = {:.9g} m",
      2 * lever_m_);
}

namespace {

// A site of two channels (the node's translation and rotation), a positive arm and a pin angle from
// 1 to 89 degrees.
void validate(const config::RigidCoupler& coupler, const ComponentContext& context, const Checker& check) {
  setup_kind::expect_site_dofs(check, context, 2, "two interface DOFs (a node's translation and rotation)",
                               "a site of two channels");
  if (!coupler.has_arm_m()) {
    check.expect(false, "arm_m", "missing; expected the distance from the node to each actuator's pin (m, > 0)");
  } else {
    check.expect(std::isfinite(coupler.arm_m()) && coupler.arm_m() > 0, "arm_m",
                 fmt::format("is {}, expected the distance from the node to each actuator's pin (m, > 0; the "
                             "benchmark's coupler: 0.29539)",
                             coupler.arm_m()));
  }
  // At 0 degrees the two pins coincide in height and the rotation is not controlled; at 90 the
  // actuators pull on the node's vertical line and the translation is not.
  if (!coupler.has_angle_deg()) {
    check.expect(false, "angle_deg",
                 "missing; expected the angle of each pin from the node's horizontal (degrees, 1 to 89)");
  } else {
    const double angle_deg = coupler.angle_deg();
    check.expect(std::isfinite(angle_deg) && angle_deg >= 1.0 && angle_deg <= 89.0, "angle_deg",
                 fmt::format("is {} degrees, expected 1 to 89: each pin's angle from the node's horizontal (the "
                             "benchmark's coupler: 25.4633)",
                             angle_deg));
  }
}

std::unique_ptr<SetupTransform> make(const config::RigidCoupler& coupler, const ComponentContext& /*context*/) {
  return std::make_unique<RigidCouplerSetup>(coupler.arm_m(), coupler.angle_deg(), coupler.linear());
}

std::size_t actuators(const config::RigidCoupler& /*coupler*/) {
  return 2;
}

std::string sketch(const config::RigidCoupler& /*coupler*/) {
  return "arm_m: ... angle_deg: ...";
}

[[maybe_unused]] const bool kRigidCouplerSetupRegistered =
    register_component<config::RigidCoupler, SetupTransform>(validate, make) &&
    register_fact<SetupActuators, config::RigidCoupler>(actuators) &&
    register_fact<ConfigSketch, config::RigidCoupler>(sketch);

}  // namespace
}  // namespace rths
