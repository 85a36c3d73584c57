// Two actuators pinned to one specimen point (config TwoActuatorsPlanar), exact at large
// displacements.
#include "node_physical/setups/two_actuators_setup.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/config/setup_checks.hpp"
#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/setups/setup_kind.hpp"

namespace rths {

using setup_kind::to_radians;

TwoActuatorsSetup::TwoActuatorsSetup(double length0_m, double angle0_deg, double length1_m, double angle1_deg)
    : SetupTransform(2, 2) {
  length_m_ = {length0_m, length1_m};
  const std::array<double, 2> angles_deg{angle0_deg, angle1_deg};
  for (std::size_t i = 0; i < 2; ++i) {
    reach_[i] =
        length_m_[i] * Eigen::Vector2d(std::cos(to_radians(angles_deg[i])), std::sin(to_radians(angles_deg[i])));
    fixed_[i] = -reach_[i];
  }
  const Eigen::Vector2d base = fixed_[1] - fixed_[0];
  // D > 0: equal fixed ends would need parallel axes, which the crossing rule refuses.
  base_m_ = base.norm();
  along_ = base / base_m_;
  across_ = Eigen::Vector2d(-along_.y(), along_.x());
  // The reference point is off the line through the fixed ends (the axes are not parallel).
  side_ = across_.dot(-fixed_[0]) > 0 ? 1.0 : -1.0;
}

bool TwoActuatorsSetup::on_reference_side(const Eigen::Vector2d& p) const {
  return side_ * across_.dot(p - fixed_[0]) > 0;
}

bool TwoActuatorsSetup::strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) {
  const Eigen::Vector2d u(interface_displacement_m[0], interface_displacement_m[1]);
  if (!u.allFinite() || !on_reference_side(u)) return false;
  Eigen::Vector2d s;
  for (std::size_t i = 0; i < 2; ++i) {
    // L^2 - L0^2 = 2 d_i . u + u . u, divided by L + L0: no cancellation of L - L0.
    const double length = (reach_[i] + u).norm();
    s(static_cast<Eigen::Index>(i)) = (2.0 * reach_[i].dot(u) + u.squaredNorm()) / (length + length_m_[i]);
  }
  if (!s.allFinite()) return false;
  strokes_m[0] = s(0);
  strokes_m[1] = s(1);
  return true;
}

bool TwoActuatorsSetup::stroke_velocities(std::span<const double> interface_displacement_m,
                                          std::span<const double> interface_velocity_m_per_s,
                                          std::span<double> stroke_velocity_m_per_s) {
  const Eigen::Vector2d u(interface_displacement_m[0], interface_displacement_m[1]);
  const Eigen::Vector2d v(interface_velocity_m_per_s[0], interface_velocity_m_per_s[1]);
  if (!u.allFinite() || !v.allFinite() || !on_reference_side(u)) return false;
  Eigen::Vector2d rate;
  for (std::size_t i = 0; i < 2; ++i) {
    // Row i of J: the actuator's current unit axis.
    rate(static_cast<Eigen::Index>(i)) = (reach_[i] + u).normalized().dot(v);
  }
  if (!rate.allFinite()) return false;
  stroke_velocity_m_per_s[0] = rate(0);
  stroke_velocity_m_per_s[1] = rate(1);
  return true;
}

bool TwoActuatorsSetup::point(std::span<const double> strokes_m, Eigen::Vector2d& p) const {
  const double r0 = length_m_[0] + strokes_m[0];
  const double r1 = length_m_[1] + strokes_m[1];
  if (!std::isfinite(r0) || !std::isfinite(r1) || !(r0 > 0) || !(r1 > 0)) return false;
  // Distance from A_0 along e to the chord through the two intersections, and half the chord.
  const double a = (r0 * r0 - r1 * r1 + base_m_ * base_m_) / (2.0 * base_m_);
  const double half_chord_squared = (r0 - a) * (r0 + a);
  // 0: the circles touch (the point on the fixed ends' line, J singular); below: they do not meet.
  if (!(half_chord_squared > 0)) return false;
  p = fixed_[0] + a * along_ + side_ * std::sqrt(half_chord_squared) * across_;
  return p.allFinite();
}

bool TwoActuatorsSetup::interface_displacements(std::span<const double> strokes_m,
                                                std::span<double> interface_displacement_m) {
  Eigen::Vector2d p;
  if (!point(strokes_m, p)) return false;
  interface_displacement_m[0] = p.x();  // P0 is the origin: the point is the displacement
  interface_displacement_m[1] = p.y();
  return true;
}

bool TwoActuatorsSetup::interface_forces(std::span<const double> strokes_m, std::span<const double> actuator_forces_n,
                                         std::span<double> interface_forces_n) {
  Eigen::Vector2d p;
  if (!std::isfinite(actuator_forces_n[0]) || !std::isfinite(actuator_forces_n[1]) || !point(strokes_m, p)) {
    return false;
  }
  // J^T f: each load cell's force along its actuator's current unit axis.
  const Eigen::Vector2d force =
      actuator_forces_n[0] * (p - fixed_[0]).normalized() + actuator_forces_n[1] * (p - fixed_[1]).normalized();
  if (!force.allFinite()) return false;
  interface_forces_n[0] = force.x();
  interface_forces_n[1] = force.y();
  return true;
}

