// A damping matrix given entry by entry (config Structure's damping_ns_per_m, a Matrix): C itself,
// dofs x dofs, row-major (N s/m), for a dense structure.
#include <google/protobuf/repeated_field.h>

#include <memory>

#include "common/config/matrix_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/dynamics/structural_damping.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

class DampingMatrix final : public StructuralDamping {
 public:
  explicit DampingMatrix(const config::Matrix& matrix) : values_(matrix.value()) {}

  [[nodiscard]] Eigen::MatrixXd dense(const Eigen::MatrixXd& mass,
                                      const Eigen::MatrixXd& /*stiffness*/) const override {
    return square_matrix(values_, mass.rows(), kField);
  }
  // A sparse structure takes its damping matrix in sparse { damping_ns_per_m } (the rules refuse this one).
  [[nodiscard]] Eigen::SparseMatrix<double> sparse(const Eigen::SparseMatrix<double>& mass,
                                                   const Eigen::SparseMatrix<double>& /*stiffness*/,
                                                   const LowestSquaredFrequencies& /*lowest*/) const override {
    return square_matrix(values_, mass.rows(), kField).sparseView();
  }

 private:
  // The one guard beside the rules below (square_matrix's): dofs x dofs entries, what C is read from.
  static constexpr const char* kField = "damping_ns_per_m.value";
  google::protobuf::RepeatedField<double> values_;
};

// Every number is finite by the time a component's rules run: the config validator checks them all
// first, and the structure's mass and stiffness before its damping.
void validate(const config::Matrix& matrix, const ComponentContext& context, const Checker& check) {
  const std::uint32_t dofs = damped_structure(context).dofs();
  check_square(check, "value", matrix.value_size(), dofs);
  const RowMajorMatrix damping = to_matrix(matrix.value(), dofs);
  check_symmetric(check, "value", damping);
  check_not_negative(check, "value", damping, "damping matrix");
}

std::unique_ptr<StructuralDamping> make(const config::Matrix& matrix, const ComponentContext& /*context*/) {
  return std::make_unique<DampingMatrix>(matrix);
}

[[maybe_unused]] const bool kDampingMatrixRegistered =
    register_component<config::Matrix, StructuralDamping>(validate, make);

}  // namespace
}  // namespace rths
