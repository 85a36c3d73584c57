#include "rths/common/structural_modes.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace rths {

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
  const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> solver(reduced_k, mass(inertial, inertial),
                                                                         Eigen::EigenvaluesOnly);
  if (solver.info() != Eigen::Success) {
    throw std::invalid_argument("structure: the mass matrix is not symmetric positive definite on its DOFs with mass");
  }
  return solver.eigenvalues();
}

}  // namespace rths
