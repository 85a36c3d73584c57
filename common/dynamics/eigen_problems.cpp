#include "common/dynamics/eigen_problems.hpp"

#include <Eigen/Eigenvalues>
#include <stdexcept>

namespace rths {
namespace {

// The solver's verdict, to `converged` when the caller asked for it, else as an exception.
void report(bool ok, bool* converged, const char* what) {
  if (converged != nullptr) {
    *converged = ok;
  } else if (!ok) {
    throw std::runtime_error(std::string(what) + ": the eigenvalue iterations did not converge");
  }
}

int options(bool vectors) {
  return vectors ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly;
}

}  // namespace

Eigen::VectorXcd general_eigenvalues(const Eigen::MatrixXd& a, bool* converged) {
  const Eigen::EigenSolver<Eigen::MatrixXd> solver(a, false);
  report(solver.info() == Eigen::Success, converged, "general_eigenvalues");
  return solver.eigenvalues();
}

Eigen::VectorXcd complex_eigenvalues(const Eigen::MatrixXcd& a, bool* converged) {
  const Eigen::ComplexEigenSolver<Eigen::MatrixXcd> solver(a, false);
  report(solver.info() == Eigen::Success, converged, "complex_eigenvalues");
  return solver.eigenvalues();
}

SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& a, bool vectors) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(a, options(vectors));
  SymmetricEigen out;
  out.ok = solver.info() == Eigen::Success;
  out.values = solver.eigenvalues();
  if (vectors) out.vectors = solver.eigenvectors();
  return out;
}

SymmetricEigen generalized_symmetric_eigen(const Eigen::MatrixXd& k, const Eigen::MatrixXd& m, bool vectors) {
  const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> solver(k, m, options(vectors) | Eigen::Ax_lBx);
  SymmetricEigen out;
  out.ok = solver.info() == Eigen::Success;
  out.values = solver.eigenvalues();
  if (vectors) out.vectors = solver.eigenvectors();
  return out;
}

}  // namespace rths
