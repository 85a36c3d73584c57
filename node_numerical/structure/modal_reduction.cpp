#include "node_numerical/structure/modal_reduction.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <Eigen/SparseCholesky>

#include "common/dynamics/eigen_problems.hpp"
#include "experiment.pb.h"

namespace rths {

namespace {

// A correction whose M-norm falls below this share of its own once the modes and the corrections
// before it are taken out adds nothing to span(T): it is dropped as dependent (an interface DOF whose
// static response the retained modes already hold, or all modes retained).
constexpr double kDependentShare = 1e-8;
// A stiffness whose smallest LDL^T pivot is below this share of its largest is singular to rounding:
// a free structure, whose rigid-body modes have no static response.
constexpr double kSingularPivotShare = 1e-12;

// K^-1 of the model's stiffness, refusing a singular one: its LDL^T pivots' signs are the
// eigenvalues' (Sylvester's law of inertia), a rigid-body mode shows as a pivot of rounding's size.
class StiffnessSolver {
 public:
  explicit StiffnessSolver(const StructuralModel& model) : sparse_(model.is_sparse()) {
    Eigen::VectorXd pivots;
    bool factorised = false;
    if (sparse_) {
      sparse_ldlt_.compute(model.sparse_stiffness);
      factorised = sparse_ldlt_.info() == Eigen::Success;
      if (factorised) pivots = sparse_ldlt_.vectorD();
    } else {
      dense_ldlt_.compute(model.stiffness);
      factorised = dense_ldlt_.info() == Eigen::Success;
      if (factorised) pivots = dense_ldlt_.vectorD();
    }
    if (!factorised || pivots.size() == 0 ||
        !(pivots.minCoeff() > kSingularPivotShare * pivots.cwiseAbs().maxCoeff())) {
      throw std::invalid_argument(
          "structure.reduction: the stiffness is singular or not positive definite (smallest LDL^T pivot " +
          (pivots.size() == 0 ? std::string("none") : std::to_string(pivots.minCoeff())) + ", largest " +
          (pivots.size() == 0 ? std::string("none") : std::to_string(pivots.cwiseAbs().maxCoeff())) +
          "): a free structure's rigid-body modes have no static response to correct with; expected a "
          "restrained structure (or no reduction)");
    }
  }

  [[nodiscard]] Eigen::VectorXd solve(const Eigen::VectorXd& load) const {
    return sparse_ ? Eigen::VectorXd(sparse_ldlt_.solve(load)) : Eigen::VectorXd(dense_ldlt_.solve(load));
  }

