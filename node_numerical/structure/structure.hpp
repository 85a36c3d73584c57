#pragma once

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <vector>

#include "common/dynamics/structural_modes.hpp"
#include "node_numerical/structure/hysteretic_spring.hpp"

namespace rths::config {
class Structure;
}  // namespace rths::config

namespace rths {

// Linear MDOF numerical substructure M x'' + C x' + K x = F - M Gamma a_g (seed 002 Eq. 6), held
// dense (mass, damping, stiffness) or, at an FE model's size, sparse (sparse_mass, sparse_damping,
// sparse_stiffness, every one n x n; the dense ones then empty): the integrators then multiply and
// factorise sparse.
struct StructuralModel {
  Eigen::MatrixXd mass;
  Eigen::MatrixXd damping;
  Eigen::MatrixXd stiffness;
  Eigen::SparseMatrix<double> sparse_mass;
  Eigen::SparseMatrix<double> sparse_damping;
  Eigen::SparseMatrix<double> sparse_stiffness;
  Eigen::VectorXd ground_influence;
  // Hysteretic springs: their initial stiffness is already in the stiffness above; an integrator
  // adds each one's force beyond that line, f(u) - k u, to the step's force (make_chen_ricles,
  // make_kr_alpha; the others refuse a model with springs).
  std::vector<SpringElement> springs;

  [[nodiscard]] bool is_sparse() const { return sparse_mass.rows() > 0; }
  [[nodiscard]] Eigen::Index dofs() const { return is_sparse() ? sparse_mass.rows() : mass.rows(); }
  // Undamped natural frequencies (rad/s), ascending.
  [[nodiscard]] Eigen::VectorXd natural_frequencies_rad_s() const;
};

// The same model held sparse (the dense matrices moved into sparse ones, the dense ones emptied), or
// dense: to compare the two forms, or to hold a small sparse model dense.
StructuralModel sparse_form(StructuralModel model);
StructuralModel dense_form(StructuralModel model);

// Rayleigh C = a0 M + a1 K with zeta at two modes (1-based mode numbers) of a sparse model, its modes
// from lowest_squared_frequencies (the dense one is in common's structural_modes.hpp).
Eigen::SparseMatrix<double> rayleigh_damping(const Eigen::SparseMatrix<double>& mass,
                                             const Eigen::SparseMatrix<double>& stiffness, int mode_a, double zeta_a,
                                             int mode_b, double zeta_b);
// The squared natural frequencies (rad^2/s^2) of a sparse model's `count` lowest modes, ascending
// (Lanczos with shift-invert, Spectra; dense below 200 DOFs).
Eigen::VectorXd lowest_squared_frequencies(const Eigen::SparseMatrix<double>& mass,
                                           const Eigen::SparseMatrix<double>& stiffness, int count);

// The modes of K phi = omega^2 M phi: the lowest `count`, ascending, each shape M-normalised
// (phi^T M phi = 1).
struct Modes {
  Eigen::VectorXd squared_frequencies;  // rad^2/s^2
  Eigen::MatrixXd shapes;               // dofs x count
};

// The lowest `count` modes of a model with a positive-definite stiffness: Lanczos with shift-invert
// about 0 (Spectra) above 200 DOFs, a dense symmetric eigensolver below (on L^-1 M L^-T with
// K = L L^T, so that massless DOFs, modes of infinite frequency, are never among the lowest). Throws
// std::invalid_argument when count is out of 1..dofs - 1 (all DOFs below 200 DOFs), more than the DOFs
// with mass, or the solver does not converge.
Modes lowest_modes(const StructuralModel& model, int count);

// The numerical substructure from a config the loader has validated: the structure's matrices and
// damping minus every removed part (seed 000 Eq. 5).
StructuralModel make_structure(const config::Structure& spec);
// The whole structure the config describes, before any part is removed: the monolithic reference of
// a structure with removed parts.
StructuralModel make_whole_structure(const config::Structure& spec);

struct StructuralState {
  Eigen::VectorXd displacement;  // relative to the ground (m)
  Eigen::VectorXd velocity;      // m/s
  Eigen::VectorXd acceleration;  // relative, m/s^2
};

}  // namespace rths
