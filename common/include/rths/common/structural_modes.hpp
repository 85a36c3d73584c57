#pragma once

#include <vector>

#include <Eigen/Dense>

// The modes of a structure M x'' + K x = 0, shared by the numerical substructure and the config's
// checks of its damping.
namespace rths {

// Eigenvalues omega^2 of K phi = omega^2 M phi, ascending, one per DOF with mass: massless DOFs (zero
// rows and columns of M, an FE export's rotations) are condensed out statically. Throws
// std::invalid_argument when M is not positive definite on its DOFs with mass or the massless DOFs'
// stiffness is singular.
Eigen::VectorXd squared_frequencies(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness);

// The DOFs with no inertia: the zero rows and columns of M, in order.
std::vector<Eigen::Index> massless_dofs(const Eigen::MatrixXd& mass);

}  // namespace rths