 private:
  bool sparse_;
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> sparse_ldlt_;
  Eigen::LDLT<Eigen::MatrixXd> dense_ldlt_;
};

// T^T A T of the model's matrix A (dense or sparse): its projection on the basis T.
Eigen::MatrixXd project(const Eigen::MatrixXd& dense, const Eigen::SparseMatrix<double>& sparse, bool is_sparse,
                        const Eigen::MatrixXd& basis) {
  const Eigen::MatrixXd product = is_sparse ? Eigen::MatrixXd(sparse * basis) : Eigen::MatrixXd(dense * basis);
  Eigen::MatrixXd projected = basis.transpose() * product;
  return 0.5 * (projected + projected.transpose());  // symmetric to rounding
}

}  // namespace

ReducedModel reduce_modally(const StructuralModel& model, std::span<const Eigen::Index> interface_dofs, int modes,
                            bool static_correction) {
  const Eigen::Index n = model.dofs();
  if (modes < 1 || modes > n) {
    throw std::invalid_argument("structure.reduction.modes: is " + std::to_string(modes) + ", expected 1 to the " +
                                "structure's " + std::to_string(n) + " DOFs");
  }
  for (const Eigen::Index d : interface_dofs) {
    if (d < 0 || d >= n) {
      throw std::invalid_argument("structure.reduction: interface DOF " + std::to_string(d + 1) + " is outside 1.." +
                                  std::to_string(n));
    }
  }
  const StiffnessSolver stiffness(model);
  const auto mass_times = [&model](const Eigen::VectorXd& v) -> Eigen::VectorXd {
    return model.is_sparse() ? Eigen::VectorXd(model.sparse_mass * v) : Eigen::VectorXd(model.mass * v);
  };

  const Modes retained = lowest_modes(model, modes);
  std::vector<Eigen::VectorXd> columns;
  columns.reserve(static_cast<std::size_t>(modes) + (static_correction ? interface_dofs.size() + 1 : 0));
  for (Eigen::Index j = 0; j < retained.shapes.cols(); ++j) columns.emplace_back(retained.shapes.col(j));
  int corrections = 0;
  if (static_correction) {
    // Modal truncation augmentation (Dickens et al. 1997): the static response to each load
    // distribution the model feels, less its share in the columns already there, M-normalised: a unit
    // load at each interface DOF (the sites' forces) and the ground's inertia load M Gamma.
    std::vector<Eigen::VectorXd> loads;
    for (const Eigen::Index d : interface_dofs) loads.emplace_back(Eigen::VectorXd::Unit(n, d));
    if (model.ground_influence.cwiseAbs().maxCoeff() > 0.0) loads.emplace_back(mass_times(model.ground_influence));
    for (const Eigen::VectorXd& load : loads) {
      Eigen::VectorXd psi = stiffness.solve(load);
      const double own = std::sqrt(psi.dot(mass_times(psi)));
      for (int pass = 0; pass < 2; ++pass) {  // twice: Gram-Schmidt loses orthogonality once
        const Eigen::VectorXd m_psi = mass_times(psi);
        for (const Eigen::VectorXd& column : columns) psi -= column.dot(m_psi) * column;
      }
      const double remainder = std::sqrt(std::max(psi.dot(mass_times(psi)), 0.0));
      if (!(remainder > kDependentShare * own)) continue;
      columns.emplace_back(psi / remainder);
      ++corrections;
    }
  }
  Eigen::MatrixXd basis(n, static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) basis.col(static_cast<Eigen::Index>(j)) = columns[j];

  // Rayleigh-Ritz on span(T): rotated by the reduced problem's eigenvectors V (V^T M_r V = I), T V
  // gives M_r = I and K_r diagonal. Phi_m is already M-orthonormal and K-orthogonal to the
  // corrections (Phi^T K psi = Phi^T l - Omega^2 Phi^T M K^-1 l = 0), so the lowest m Ritz values are
  // the retained modes' and the rest, on the corrections, lie above omega_m.
  const Eigen::MatrixXd m_r = project(model.mass, model.sparse_mass, model.is_sparse(), basis);
  const Eigen::MatrixXd k_r = project(model.stiffness, model.sparse_stiffness, model.is_sparse(), basis);
  const SymmetricEigen ritz = generalized_symmetric_eigen(k_r, m_r);
  if (!ritz.ok) {
    throw std::invalid_argument(
        "structure.reduction: the reduced eigenproblem failed (a basis that is not "
        "independent)");
  }
  const Eigen::MatrixXd& rotation = ritz.vectors;
  ReducedModel reduced;
  reduced.basis = basis * rotation;
  reduced.modes = modes;
  reduced.corrections = corrections;
  reduced.frequencies_rad_s = ritz.values.cwiseMax(0.0).cwiseSqrt();
  reduced.highest_mode_rad_s = std::sqrt(std::max(retained.squared_frequencies(modes - 1), 0.0));
  const auto r = reduced.basis.cols();
  reduced.model.mass = Eigen::MatrixXd::Identity(r, r);
  reduced.model.stiffness = ritz.values.asDiagonal();
  reduced.model.damping = project(model.damping, model.sparse_damping, model.is_sparse(), reduced.basis);
  // Gamma_r = M_r^-1 T^T M Gamma with M_r = I.
  reduced.model.ground_influence = reduced.basis.transpose() * mass_times(model.ground_influence);
  return reduced;
}

std::vector<Eigen::Index> interface_dofs(const config::Experiment& cfg) {
  std::vector<Eigen::Index> dofs;
  const auto n = static_cast<Eigen::Index>(cfg.structure().dofs());
  for (const config::Site& site : cfg.site()) {
    const auto channels = static_cast<Eigen::Index>(site.channel_size());
    for (Eigen::Index d = 0; d < n; ++d) {
      for (Eigen::Index c = 0; c < channels; ++c) {
        const auto at = static_cast<int>(d * channels + c);
        if (at < site.influence_size() && site.influence(at) != 0.0) dofs.push_back(d);
      }
    }
  }
  std::sort(dofs.begin(), dofs.end());
  dofs.erase(std::unique(dofs.begin(), dofs.end()), dofs.end());
  return dofs;
}

ReducedModel reduce_structure(const config::Experiment& cfg, const StructuralModel& model) {
  const config::ModalReduction& spec = cfg.structure().reduction();
  const std::vector<Eigen::Index> dofs = interface_dofs(cfg);
  return reduce_modally(model, dofs, static_cast<int>(spec.modes()), spec.static_correction());
}

Eigen::MatrixXd reduced_influence(const ReducedModel& reduced, const Eigen::MatrixXd& influence) {
  return reduced.basis.transpose() * influence;
}

}  // namespace rths
