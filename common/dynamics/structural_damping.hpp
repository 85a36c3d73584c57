#pragma once

#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include "common/dynamics/structural_modes.hpp"

namespace rths {

struct ComponentContext;
namespace config {
class Structure;
}  // namespace config

// The damping a structure's oneof names (damping_ns_per_m, rayleigh): its matrix C, from the
// structure's mass and stiffness (the springs' initial stiffness in it). One registered component per
// member of the oneof (common/dampings/, docs/architecture.md §9); a structure that names none is
// undamped.
class StructuralDamping {
 public:
  StructuralDamping() = default;
  StructuralDamping(const StructuralDamping&) = delete;
  StructuralDamping& operator=(const StructuralDamping&) = delete;
  StructuralDamping(StructuralDamping&&) = delete;
  StructuralDamping& operator=(StructuralDamping&&) = delete;
  virtual ~StructuralDamping() = default;

  // C of a dense structure.
  [[nodiscard]] virtual Eigen::MatrixXd dense(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness) const = 0;
  // C of a sparse one, whose lowest modes' squared frequencies `lowest` gives.
  [[nodiscard]] virtual Eigen::SparseMatrix<double> sparse(const Eigen::SparseMatrix<double>& mass,
                                                           const Eigen::SparseMatrix<double>& stiffness,
                                                           const LowestSquaredFrequencies& lowest) const = 0;
};

// The structure whose damping a component is (ComponentContext::holder, which the registry sets):
// what its rules read the structure's size and matrices from. A std::logic_error without one.
const config::Structure& damped_structure(const ComponentContext& context);

}  // namespace rths
