#pragma once

#include <span>
#include <string>

#include "node_physical/interfaces/setup_transform.hpp"

namespace rths {

// One actuator inclined to a single DOF, exact at large displacements (plain geometry). In the
// actuator's plane, x along the DOF and the fixed end (reaction wall) at the origin, the end pinned
// on the specimen is at (a0 + u, b0 + e): a0 = L0 cos(theta), b0 = L0 sin(theta), e a known constant
// crosswise offset; the specimen point moves along the DOF only. With h = b0 + e:
//   s = sqrt((a0 + u)^2 + h^2) - L0,    u = sign(a0) sqrt((L0 + s)^2 - h^2) - a0,
// the sign picking the branch on the reference's side of the foot of the perpendicular from the
// fixed end to the DOF's line. Both are evaluated in forms without cancellation for small strokes,
// s = (u (2 a0 + u) + e (2 b0 + e)) / (L + L0) and u = sign(a0) (s (2 L0 + s) - e (2 b0 + e)) /
// (sqrt((L0 + s)^2 - h^2) + |a0|), L the current length. J = ds/du = (a0 + u) / L, the cosine of
// the actuator's current angle to the DOF. Valid while the specimen end stays strictly on the
// reference's side of that foot: sign(a0 + u) = sign(a0), i.e. strokes above |h| - L0.
class InclinedActuatorSetup final : public SetupTransform {
 public:
  // length_m L0 > 0, angle_deg theta from +x to the axis, fixed end towards the specimen (-180..180,
  // within 80 degrees of the DOF's line), offset_m e (|e| < L0): a config that passed the rules of
  // inclined_actuator_setup.cpp (validate).
  InclinedActuatorSetup(double length_m, double angle_deg, double offset_m = 0.0);

  [[nodiscard]] bool strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) override;
  [[nodiscard]] bool stroke_velocities(std::span<const double> interface_displacement_m,
                                       std::span<const double> interface_velocity_m_per_s,
                                       std::span<double> stroke_velocity_m_per_s) override;
  [[nodiscard]] bool interface_displacements(std::span<const double> strokes_m,
                                             std::span<double> interface_displacement_m) override;
  [[nodiscard]] bool interface_forces(std::span<const double> strokes_m, std::span<const double> actuator_forces_n,
                                      std::span<double> interface_forces_n) override;
  [[nodiscard]] bool actuator_forces(std::span<const double> strokes_m, std::span<const double> interface_forces_n,
                                     std::span<double> actuator_forces_n) override;
  [[nodiscard]] std::string valid_range() const override;

 private:
  // sign(a0) sqrt((L0 + s)^2 - h^2): the specimen end's x for a stroke; false outside the range.
  [[nodiscard]] bool along_dof(double stroke_m, double& x_m) const;

  double length_m_;     // L0
  double a0_m_;         // L0 cos(theta)
  double b0_m_;         // L0 sin(theta)
  double h_m_;          // b0 + e, the specimen end's distance from the DOF's line through the fixed end
  double side_;         // sign(a0): +1 or -1
  double offset_term_;  // e (2 b0 + e) = h^2 - b0^2 (m^2)
};

}  // namespace rths
