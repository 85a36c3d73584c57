// One actuator inclined to a single DOF (config InclinedActuator), exact at large displacements.
#include "node_physical/setups/inclined_actuator_setup.hpp"

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

InclinedActuatorSetup::InclinedActuatorSetup(double length_m, double angle_deg, double offset_m)
    : SetupTransform(1, 1),
      length_m_(length_m),
      a0_m_(length_m * std::cos(to_radians(angle_deg))),
      b0_m_(length_m * std::sin(to_radians(angle_deg))),
      h_m_(b0_m_ + offset_m),
      side_(a0_m_ > 0 ? 1.0 : -1.0),  // a0 != 0: the rules keep the actuator within 80 degrees of its DOF
      offset_term_(offset_m * (2.0 * b0_m_ + offset_m)) {}

bool InclinedActuatorSetup::strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) {
  const double u = interface_displacement_m[0];
  const double x = a0_m_ + u;
  if (!std::isfinite(u) || !(side_ * x > 0)) return false;
  const double length = std::hypot(x, h_m_);
  // L^2 - L0^2 = u (2 a0 + u) + e (2 b0 + e), divided by L + L0: no cancellation of L - L0.
  const double s = (u * (2.0 * a0_m_ + u) + offset_term_) / (length + length_m_);
  if (!std::isfinite(s)) return false;
  strokes_m[0] = s;
  return true;
}

bool InclinedActuatorSetup::stroke_velocities(std::span<const double> interface_displacement_m,
                                              std::span<const double> interface_velocity_m_per_s,
                                              std::span<double> stroke_velocity_m_per_s) {
  const double u = interface_displacement_m[0];
  const double v = interface_velocity_m_per_s[0];
  const double x = a0_m_ + u;
  if (!std::isfinite(u) || !std::isfinite(v) || !(side_ * x > 0)) return false;
  const double rate = x / std::hypot(x, h_m_) * v;
  if (!std::isfinite(rate)) return false;
  stroke_velocity_m_per_s[0] = rate;
  return true;
}

bool InclinedActuatorSetup::along_dof(double stroke_m, double& x_m) const {
  const double length = length_m_ + stroke_m;
  const double reach = std::abs(h_m_);
  // The stroke must leave the actuator longer than the specimen end's distance from the DOF's line,
  // or no point on that line is at its length (L = |h|: the foot itself, where J = 0).
  if (!std::isfinite(stroke_m) || !(length > reach)) return false;
  // (L - |h|)(L + |h|) rather than L^2 - h^2: one rounding fewer near the foot.
  x_m = side_ * std::sqrt((length - reach) * (length + reach));
  return std::isfinite(x_m) && x_m != 0.0;
}

bool InclinedActuatorSetup::interface_displacements(std::span<const double> strokes_m,
                                                    std::span<double> interface_displacement_m) {
  const double s = strokes_m[0];
  double x = 0.0;
  if (!along_dof(s, x)) return false;
  // u = x - a0 = sign(a0) (x^2 - a0^2) / (|x| + |a0|), x^2 - a0^2 = s (2 L0 + s) - e (2 b0 + e).
  const double u = side_ * (s * (2.0 * length_m_ + s) - offset_term_) / (std::abs(x) + std::abs(a0_m_));
  if (!std::isfinite(u)) return false;
  interface_displacement_m[0] = u;
  return true;
}

bool InclinedActuatorSetup::interface_forces(std::span<const double> strokes_m,
                                             std::span<const double> actuator_forces_n,
                                             std::span<double> interface_forces_n) {
  const double s = strokes_m[0];
  const double f = actuator_forces_n[0];
  double x = 0.0;
  if (!std::isfinite(f) || !along_dof(s, x)) return false;
  // J^T f with J = x / L: the load cell's force projected on the DOF at the current angle.
  const double force = x / (length_m_ + s) * f;
  if (!std::isfinite(force)) return false;
  interface_forces_n[0] = force;
  return true;
}

