// The constant matrix (config SetupMatrix): OpenFresco's linear-geometry setups (Schellenberg, Mahin &
// Fenves 2009, PEER 2009/104).
#include "node_physical/setups/matrix_setup.hpp"

#include <Eigen/QR>
#include <Eigen/SVD>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "common/config/setup_checks.hpp"
#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/setups/setup_kind.hpp"

namespace rths {
namespace {

using setup_kind::all_finite;
using setup_kind::write_if_finite;
using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

}  // namespace

MatrixSetup::MatrixSetup(std::size_t actuators, std::span<const double> t_row_major, std::size_t dofs)
    : SetupTransform(dofs, actuators), t_(t_row_major.begin(), t_row_major.end()) {
  if (t_row_major.size() != actuators * dofs) {
    throw std::invalid_argument(
        fmt::format("MatrixSetup: {} entries for {} actuators x {} DOFs", t_row_major.size(), actuators, dofs));
  }
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

namespace {

// A matrix of one column per DOF of the site (its channels), a row per actuator, at least as many
// actuators as DOFs, and full column rank.
void validate(const config::SetupMatrix& matrix, const ComponentContext& context, const Checker& check) {
  const std::size_t dofs = setup_kind::site_dofs(context);
  check.require(matrix.has_actuators(), "actuators",
                fmt::format("missing; expected the number of actuators (at least the site's {})",
                            setup_kind::channels_text(dofs)));
  check.require(dofs != 0, "", "drives no interface DOF: the site has no channels");
  const std::size_t actuators = matrix.actuators();
  check.require(actuators >= dofs, "actuators",
                fmt::format("is {}, expected at least one actuator per interface DOF (the site has {}): fewer "
                            "actuators cannot drive every DOF",
                            actuators, setup_kind::channels_text(dofs)));
  const auto entries = static_cast<std::size_t>(matrix.value_size());
  check.require(entries == actuators * dofs, "value",
                fmt::format("has {} entries, expected actuators x DOFs = {} x {} = {} (row-major: one row per "
                            "actuator, one column per channel)",
                            entries, actuators, dofs, actuators * dofs));
  bool finite = true;
  for (int i = 0; i < matrix.value_size(); ++i) {
    finite = check.expect(std::isfinite(matrix.value(i)), fmt::format("value[{}]", i),
                          fmt::format("is {}, expected a finite number", matrix.value(i))) &&
             finite;
  }
  if (!finite) return;
  const Eigen::Map<const RowMajor> t(matrix.value().data(), static_cast<Eigen::Index>(actuators),
                                     static_cast<Eigen::Index>(dofs));
  // Singular values, descending: the rank and how close T is to losing it, in one number.
  const Eigen::VectorXd sigma = Eigen::JacobiSVD<RowMajor>(t).singularValues();
  const double largest = sigma(0);
  const double smallest = sigma(sigma.size() - 1);
  check.expect(largest > 0 && smallest > kSetupRankTolerance * largest, "value",
               fmt::format("is rank deficient: smallest singular value {:.6g}, largest {:.6g} (at most {:g} of it); "
                           "expected full column rank: every DOF moves some actuator, and no two motions of the DOFs "
                           "move the actuators alike",
                           smallest, largest, kSetupRankTolerance));
}

std::unique_ptr<SetupTransform> make(const config::SetupMatrix& matrix, const ComponentContext& context) {
  return std::make_unique<MatrixSetup>(
      matrix.actuators(), std::span<const double>(matrix.value().data(), static_cast<std::size_t>(matrix.value_size())),
      setup_kind::site_dofs(context));
}

std::size_t actuators(const config::SetupMatrix& matrix) {
  return matrix.actuators();
}

std::string sketch(const config::SetupMatrix& /*matrix*/) {
  return "actuators: ... value: [...]";
}

[[maybe_unused]] const bool kMatrixSetupRegistered =
    register_component<config::SetupMatrix, SetupTransform>(validate, make) &&
    register_fact<SetupActuators, config::SetupMatrix>(actuators) &&
    register_fact<ConfigSketch, config::SetupMatrix>(sketch);

}  // namespace
}  // namespace rths
