#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "experiment.pb.h"

namespace rths {

// How a site's actuators sit on its interface DOFs: OpenFresco's experimental setup (Schellenberg,
// Mahin & Fenves 2009, "Advanced implementation of hybrid simulation", PEER 2009/104, ch. 3; its
// ExperimentalSetup classes). The numerical node commands interface displacements; the rig moves
// actuators. The setup maps interface displacements to actuator strokes, and measured strokes and
// load-cell forces back to interface displacements and forces (docs/setup-transformations.md).
//
// Units and signs: interface displacements in m along the site's channels; strokes in m, the
// change of an actuator's pin-to-pin length from its reference length, positive when it extends;
// an actuator force is its load cell's in N, positive in compression (the actuator pushes on the
// specimen), so that it does work on the stroke as the interface force does on the interface
// displacement.
//
// Every call below runs in the site's step: spans of exactly dofs() or actuators() entries (the
// caller sizes its buffers once), no allocation, no locks, no I/O. Each returns true on success,
// false when an input is not finite, a result would not be, or the configuration is outside the
// valid range (valid_range() says what it is): the outputs are then untouched, so the caller holds
// its last good values and stops.
class SetupTransform {
 public:
  SetupTransform(std::size_t dofs, std::size_t actuators) : dofs_(dofs), actuators_(actuators) {}
  SetupTransform(const SetupTransform&) = delete;
  SetupTransform& operator=(const SetupTransform&) = delete;
  SetupTransform(SetupTransform&&) = delete;
  SetupTransform& operator=(SetupTransform&&) = delete;
  virtual ~SetupTransform() = default;

  [[nodiscard]] std::size_t dofs() const { return dofs_; }
  [[nodiscard]] std::size_t actuators() const { return actuators_; }

  // Interface DOF displacements -> actuator strokes.
  [[nodiscard]] virtual bool strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) = 0;

  // The strokes' rates at an interface displacement: J(u) v, J = d strokes / d u (a command may carry
  // a velocity).
  [[nodiscard]] virtual bool stroke_velocities(std::span<const double> interface_displacement_m,
                                               std::span<const double> interface_velocity_m_per_s,
                                               std::span<double> stroke_velocity_m_per_s) = 0;

  // Measured strokes -> interface displacements: the inverse of strokes(), exact for the geometric
  // setups, least squares for a matrix with more actuators than DOFs.
  [[nodiscard]] virtual bool interface_displacements(std::span<const double> strokes_m,
                                                     std::span<double> interface_displacement_m) = 0;

  // Load-cell forces -> generalised forces on the interface DOFs, at the deformed geometry the
  // measured strokes give: J^T f. By virtual work, f_interface . du = sum_i f_i ds_i for every du
  // and ds = J du, which for all du is f_interface = J^T f (the actuators are two-force members,
  // massless and pinned without friction: the power they deliver is the power the interface receives).
  [[nodiscard]] virtual bool interface_forces(std::span<const double> strokes_m,
                                              std::span<const double> actuator_forces_n,
                                              std::span<double> interface_forces_n) = 0;

  // The other way, for an emulated rig (rths-target): interface forces -> the load-cell forces that
  // produce them at the deformed geometry, the f with J^T f = f_interface of least norm (exact for as
  // many actuators as DOFs; with redundant actuators, the split in which they fight each other least).
  [[nodiscard]] virtual bool actuator_forces(std::span<const double> strokes_m,
                                             std::span<const double> interface_forces_n,
                                             std::span<double> actuator_forces_n) = 0;

  // The valid range in words and numbers, for the message of a site that stops on a false return
  // (off the step: it allocates).
  [[nodiscard]] virtual std::string valid_range() const = 0;

 private:
  std::size_t dofs_;
  std::size_t actuators_;
};

// Small displacements, any layout (OpenFresco's linear-geometry setups are constant matrices):
// strokes = T u, with T actuators x dofs of full column rank, actuators >= dofs. Measured strokes ->
// u = T+ s, the least-squares fit (exact when the strokes are consistent, T u = s for some u); T+ is
// computed once, by a complete orthogonal decomposition. Forces: T^T f. Valid everywhere.
class MatrixSetup final : public SetupTransform {
 public:
  // t_row_major: actuators x dofs entries. Throws std::invalid_argument naming the rule broken
  // (setup_matrix_problem in common/setup_checks.hpp).
  MatrixSetup(std::size_t actuators, std::span<const double> t_row_major, std::size_t dofs);

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
  std::vector<double> t_;          // T, row-major actuators x dofs
  std::vector<double> t_plus_;     // T+, row-major dofs x actuators
  std::vector<double> actuator_;   // scratch, actuators entries: a result is written out only when finite
  std::vector<double> interface_;  // scratch, dofs entries
};

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
  // within 80 degrees of the DOF's line), offset_m e (|e| < L0). Throws std::invalid_argument naming
  // the rule broken (inclined_actuator_problem in common/setup_checks.hpp).
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
  // -180..180), the axes crossing at 10 degrees or more. Throws std::invalid_argument naming the rule
  // broken (two_actuators_problem in common/setup_checks.hpp).
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
  // arm_m p > 0, angle_deg alpha from 1 to 89. Throws std::invalid_argument naming the rule broken
  // (rigid_coupler_problem in common/setup_checks.hpp).
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

// The setup of a site of `dofs` interface DOFs (its channels) from its config. Throws
// std::invalid_argument with the field and what was expected (`setup.matrix.value: is rank
// deficient: ...`), the same rules the config validator applies (common/setup_checks.hpp).
std::unique_ptr<SetupTransform> make_setup_transform(const config::SetupTransform& setup, std::size_t dofs);

}  // namespace rths
