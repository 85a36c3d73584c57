#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/repeated_field.h>
#include <Eigen/Dense>

#include "common/core/problems.hpp"

namespace rths::config {
class Structure;
}  // namespace rths::config

// The rules of a structure's dense matrices that the config validator and the structure's damping
// components (common/dampings/) share: sizes, symmetry, definiteness.
namespace rths {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Symmetry of M and K is checked relative to the largest entry: the matrices come from tables
// typed by hand or converted units, so exact equality would reject rounding in the last digit.
constexpr double kSymmetryTolerance = 1e-9;
// A stiffness or damping eigenvalue below -1e-9 x the largest is negative beyond rounding: a
// negative-definite stiffness feeds energy in and the run grows without bound (to 1e303 m), but a
// semi-definite one (a rigid-body mode held only by the sites' specimens) is physical and allowed.
constexpr double kEigenvalueTolerance = 1e-9;

// A dofs x dofs matrix stored row-major in a repeated field: its entries (ends the section otherwise).
void check_square(const Checker& check, const std::string& path, int entries, std::uint64_t dofs);
// The dofs x dofs matrix of a repeated field check_square accepted.
RowMajorMatrix to_matrix(const google::protobuf::RepeatedField<double>& values, std::uint32_t dofs);
// The same where no rule has checked the size: a constructor's guard of its memory, throwing
// std::invalid_argument "structure.FIELD: has N entries, expected dofs*dofs = M (row-major)".
Eigen::MatrixXd square_matrix(const google::protobuf::RepeatedField<double>& values, Eigen::Index dofs,
                              std::string_view field);
void check_symmetric(const Checker& check, const std::string& path, const RowMajorMatrix& matrix);
// Eigenvalues of a symmetric matrix, ascending.
Eigen::VectorXd eigenvalues(const RowMajorMatrix& matrix);
// No eigenvalue negative beyond rounding (kEigenvalueTolerance of the largest in magnitude); `what`
// names the matrix ("damping matrix").
void check_not_negative(const Checker& check, const std::string& path, const RowMajorMatrix& matrix,
                        std::string_view what);
// A dense structure's stiffness with its springs' initial stiffness added (the model holds each one's
// largest tangent, k or more: the same verdict on positive, distinct frequencies), from a config
// whose sizes and springs passed their rules.
RowMajorMatrix stiffness_with_springs(const config::Structure& structure);

}  // namespace rths
