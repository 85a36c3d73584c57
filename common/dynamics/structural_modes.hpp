#pragma once

#include <functional>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>

// The modes of a structure M x'' + K x = 0 and the Rayleigh damping fitted to them, shared by the
// numerical substructure and the structure's damping components (common/dampings/).
namespace rths {

// Eigenvalues omega^2 of K phi = omega^2 M phi, ascending, one per DOF with mass: massless DOFs (zero
// rows and columns of M, an FE export's rotations) are condensed out statically. Throws
// std::invalid_argument when M is not positive definite on its DOFs with mass or the massless DOFs'
// stiffness is singular.
Eigen::VectorXd squared_frequencies(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness);

// The DOFs with no inertia: the zero rows and columns of M, in order.
std::vector<Eigen::Index> massless_dofs(const Eigen::MatrixXd& mass);

// Rayleigh C = a0 M + a1 K with damping ratio zeta_a at mode mode_a and zeta_b at mode_b (numbered
// from 1, as squared_frequencies orders them). Throws std::invalid_argument for a mode the structure
// does not have or two modes of one frequency.
Eigen::MatrixXd rayleigh_damping(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness, int mode_a,
                                 double zeta_a, int mode_b, double zeta_b);
// The squared natural frequencies (rad^2/s^2) of a sparse model's `count` lowest modes, ascending: how
// they are found (Lanczos for a large model) is the numerical substructure's.
using LowestSquaredFrequencies = std::function<Eigen::VectorXd(int count)>;
// The same of a sparse model, its modes' frequencies from `lowest`.
Eigen::SparseMatrix<double> rayleigh_damping(const Eigen::SparseMatrix<double>& mass,
                                             const Eigen::SparseMatrix<double>& stiffness, int mode_a, double zeta_a,
                                             int mode_b, double zeta_b, const LowestSquaredFrequencies& lowest);

}  // namespace rths
