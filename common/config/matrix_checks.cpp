#include "common/config/matrix_checks.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>

#include "common/dynamics/eigen_problems.hpp"
#include "experiment.pb.h"

namespace rths {

void check_square(const Checker& check, const std::string& path, int entries, std::uint64_t dofs) {
  check.require(static_cast<std::uint64_t>(entries) == dofs * dofs, path,
                fmt::format("has {} entries, expected dofs*dofs = {}", entries, dofs * dofs));
}

RowMajorMatrix to_matrix(const google::protobuf::RepeatedField<double>& values, std::uint32_t dofs) {
  const auto n = static_cast<Eigen::Index>(dofs);
  return Eigen::Map<const RowMajorMatrix>(values.data(), n, n);
}

Eigen::MatrixXd square_matrix(const google::protobuf::RepeatedField<double>& values, Eigen::Index dofs,
                              std::string_view field) {
  const auto expected = static_cast<std::size_t>(dofs * dofs);
  if (static_cast<std::size_t>(values.size()) != expected) {
    throw std::invalid_argument(fmt::format("structure.{}: has {} entries, expected dofs*dofs = {} (row-major)", field,
                                            values.size(), expected));
  }
  return Eigen::Map<const RowMajorMatrix>(values.data(), dofs, dofs);
}

void check_symmetric(const Checker& check, const std::string& path, const RowMajorMatrix& matrix) {
  const double scale = matrix.cwiseAbs().maxCoeff();
  const Eigen::Index n = matrix.cols();
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = i + 1; j < n; ++j) {
      const double upper = matrix(i, j);
      const double lower = matrix.transpose()(i, j);
      if (std::abs(upper - lower) <= kSymmetryTolerance * scale) continue;
      check.fail(path, fmt::format("is not symmetric: entry [{}] (row {}, column {}) is {} but entry [{}] (row {}, "
                                   "column {}) is {}; expected a symmetric matrix (relative tolerance {})",
                                   i * n + j, i + 1, j + 1, upper, j * n + i, j + 1, i + 1, lower, kSymmetryTolerance));
    }
  }
}

Eigen::VectorXd eigenvalues(const RowMajorMatrix& matrix) {
  return symmetric_eigen(matrix, false).values;
}

void check_not_negative(const Checker& check, const std::string& path, const RowMajorMatrix& matrix,
                        std::string_view what) {
  const Eigen::VectorXd values = eigenvalues(matrix);
  const double largest = values.cwiseAbs().maxCoeff();
  const double lowest = values(0);
  if (lowest >= -kEigenvalueTolerance * largest) return;
  check.fail(path, fmt::format("has a negative eigenvalue {:.6g} (largest magnitude {:.6g}, tolerance {:g} of it); "
                               "expected a positive semi-definite {} (a negative one feeds energy into the structure "
                               "and the response grows without bound)",
                               lowest, largest, kEigenvalueTolerance, what));
}

RowMajorMatrix stiffness_with_springs(const config::Structure& structure) {
  RowMajorMatrix stiffness = to_matrix(structure.stiffness_n_per_m(), structure.dofs());
  for (const config::HystereticSpring& spring : structure.spring()) {
    const double k =
        spring.has_bouc_wen() ? spring.bouc_wen().stiffness_n_per_m() : spring.bilinear().stiffness_n_per_m();
    const auto i = static_cast<Eigen::Index>(spring.dof_i()) - 1;
    stiffness(i, i) += k;
    if (spring.dof_j() == 0) continue;
    const auto j = static_cast<Eigen::Index>(spring.dof_j()) - 1;
    stiffness(j, j) += k;
    stiffness(i, j) -= k;
    stiffness(j, i) -= k;
  }
  return stiffness;
}

}  // namespace rths
