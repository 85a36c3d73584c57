#pragma once

#include <Eigen/Dense>

// Dense eigenvalue problems, compiled once in common/dynamics/eigen_problems.cpp. Eigen's eigensolvers are
// templates: each file that instantiated one (EigenSolver, ComplexEigenSolver, the self-adjoint
// ones) spent 5 to 40 s of CPU compiling it, in each of the project's builds (docs/performance.md,
// "Eigen's eigensolvers compiled once"); a call here costs one function call and a copy of its
// matrices, which no step pays (they run when a model is built, checked or analysed).
namespace rths {

// The eigenvalues of a real square matrix, in Eigen's order (not sorted). `converged` (when given)
// says whether the QR iterations converged; without it, non-convergence throws std::runtime_error.
Eigen::VectorXcd general_eigenvalues(const Eigen::MatrixXd& a, bool* converged = nullptr);

// The eigenvalues of a complex square matrix, in Eigen's order; as above.
Eigen::VectorXcd complex_eigenvalues(const Eigen::MatrixXcd& a, bool* converged = nullptr);

// The solution of a symmetric eigenvalue problem: ascending eigenvalues and, when asked, the
// eigenvectors as columns in the same order. `ok` false: the iterations did not converge; values and
// vectors are then whatever Eigen left. (For the generalized problem Eigen does not check that M is
// positive definite: a caller that cannot be sure checks it, or the eigenvalues' signs.)
struct SymmetricEigen {
  bool ok = false;
  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
};

// A x = lambda x, A symmetric (only its lower triangle is read).
SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& a, bool vectors = true);

// K x = lambda M x, K symmetric, M symmetric positive definite; the eigenvectors are M-normalised.
SymmetricEigen generalized_symmetric_eigen(const Eigen::MatrixXd& k, const Eigen::MatrixXd& m, bool vectors = true);

}  // namespace rths