bool TwoActuatorsSetup::actuator_forces(std::span<const double> strokes_m, std::span<const double> interface_forces_n,
                                        std::span<double> actuator_forces_n) {
  Eigen::Vector2d p;
  if (!std::isfinite(interface_forces_n[0]) || !std::isfinite(interface_forces_n[1]) || !point(strokes_m, p)) {
    return false;
  }
  // f_0 n_0 + f_1 n_1 = F with the current unit axes n_i, by Cramer's rule; the determinant is the
  // sine of the angle between the axes, not 0 inside the valid range.
  const Eigen::Vector2d n0 = (p - fixed_[0]).normalized();
  const Eigen::Vector2d n1 = (p - fixed_[1]).normalized();
  const Eigen::Vector2d force(interface_forces_n[0], interface_forces_n[1]);
  const double det = n0.x() * n1.y() - n0.y() * n1.x();
  const double f0 = (force.x() * n1.y() - force.y() * n1.x()) / det;
  const double f1 = (n0.x() * force.y() - n0.y() * force.x()) / det;
  if (!std::isfinite(f0) || !std::isfinite(f1)) return false;
  actuator_forces_n[0] = f0;
  actuator_forces_n[1] = f1;
  return true;
}

std::string TwoActuatorsSetup::valid_range() const {
  return fmt::format(
      "the point stays on its reference side of the line through the fixed ends ({:.9g}, {:.9g}) m "
      "and ({:.9g}, {:.9g}) m (relative to its reference position), and the strokes' circles about "
      "them meet in two points",
      setup_kind::tidy_m(fixed_[0].x()), setup_kind::tidy_m(fixed_[0].y()), setup_kind::tidy_m(fixed_[1].x()),
      setup_kind::tidy_m(fixed_[1].y()));
}

namespace {

// A site of two channels and two actuators, each of positive length and an angle from -180 to 180
// degrees, their axes crossing at 10 degrees or more.
void validate(const config::TwoActuatorsPlanar& pair, const ComponentContext& context, const Checker& check) {
  setup_kind::expect_site_dofs(check, context, 2, "two interface DOFs (x and y of one point)",
                               "a site of two channels");
  check.require(pair.actuator_size() == 2, "actuator",
                fmt::format("has {} {}, expected 2: actuator {{ length_m: ... angle_deg: ... }} for each of the two "
                            "actuators",
                            pair.actuator_size(), pair.actuator_size() == 1 ? "entry" : "entries"));
  bool angles_ok = true;
  for (int i = 0; i < 2; ++i) {
    const config::PlanarActuator& actuator = pair.actuator(i);
    const Checker at = check.at("actuator", i);
    setup_kind::expect_length(at, "length_m", actuator.has_length_m(), actuator.length_m());
    angles_ok = setup_kind::expect_angle(at, "angle_deg", actuator.has_angle_deg(), actuator.angle_deg(),
                                         "the angle from +x (channel 0's direction) to the actuator's axis "
                                         "(degrees, -180 to 180)") &&
                angles_ok;
  }
  if (!angles_ok) return;
  // The Jacobian's rows at the reference are the two unit axes: its determinant is the sine of the
  // angle between them.
  const double angle0_deg = pair.actuator(0).angle_deg();
  const double angle1_deg = pair.actuator(1).angle_deg();
  const double crossing_deg =
      setup_kind::to_degrees(std::asin(std::min(1.0, std::abs(std::sin(to_radians(angle1_deg - angle0_deg))))));
  check.expect(
      crossing_deg + setup_kind::kAngleToleranceDeg >= kSetupMinCrossingDeg, "actuator[1].angle_deg",
      fmt::format("is {} degrees: the axes of actuator 0 ({} degrees) and actuator 1 cross at {:.4g} degrees; "
                  "expected {:g} degrees or more: closer to parallel, an error of a stroke reading grows more "
                  "than {:.2g} times in the point's position, and parallel axes cannot tell its two DOFs apart",
                  angle1_deg, angle0_deg, setup_kind::tidy_deg(crossing_deg), kSetupMinCrossingDeg,
                  1.0 / std::sin(to_radians(kSetupMinCrossingDeg))));
}

std::unique_ptr<SetupTransform> make(const config::TwoActuatorsPlanar& pair, const ComponentContext& /*context*/) {
  return std::make_unique<TwoActuatorsSetup>(pair.actuator(0).length_m(), pair.actuator(0).angle_deg(),
                                             pair.actuator(1).length_m(), pair.actuator(1).angle_deg());
}

std::size_t actuators(const config::TwoActuatorsPlanar& /*pair*/) {
  return 2;
}

std::string sketch(const config::TwoActuatorsPlanar& /*pair*/) {
  return "actuator { ... } actuator { ... }";
}

[[maybe_unused]] const bool kTwoActuatorsSetupRegistered =
    register_component<config::TwoActuatorsPlanar, SetupTransform>(validate, make) &&
    register_fact<SetupActuators, config::TwoActuatorsPlanar>(actuators) &&
    register_fact<ConfigSketch, config::TwoActuatorsPlanar>(sketch);

}  // namespace
}  // namespace rths