bool InclinedActuatorSetup::actuator_forces(std::span<const double> strokes_m,
                                            std::span<const double> interface_forces_n,
                                            std::span<double> actuator_forces_n) {
  const double s = strokes_m[0];
  const double force = interface_forces_n[0];
  double x = 0.0;
  if (!std::isfinite(force) || !along_dof(s, x)) return false;
  // f = f_interface / J, J = x / L: x != 0 inside the valid range.
  const double f = (length_m_ + s) / x * force;
  if (!std::isfinite(f)) return false;
  actuator_forces_n[0] = f;
  return true;
}

std::string InclinedActuatorSetup::valid_range() const {
  const double foot_u = -a0_m_;  // u where the specimen end reaches the foot of the perpendicular
  return fmt::format(
      "interface displacement {} {:.9g} m and stroke above {:.9g} m (the specimen end stays on its "
      "side of the foot of the perpendicular from the actuator's fixed end to the DOF's line)",
      side_ > 0 ? "above" : "below", foot_u, std::abs(h_m_) - length_m_);
}

namespace {

// A site of one channel; a positive length, an angle from -180 to 180 degrees within 80 degrees of
// the DOF's line, and an offset below the length.
void validate(const config::InclinedActuator& actuator, const ComponentContext& context, const Checker& check) {
  setup_kind::expect_site_dofs(check, context, 1, "one interface DOF", "a site of one channel, or a matrix");
  const bool length_ok = setup_kind::expect_length(check, "length_m", actuator.has_length_m(), actuator.length_m());
  const bool angle_ok = setup_kind::expect_angle(
      check, "angle_deg", actuator.has_angle_deg(), actuator.angle_deg(),
      "the angle from the DOF's direction to the actuator's axis (degrees, -180 to 180; 0: aligned)");
  if (angle_ok) {
    // The angle between the actuator's axis and the DOF's line, 0..90 degrees.
    const double angle_deg = actuator.angle_deg();
    const double off_line_deg =
        setup_kind::to_degrees(std::acos(std::min(1.0, std::abs(std::cos(to_radians(angle_deg))))));
    const double steepest_deg = 90.0 - kSetupMinCrossingDeg;
    check.expect(
        off_line_deg <= steepest_deg + setup_kind::kAngleToleranceDeg, "angle_deg",
        fmt::format("is {} degrees: the actuator lies {:.4g} degrees off the DOF's line; expected at most {:g} "
                    "(|angle_deg| <= {:g} or >= {:g}): steeper, an error of the stroke reading grows more than "
                    "{:.2g} times in the interface displacement, and at 90 degrees the DOF is not controlled",
                    angle_deg, setup_kind::tidy_deg(off_line_deg), steepest_deg, steepest_deg, 180.0 - steepest_deg,
                    1.0 / std::sin(to_radians(kSetupMinCrossingDeg))));
  }
  if (length_ok) {
    check.expect(std::abs(actuator.offset_m()) < actuator.length_m(), "offset_m",
                 fmt::format("is {} m, expected a crosswise offset of the specimen point below length_m = {} m in "
                             "magnitude (a larger one is a unit mistake)",
                             actuator.offset_m(), actuator.length_m()));
  }
}

std::unique_ptr<SetupTransform> make(const config::InclinedActuator& actuator, const ComponentContext& /*context*/) {
  return std::make_unique<InclinedActuatorSetup>(actuator.length_m(), actuator.angle_deg(), actuator.offset_m());
}

std::size_t actuators(const config::InclinedActuator& /*actuator*/) {
  return 1;
}

std::string sketch(const config::InclinedActuator& /*actuator*/) {
  return "length_m: ... angle_deg: ...";
}

[[maybe_unused]] const bool kInclinedActuatorSetupRegistered =
    register_component<config::InclinedActuator, SetupTransform>(validate, make) &&
    register_fact<SetupActuators, config::InclinedActuator>(actuators) &&
    register_fact<ConfigSketch, config::InclinedActuator>(sketch);

}  // namespace
}  // namespace rths
