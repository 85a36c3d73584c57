#include "node_numerical/structure/structure.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <Spectra/MatOp/SparseSymMatProd.h>
#include <Spectra/MatOp/SymShiftInvert.h>
#include <Spectra/SymGEigsShiftSolver.h>

#include "common/config/config.hpp"
#include "common/config/matrix_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/dynamics/eigen_problems.hpp"
#include "common/dynamics/matrix_market.hpp"
#include "common/dynamics/structural_damping.hpp"
#include "common/dynamics/structural_modes.hpp"
#include "experiment.pb.h"

namespace rths {

namespace {}  // namespace

namespace {

// The lowest `count` modes of a large model: shift-invert about a shift just below zero (K may be
// singular: a free structure's rigid modes), so that the modes nearest it, the lowest, converge first
// (Spectra, Lanczos on (K - s M)^-1 M in the M inner product). Shapes only when asked for.
Modes shift_invert_modes(const Eigen::SparseMatrix<double>& mass, const Eigen::SparseMatrix<double>& stiffness,
                         int count, bool shapes) {
  const Eigen::Index n = mass.rows();
  using Op = Spectra::SymShiftInvert<double, Eigen::Sparse, Eigen::Sparse>;
  using BOp = Spectra::SparseSymMatProd<double>;
  const double scale = stiffness.diagonal().cwiseAbs().maxCoeff() / mass.diagonal().cwiseAbs().maxCoeff();
  const double shift = -1e-9 * scale;
  Op op(stiffness, mass);
  BOp bop(mass);
  const auto basis = static_cast<Eigen::Index>(std::min<Eigen::Index>(n, std::max<Eigen::Index>(2 * count + 1, 20)));
  Spectra::SymGEigsShiftSolver<Op, BOp, Spectra::GEigsMode::ShiftInvert> solver(op, bop, count, basis, shift);
  solver.init();
  solver.compute(Spectra::SortRule::LargestMagn, 1000, 1e-12);
  if (solver.info() != Spectra::CompInfo::Successful) {
    throw std::invalid_argument("the lowest " + std::to_string(count) + " modes of the " + std::to_string(n) +
                                "-DOF model did not converge (Lanczos, shift-invert about 0)");
  }
  const Eigen::VectorXd values = solver.eigenvalues();
  std::vector<Eigen::Index> order(static_cast<std::size_t>(values.size()));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::sort(order.begin(), order.end(), [&values](Eigen::Index a, Eigen::Index b) { return values(a) < values(b); });
  Modes modes;
  modes.squared_frequencies = values(order);
  if (shapes) {
    const Eigen::MatrixXd vectors = solver.eigenvectors();
    modes.shapes = vectors(Eigen::all, order);
    for (Eigen::Index j = 0; j < modes.shapes.cols(); ++j) {
      modes.shapes.col(j) /= std::sqrt(modes.shapes.col(j).dot(mass * modes.shapes.col(j)));
    }
  }
  return modes;
}

}  // namespace

Eigen::VectorXd lowest_squared_frequencies(const Eigen::SparseMatrix<double>& mass,
                                           const Eigen::SparseMatrix<double>& stiffness, int count) {
  const Eigen::Index n = mass.rows();
  if (count < 1 || count > n) {
    throw std::invalid_argument("lowest_squared_frequencies: " + std::to_string(count) + " modes of a " +
                                std::to_string(n) + "-DOF model");
  }
  if (n <= 200) {  // small: the dense solver is exact and quick
    return squared_frequencies(Eigen::MatrixXd(mass), Eigen::MatrixXd(stiffness)).head(count);
  }
  return shift_invert_modes(mass, stiffness, count, false).squared_frequencies;
}

Modes lowest_modes(const StructuralModel& model, int count) {
  const Eigen::Index n = model.dofs();
  const bool small = n <= 200;
  if (count < 1 || count > (small ? n : n - 1)) {
    throw std::invalid_argument("lowest_modes: " + std::to_string(count) + " modes of a " + std::to_string(n) +
                                "-DOF model; expected 1 to " + std::to_string(small ? n : n - 1));
  }
  if (!small) {
    if (model.is_sparse()) return shift_invert_modes(model.sparse_mass, model.sparse_stiffness, count, true);
    return shift_invert_modes(model.mass.sparseView(), model.stiffness.sparseView(), count, true);
  }
  // K phi = omega^2 M phi as S y = lambda y with K = L L^T, S = L^-1 M L^-T, lambda = 1 / omega^2,
  // phi = L^-T y: symmetric and positive semi-definite, a massless DOF's mode at lambda = 0.
  const Eigen::MatrixXd mass = model.is_sparse() ? Eigen::MatrixXd(model.sparse_mass) : model.mass;
  const Eigen::MatrixXd stiffness = model.is_sparse() ? Eigen::MatrixXd(model.sparse_stiffness) : model.stiffness;
  const Eigen::LLT<Eigen::MatrixXd> llt(stiffness);
  if (llt.info() != Eigen::Success) {
    throw std::invalid_argument(
        "lowest_modes: the stiffness is not positive definite (a free structure's "
        "rigid-body modes?)");
  }
  const Eigen::MatrixXd half = llt.matrixL().solve(mass);  // L^-1 M
  Eigen::MatrixXd s = llt.matrixL().solve(half.transpose());
  s = 0.5 * (s + s.transpose()).eval();
  const SymmetricEigen eigen = symmetric_eigen(s);
  const Eigen::VectorXd& lambda = eigen.values;  // ascending: the lowest frequencies last
  const double tolerance = 1e-12 * lambda(n - 1);
  if (!(lambda(n - count) > tolerance)) {
    throw std::invalid_argument("lowest_modes: " + std::to_string(count) + " modes asked of a model with " +
                                std::to_string((lambda.array() > tolerance).count()) + " DOFs with mass");
  }
  Modes modes;
  modes.squared_frequencies.resize(count);
  modes.shapes.resize(n, count);
  for (int j = 0; j < count; ++j) {
    const Eigen::Index i = n - 1 - j;
    modes.squared_frequencies(j) = 1.0 / lambda(i);
    modes.shapes.col(j) = llt.matrixU().solve(eigen.vectors.col(i)) / std::sqrt(lambda(i));
  }
  return modes;
}

Eigen::VectorXd StructuralModel::natural_frequencies_rad_s() const {
  // A singular (unrestrained) stiffness gives eigenvalues that are zero up to rounding, possibly
  // slightly negative: clamp so a rigid-body mode reads as 0 rad/s rather than NaN.
  return squared_frequencies(mass, stiffness).cwiseMax(0.0).cwiseSqrt();
}

StructuralModel sparse_form(StructuralModel model) {
  if (model.is_sparse()) return model;
  model.sparse_mass = model.mass.sparseView();
  model.sparse_damping = model.damping.sparseView();
  model.sparse_stiffness = model.stiffness.sparseView();
  model.mass = model.damping = model.stiffness = Eigen::MatrixXd();
  return model;
}

StructuralModel dense_form(StructuralModel model) {
  if (!model.is_sparse()) return model;
  model.mass = Eigen::MatrixXd(model.sparse_mass);
  model.damping = Eigen::MatrixXd(model.sparse_damping);
  model.stiffness = Eigen::MatrixXd(model.sparse_stiffness);
  model.sparse_mass = model.sparse_damping = model.sparse_stiffness = Eigen::SparseMatrix<double>();
  return model;
}

Eigen::SparseMatrix<double> rayleigh_damping(const Eigen::SparseMatrix<double>& mass,
                                             const Eigen::SparseMatrix<double>& stiffness, int mode_a, double zeta_a,
                                             int mode_b, double zeta_b) {
  return rayleigh_damping(mass, stiffness, mode_a, zeta_a, mode_b, zeta_b,
                          [&](int count) { return lowest_squared_frequencies(mass, stiffness, count); });
}

namespace {

// The config's hysteretic springs (validated: DOFs within the model, parameters in range).
std::vector<SpringElement> springs_of(const config::Structure& spec) {
  std::vector<SpringElement> springs;
  const std::vector<DofKind> kinds = spec.spring_size() > 0 ? dof_kinds(spec) : std::vector<DofKind>{};
  for (int s = 0; s < spec.spring_size(); ++s) {
    const config::HystereticSpring& c = spec.spring(s);
    SpringElement e;
    e.name = c.name().empty() ? "spring" + std::to_string(s + 1) : c.name();
    e.dof_i = static_cast<Eigen::Index>(c.dof_i()) - 1;
    e.dof_j = static_cast<Eigen::Index>(c.dof_j()) - 1;  // 0, the ground: -1
    e.kind = kinds[c.dof_i() - 1];                       // validated: dof_j's too
    if (c.has_bouc_wen()) {
      const config::BoucWenSpring& b = c.bouc_wen();
      e.law = {HystereticLaw::Kind::kBoucWen,
               b.stiffness_n_per_m(),
               b.yield_force_n(),
               b.post_yield_ratio(),
               b.beta(),
               b.gamma(),
               b.exponent()};
    } else {
      const config::BilinearSpring& b = c.bilinear();
      e.law.kind = HystereticLaw::Kind::kBilinear;
      e.law.stiffness_n_per_m = b.stiffness_n_per_m();
      e.law.yield_force_n = b.yield_force_n();
      e.law.hardening_ratio = b.hardening_ratio();
    }
    springs.push_back(std::move(e));
  }
  return springs;
}

// Each spring's largest tangent k (its initial stiffness, HystereticLaw::largest_tangent) on
// (u_i - u_j) assembled into the stiffness, as an FE program adds an element's: +k on both diagonal
// entries, -k on the two coupling ones (none with the ground).
std::vector<Eigen::Triplet<double>> spring_stiffness(const std::vector<SpringElement>& springs) {
  std::vector<Eigen::Triplet<double>> entries;
  for (const SpringElement& e : springs) {
    const double k = HystereticLaw::largest_tangent(e.law);
    entries.emplace_back(e.dof_i, e.dof_i, k);
    if (e.dof_j < 0) continue;
    entries.emplace_back(e.dof_j, e.dof_j, k);
    entries.emplace_back(e.dof_i, e.dof_j, -k);
    entries.emplace_back(e.dof_j, e.dof_i, -k);
  }
  return entries;
}

void add_spring_stiffness(const std::vector<SpringElement>& springs, Eigen::SparseMatrix<double>& stiffness) {
  Eigen::SparseMatrix<double> added(stiffness.rows(), stiffness.cols());
  const std::vector<Eigen::Triplet<double>> entries = spring_stiffness(springs);
  added.setFromTriplets(entries.begin(), entries.end());
  stiffness += added;
}

void add_spring_stiffness(const std::vector<SpringElement>& springs, Eigen::MatrixXd& stiffness) {
  for (const Eigen::Triplet<double>& t : spring_stiffness(springs)) stiffness(t.row(), t.col()) += t.value();
}

// The damping the structure's oneof names (common/dampings/); nullptr when it names none, a
// legitimate undamped structure (the validator decides whether to allow it).
std::unique_ptr<StructuralDamping> named_damping(const config::Structure& spec) {
  return ComponentFactories<StructuralDamping>::make_member(spec, "damping", ComponentContext{});
}

// The matrices of a structure given sparse, Rayleigh damping from its lowest modes.
void set_sparse_matrices(const config::Structure& spec, StructuralModel& model) {
  const auto dofs = static_cast<Eigen::Index>(spec.dofs());
  const config::SparseMatrices& sparse = spec.sparse();
  model.sparse_mass = to_sparse_matrix(sparse.mass_kg(), spec.dofs());
  model.sparse_stiffness = to_sparse_matrix(sparse.stiffness_n_per_m(), spec.dofs());
  add_spring_stiffness(model.springs, model.sparse_stiffness);
  if (sparse.has_damping_ns_per_m()) {
    model.sparse_damping = to_sparse_matrix(sparse.damping_ns_per_m(), spec.dofs());
  } else if (const std::unique_ptr<StructuralDamping> damping = named_damping(spec)) {
    model.sparse_damping = damping->sparse(model.sparse_mass, model.sparse_stiffness, [&model](int count) {
      return lowest_squared_frequencies(model.sparse_mass, model.sparse_stiffness, count);
    });
  } else {
    model.sparse_damping = Eigen::SparseMatrix<double>(dofs, dofs);
  }
}

void set_dense_matrices(const config::Structure& spec, StructuralModel& model) {
  const auto dofs = static_cast<Eigen::Index>(spec.dofs());
  model.mass = square_matrix(spec.mass_kg(), dofs, "mass_kg");
  model.stiffness = square_matrix(spec.stiffness_n_per_m(), dofs, "stiffness_n_per_m");
  add_spring_stiffness(model.springs, model.stiffness);
  const std::unique_ptr<StructuralDamping> damping = named_damping(spec);
  model.damping = damping == nullptr ? Eigen::MatrixXd(Eigen::MatrixXd::Zero(dofs, dofs))
                                     : damping->dense(model.mass, model.stiffness);
}

}  // namespace

StructuralModel make_structure(const config::Structure& spec) {
  StructuralModel model = make_whole_structure(spec);
  for (const config::StructurePart& part : spec.removed()) {
    const auto n = static_cast<Eigen::Index>(part.equation_size());
    std::vector<Eigen::Index> rows;
    for (const std::uint32_t equation : part.equation()) {
      if (equation < 1 || equation > static_cast<std::uint32_t>(model.dofs())) {
        throw std::invalid_argument("structure.removed.equation: " + std::to_string(equation) + " is outside 1.." +
                                    std::to_string(model.dofs()));
      }
      rows.push_back(static_cast<Eigen::Index>(equation) - 1);
    }
    for (const auto& [values, target, field] :
         {std::tuple{&part.mass_kg(), &model.mass, "mass_kg"},
          std::tuple{&part.damping_ns_per_m(), &model.damping, "damping_ns_per_m"},
          std::tuple{&part.stiffness_n_per_m(), &model.stiffness, "stiffness_n_per_m"}}) {
      if (values->empty()) continue;
      (*target)(rows, rows) -= square_matrix(*values, n, std::string("removed.") + field);
    }
  }
  return model;
}

StructuralModel make_whole_structure(const config::Structure& spec) {
  const auto dofs = static_cast<Eigen::Index>(spec.dofs());
  if (dofs < 1) {
    throw std::invalid_argument("structure.dofs: is " + std::to_string(spec.dofs()) + ", expected at least 1");
  }
  StructuralModel model;
  model.springs = springs_of(spec);
  if (spec.has_sparse()) {
    set_sparse_matrices(spec, model);
  } else {
    set_dense_matrices(spec, model);
  }
  if (spec.ground_influence_size() == 0) {
    // Every DOF moves with the ground: the shear-frame default (seed 002 Eq. 6, Gamma = ones).
    model.ground_influence = Eigen::VectorXd::Ones(dofs);
  } else {
    if (spec.ground_influence_size() != dofs) {
      throw std::invalid_argument("structure.ground_influence: has " + std::to_string(spec.ground_influence_size()) +
                                  " entries, expected dofs = " + std::to_string(dofs));
    }
    model.ground_influence = Eigen::Map<const Eigen::VectorXd>(spec.ground_influence().data(), dofs);
  }
  return model;
}

}  // namespace rths
