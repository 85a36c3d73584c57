#pragma once

#include <span>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include "node_numerical/structure/structure.hpp"

namespace rths::config {
class Experiment;
}  // namespace rths::config

namespace rths {

// A structure reduced to a Ritz basis T (dofs x r): its physical motion is x = T q. The reduced model
// is dense, re-diagonalised so that M_r = I and K_r = diag(omega_r^2) (a Rayleigh-Ritz solve of the
// r x r problem rotates T): each reduced DOF is one decoupled mode or pseudo-mode of the Ritz space,
// and a classical (Rayleigh) damping stays diagonal. Its ground influence is
// Gamma_r = M_r^-1 T^T M Gamma, so that the integrators' -M_r Gamma_r a_g is the projected load
// -T^T M Gamma a_g; a site's influence Lambda becomes T^T Lambda.
struct ReducedModel {
  StructuralModel model;
  Eigen::MatrixXd basis;              // T, dofs x (modes + corrections)
  int modes = 0;                      // the retained modes, the first columns' span
  int corrections = 0;                // static correction vectors kept (dependent ones dropped)
  Eigen::VectorXd frequencies_rad_s;  // of the reduced model, ascending: the retained modes first
  double highest_mode_rad_s = 0.0;    // omega_m, the highest retained mode of the full model
};

// Modal truncation augmentation (Dickens, Nakagawa and Wittbrodt 1997, "A critique of mode
// acceleration and modal truncation augmentation methods for modal response analysis", Computers &
// Structures 62(6)): T = [Phi_m, psi], Phi_m the lowest `modes` modes, psi the static responses
// K^-1 l_j to a unit load at each interface DOF and K^-1 M Gamma to the ground's inertia load, made
// M-orthogonal to Phi_m and to each other (Gram-Schmidt in the M inner product, twice), a vector whose
// remainder is below 1e-8 of its M-norm dropped as dependent. The static response to any load on the
// interface DOFs, and to a steady ground acceleration, then lies in span(T), so the reduced model's
// static displacement is the full model's; without psi (static_correction false) the truncated modes'
// share of it is lost. Throws std::invalid_argument, naming
// structure.reduction, when K is singular (a free structure: rigid-body modes have no static
// response), modes is out of range (1..dofs; all DOFs only where lowest_modes finds them all) or an interface DOF is
// outside the model.
ReducedModel reduce_modally(const StructuralModel& model, std::span<const Eigen::Index> interface_dofs, int modes,
                            bool static_correction);

// The DOFs the config's sites act on (nonzero influence rows), ascending, from 0.
std::vector<Eigen::Index> interface_dofs(const config::Experiment& cfg);

// reduce_modally as the config's structure.reduction asks, at its sites' interface DOFs.
ReducedModel reduce_structure(const config::Experiment& cfg, const StructuralModel& model);

// T^T Lambda: a site's influence on the reduced model.
Eigen::MatrixXd reduced_influence(const ReducedModel& reduced, const Eigen::MatrixXd& influence);

}  // namespace rths
