#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>

#include <Eigen/Core>

#include "node_physical/interfaces/setup_transform.hpp"

namespace rths {

// Two actuators pinned to one specimen point drive its two DOFs, x (channel 0) and y (channel 1),
// exact at large displacements (plain geometry; OpenFresco's ESTwoActuators2d drives a translation
// and a rotation through a rigid link instead, PEER 2009/104). With the point's reference position
// P0 at the origin, actuator i's fixed end is A_i = -L0_i (cos theta_i, sin theta_i); the point at
// P = u:
//   s_i = |P - A_i| - L0_i = (2 d_i . u + u . u) / (|P - A_i| + L0_i),   d_i = P0 - A_i.
// The inverse is the intersection of the circles about A_0 and A_1 of radii L0_i + s_i (closed
// form): with D = |A_1 - A_0|, unit e along A_0 -> A_1 and n = e turned 90 degrees,
//   a = (r_0^2 - r_1^2 + D^2) / (2 D),  h = sqrt(r_0^2 - a^2),  P = A_0 + a e + sigma h n.
// The two circles meet in mirror images across the line through the fixed ends; sigma = sign(n .
// (P0 - A_0)) keeps the branch on the reference's side of that line, the one the rig starts in and
// cannot leave without passing through the singular configuration h = 0 (both actuators in line,
// J singular). Valid while the point stays strictly on that side. J's rows: the actuators' current
// unit axes (P - A_i) / |P - A_i|.
class TwoActuatorsSetup final : public SetupTransform {
 public:
  // Lengths L0_i > 0 (m), angles theta_i from +x to each axis, fixed end towards the point (degrees,
  // -180..180), the axes crossing at 10 degrees or more: a config that passed the rules of
  // two_actuators_setup.cpp (validate).
  TwoActuatorsSetup(double length0_m, double angle0_deg, double length1_m, double angle1_deg);

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

  // Actuator i's fixed end, with the point's reference position at the origin (m).
  [[nodiscard]] const Eigen::Vector2d& fixed_end(std::size_t i) const { return fixed_[i]; }

 private:
  // The point for two strokes (the circles' intersection on the reference's side); false when the
  // circles do not meet in two points.
  [[nodiscard]] bool point(std::span<const double> strokes_m, Eigen::Vector2d& p) const;
  // Whether a point is strictly on the reference's side of the line through the fixed ends.
  [[nodiscard]] bool on_reference_side(const Eigen::Vector2d& p) const;

  std::array<double, 2> length_m_{};                  // L0_i
  std::array<Eigen::Vector2d, 2> reach_{};            // d_i = P0 - A_i
  std::array<Eigen::Vector2d, 2> fixed_{};            // A_i
  double base_m_ = 0.0;                               // D
  Eigen::Vector2d along_ = Eigen::Vector2d::Zero();   // e
  Eigen::Vector2d across_ = Eigen::Vector2d::Zero();  // n
  double side_ = 1.0;                                 // sigma
};

}  // namespace rths
