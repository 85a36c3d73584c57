// Setup transformations (docs/setup-transformations.md): OpenFresco's experimental setups
// (Schellenberg, Mahin & Fenves 2009, PEER 2009/104) for a constant matrix, and plain plane geometry
// for one inclined actuator and for two actuators on one point. The rules of what can be built are
// common/setup_checks.hpp's, shared with the config validator.
#include "rths/node_physical/setup_transform.hpp"

#include <Eigen/QR>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <stdexcept>

#include "rths/common/setup_checks.hpp"

namespace rths {
namespace {

double to_radians(double deg) {
  return deg * std::numbers::pi / 180.0;
}

void throw_if(const std::optional<SetupProblem>& problem) {
  if (!problem) return;
  throw std::invalid_argument(problem->field.empty() ? problem->what : problem->field + ": " + problem->what);
}

bool all_finite(std::span<const double> values) {
  return std::ranges::all_of(values, [](double v) { return std::isfinite(v); });
}

// y = M x and y = M^T x, M row-major with x.size() (M x) or y.size() (M^T x) columns. Plain loops
// over storage sized once: an Eigen expression of dynamic size may allocate a temporary through
// malloc, where no allocation counter of operator new sees it.
void multiply(std::span<const double> m_row_major, std::span<const double> x, std::span<double> y) {
  for (std::size_t r = 0; r < y.size(); ++r) {
    double sum = 0.0;
    for (std::size_t c = 0; c < x.size(); ++c) sum += m_row_major[r * x.size() + c] * x[c];
    y[r] = sum;
  }
}
void multiply_transposed(std::span<const double> m_row_major, std::span<const double> x, std::span<double> y) {
  std::fill(y.begin(), y.end(), 0.0);
  for (std::size_t r = 0; r < x.size(); ++r) {
    for (std::size_t c = 0; c < y.size(); ++c) y[c] += m_row_major[r * y.size() + c] * x[r];
  }
}

// A coordinate for a message: to the nanometre, without the -0 and 1e-17 of cos(90 deg).
double tidy_m(double value_m) {
  return std::round(value_m * 1e9) / 1e9 + 0.0;
}

// Copies a scratch result out when every entry is finite (an overflow of finite inputs included).
bool write_if_finite(std::span<const double> result, std::span<double> out) {
  if (!all_finite(result)) return false;
  std::copy(result.begin(), result.end(), out.begin());
  return true;
}

}  // namespace

// ---- constant matrix -----------------------------------------------------------------------------

MatrixSetup::MatrixSetup(std::size_t actuators, std::span<const double> t_row_major, std::size_t dofs)
    : SetupTransform(dofs, actuators), t_(t_row_major.begin(), t_row_major.end()) {
  throw_if(setup_matrix_problem(actuators, t_row_major, dofs));
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor t = Eigen::Map<const RowMajor>(t_row_major.data(), static_cast<Eigen::Index>(actuators),
                                                static_cast<Eigen::Index>(dofs));
  // T+ = (T^T T)^-1 T^T for full column rank, without forming T^T T (which squares the condition).
  const RowMajor t_plus = t.completeOrthogonalDecomposition().pseudoInverse();
  t_plus_.assign(t_plus.data(), t_plus.data() + t_plus.size());
  actuator_.resize(actuators);
  interface_.resize(dofs);
}

bool MatrixSetup::strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) {
  if (!all_finite(interface_displacement_m)) return false;
  multiply(t_, interface_displacement_m, actuator_);
  return write_if_finite(actuator_, strokes_m);
}

bool MatrixSetup::stroke_velocities(std::span<const double> interface_displacement_m,
                                    std::span<const double> interface_velocity_m_per_s,
                                    std::span<double> stroke_velocity_m_per_s) {
  // J = T everywhere; the displacement is still checked, as every setup checks its inputs.
  if (!all_finite(interface_displacement_m) || !all_finite(interface_velocity_m_per_s)) return false;
  multiply(t_, interface_velocity_m_per_s, actuator_);
  return write_if_finite(actuator_, stroke_velocity_m_per_s);
}

bool MatrixSetup::interface_displacements(std::span<const double> strokes_m,
                                          std::span<double> interface_displacement_m) {
  if (!all_finite(strokes_m)) return false;
  multiply(t_plus_, strokes_m, interface_);
  return write_if_finite(interface_, interface_displacement_m);
}

