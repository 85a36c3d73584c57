#include "common/dynamics/structural_modes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/core/config_error.hpp"
#include "common/dynamics/eigen_problems.hpp"

namespace rths {
namespace {

// a0 and a1 of C = a0 M + a1 K from zeta_i = a0 / (2 omega_i) + a1 omega_i / 2 at both modes
// (Chopra, Dynamics of Structures, §11.4), given the squared frequencies of modes 1, 2, ...
std::pair<double, double> rayleigh_coefficients(const Eigen::VectorXd& omega_squared, int mode_a, double zeta_a,
                                                int mode_b, double zeta_b) {
  const double omega_a = std::sqrt(std::max(omega_squared(mode_a - 1), 0.0));
  const double omega_b = std::sqrt(std::max(omega_squared(mode_b - 1), 0.0));
  const double denominator = omega_b * omega_b - omega_a * omega_a;
  if (!(std::abs(denominator) > 1e-12 * omega_b * omega_b)) {
    // A rule of the config that needs the model's modes: a sparse model's rules do not compute them
    // (the build does, once), so it is reported here, as the config's error (exit 2).
    throw ConfigError("structure.rayleigh.mode_b: mode " + std::to_string(mode_b) +
                      " has the natural frequency of mode " + std::to_string(mode_a) + " (" + std::to_string(omega_a) +
                      " rad/s); expected two modes with distinct frequencies (a symmetric model repeats its "
                      "frequencies)");
  }
  return {2.0 * omega_a * omega_b * (zeta_a * omega_b - zeta_b * omega_a) / denominator,
          2.0 * (zeta_b * omega_b - zeta_a * omega_a) / denominator};
}

}  // namespace

std::vector<Eigen::Index> massless_dofs(const Eigen::MatrixXd& mass) {
  std::vector<Eigen::Index> massless;
  for (Eigen::Index i = 0; i < mass.rows(); ++i) {
    if (mass.row(i).cwiseAbs().maxCoeff() == 0.0 && mass.col(i).cwiseAbs().maxCoeff() == 0.0) massless.push_back(i);
  }
  return massless;
}

Eigen::VectorXd squared_frequencies(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness) {
  if (mass.rows() != mass.cols() || stiffness.rows() != mass.rows() || stiffness.cols() != mass.cols()) {
    throw std::invalid_argument("structure: mass is " + std::to_string(mass.rows()) + "x" +
                                std::to_string(mass.cols()) + " and stiffness " + std::to_string(stiffness.rows()) +
                                "x" + std::to_string(stiffness.cols()) + ", expected both square and the same size");
  }
  // Massless DOFs (an FE export's rotations): the rows and columns of M that are zero. They carry no
  // inertia, so they follow the others statically, o = -Koo^-1 Kot t (Guyan condensation, exact for
  // the modes here), and the modes are those of Kc = Ktt - Kto Koo^-1 Kot with Mtt.
  const std::vector<Eigen::Index> massless = massless_dofs(mass);
  std::vector<Eigen::Index> inertial;
  for (Eigen::Index i = 0; i < mass.rows(); ++i) {
    if (!std::binary_search(massless.begin(), massless.end(), i)) inertial.push_back(i);
  }
  if (inertial.empty()) {
    throw std::invalid_argument("structure: the mass matrix is zero; expected mass on at least one DOF");
  }
  Eigen::MatrixXd reduced_k = stiffness(inertial, inertial);
  if (!massless.empty()) {
    const Eigen::LDLT<Eigen::MatrixXd> koo(stiffness(massless, massless));
    if (koo.info() != Eigen::Success || !koo.isPositive() || koo.vectorD().minCoeff() <= 0) {
      throw std::invalid_argument(
          "structure: the stiffness on the massless DOFs is singular; expected every massless DOF held by "
          "stiffness (else it has no static position)");
    }
    reduced_k -= stiffness(inertial, massless) * koo.solve(stiffness(massless, inertial));
  }
  SymmetricEigen solved = generalized_symmetric_eigen(reduced_k, mass(inertial, inertial), false);
  if (!solved.ok) {
    throw std::invalid_argument("structure: the mass matrix is not symmetric positive definite on its DOFs with mass");
  }
  return std::move(solved.values);
}

Eigen::MatrixXd rayleigh_damping(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness, int mode_a,
                                 double zeta_a, int mode_b, double zeta_b) {
  const Eigen::VectorXd omega_squared = squared_frequencies(mass, stiffness);
  const auto modes = static_cast<int>(omega_squared.size());
  for (const int mode : {mode_a, mode_b}) {
    if (mode < 1 || mode > modes) {
      throw std::invalid_argument("structure.rayleigh: mode " + std::to_string(mode) +
                                  " requested, the structure has " + std::to_string(modes) +
                                  " mode(s) (numbered from 1)");
    }
  }
  const auto [a0, a1] = rayleigh_coefficients(omega_squared, mode_a, zeta_a, mode_b, zeta_b);
  return a0 * mass + a1 * stiffness;
}

Eigen::SparseMatrix<double> rayleigh_damping(const Eigen::SparseMatrix<double>& mass,
                                             const Eigen::SparseMatrix<double>& stiffness, int mode_a, double zeta_a,
                                             int mode_b, double zeta_b, const LowestSquaredFrequencies& lowest) {
  const int highest = std::max(mode_a, mode_b);
  if (std::min(mode_a, mode_b) < 1 || highest > mass.rows()) {
    throw std::invalid_argument("structure.rayleigh: modes " + std::to_string(mode_a) + " and " +
                                std::to_string(mode_b) + " requested, the structure has " +
                                std::to_string(mass.rows()) + " mode(s) (numbered from 1)");
  }
  const Eigen::VectorXd omega_squared = lowest(highest);
  const auto [a0, a1] = rayleigh_coefficients(omega_squared, mode_a, zeta_a, mode_b, zeta_b);
  return {a0 * mass + a1 * stiffness};
}

}  // namespace rths
