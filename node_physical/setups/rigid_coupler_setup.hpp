#pragma once

#include <span>
#include <string>

#include "node_physical/interfaces/setup_transform.hpp"

namespace rths {

// Two horizontal actuators pinned to a rigid coupler bolted to one node drive the node's translation
// x (channel 0, m) and rotation theta (channel 1, rad, counter-clockwise): the maRTHS benchmark's
// transfer system (seed 000 Eqs. 21-30; its coupler is rigid, the node's vertical motion negligible).
// Actuator 0's pin (the bottom one) sits at arm p from the node at angle -alpha, actuator 1's at
// +alpha, so with alpha_0 = -alpha, alpha_1 = +alpha
//   s_i = x + p (cos(theta + alpha_i) - cos(alpha_i)) = x - 2 p sin(theta / 2 + alpha_i) sin(theta / 2),
// the second form without cancellation for small rotations. Back (Eqs. 29-30, with the measured
// stroke of actuator 0 where the paper prints the target's):
//   theta = asin((s_0 - s_1) / (2 p sin(alpha))),   x = s_0 - p (cos(theta - alpha) - cos(alpha)).
// J's rows are (1, -p sin(theta + alpha_i)). Valid while |theta| < 90 degrees, i.e. |s_0 - s_1| <
// 2 p sin(alpha): at 90 degrees both rows of J are (1, -p cos(alpha)) and the translation and the
// rotation cannot be told apart. The linear form (small rotations) is the matrix of J at theta = 0,
// s_i = x - p sin(alpha_i) theta, and is valid everywhere.
class RigidCouplerSetup final : public SetupTransform {
 public:
  // arm_m p > 0, angle_deg alpha from 1 to 89: a config that passed the rules of
  // rigid_coupler_setup.cpp (validate).
  RigidCouplerSetup(double arm_m, double angle_deg, bool linear);

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
  // The rotation for two strokes; false outside the valid range.
  [[nodiscard]] bool rotation(std::span<const double> strokes_m, double& theta_rad) const;
  // J at a rotation: row i is (1, slope_i).
  void slopes(double theta_rad, double& slope0, double& slope1) const;

  double arm_m_;
  double alpha_rad_;
  bool linear_;
  double lever_m_;  // p sin(alpha): half the strokes' difference per radian at theta = 0
};

}  // namespace rths