bool MatrixSetup::interface_forces(std::span<const double> strokes_m, std::span<const double> actuator_forces_n,
                                   std::span<double> interface_forces_n) {
  if (!all_finite(strokes_m) || !all_finite(actuator_forces_n)) return false;
  multiply_transposed(t_, actuator_forces_n, interface_);
  return write_if_finite(interface_, interface_forces_n);
}

bool MatrixSetup::actuator_forces(std::span<const double> strokes_m, std::span<const double> interface_forces_n,
                                  std::span<double> actuator_forces_n) {
  if (!all_finite(strokes_m) || !all_finite(interface_forces_n)) return false;
  // f = (T^T)+ f_interface = (T+)^T f_interface: the least-norm solution of T^T f = f_interface.
  multiply_transposed(t_plus_, interface_forces_n, actuator_);
  return write_if_finite(actuator_, actuator_forces_n);
}

std::string MatrixSetup::valid_range() const {
  return "every finite interface displacement and stroke (a constant matrix has no geometry to leave)";
}

// ---- one inclined actuator -----------------------------------------------------------------------

namespace {
// The length, once the inclined actuator's rules hold (the members are derived from it in order).
double checked_length(double length_m, double angle_deg, double offset_m) {
  throw_if(inclined_actuator_problem(length_m, angle_deg, offset_m));
  return length_m;
}
}  // namespace

InclinedActuatorSetup::InclinedActuatorSetup(double length_m, double angle_deg, double offset_m)
    : SetupTransform(1, 1),
      length_m_(checked_length(length_m, angle_deg, offset_m)),
      a0_m_(length_m * std::cos(to_radians(angle_deg))),
      b0_m_(length_m * std::sin(to_radians(angle_deg))),
      h_m_(b0_m_ + offset_m),
      side_(a0_m_ > 0 ? 1.0 : -1.0),  // a0 != 0: the actuator lies within 80 degrees of the DOF's line
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

// ---- two actuators on one point ------------------------------------------------------------------

TwoActuatorsSetup::TwoActuatorsSetup(double length0_m, double angle0_deg, double length1_m, double angle1_deg)
    : SetupTransform(2, 2) {
  throw_if(two_actuators_problem(length0_m, angle0_deg, length1_m, angle1_deg));
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
      tidy_m(fixed_[0].x()), tidy_m(fixed_[0].y()), tidy_m(fixed_[1].x()), tidy_m(fixed_[1].y()));
}

// ---- RigidCouplerSetup ---------------------------------------------------------------------------

RigidCouplerSetup::RigidCouplerSetup(double arm_m, double angle_deg, bool linear)
    : SetupTransform(2, 2),
      arm_m_(arm_m),
      alpha_rad_(to_radians(angle_deg)),
      linear_(linear),
      lever_m_(arm_m_ * std::sin(alpha_rad_)) {
  throw_if(rigid_coupler_problem(arm_m, angle_deg));
}

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

// ---- from the config -----------------------------------------------------------------------------

std::unique_ptr<SetupTransform> make_setup_transform(const config::SetupTransform& setup, std::size_t dofs) {
  if (const auto problem = setup_problem(setup, dofs)) {
    throw std::invalid_argument(problem->field.empty() ? "setup: " + problem->what
                                                       : "setup." + problem->field + ": " + problem->what);
  }
  switch (setup.kind_case()) {
    case config::SetupTransform::kMatrix: {
      const auto& m = setup.matrix();
      return std::make_unique<MatrixSetup>(
          m.actuators(), std::span<const double>(m.value().data(), static_cast<std::size_t>(m.value_size())), dofs);
    }
    case config::SetupTransform::kInclinedActuator: {
      const auto& a = setup.inclined_actuator();
      return std::make_unique<InclinedActuatorSetup>(a.length_m(), a.angle_deg(), a.offset_m());
    }
    case config::SetupTransform::kTwoActuators: {
      const auto& pair = setup.two_actuators();
      return std::make_unique<TwoActuatorsSetup>(pair.actuator(0).length_m(), pair.actuator(0).angle_deg(),
                                                 pair.actuator(1).length_m(), pair.actuator(1).angle_deg());
    }
    case config::SetupTransform::kRigidCoupler: {
      const auto& c = setup.rigid_coupler();
      return std::make_unique<RigidCouplerSetup>(c.arm_m(), c.angle_deg(), c.linear());
    }
    case config::SetupTransform::KIND_NOT_SET:
      break;
  }
  throw std::invalid_argument("setup: has no transformation");  // setup_problem refuses it first
}

}  // namespace rths
