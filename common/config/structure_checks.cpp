// The rules of a structure (proto/structure.proto, Structure): its size, its matrices dense or
// sparse (sizes, symmetry, definiteness), the removed parts, the hysteretic springs, the recorded DOFs,
// the DOFs' names and kinds, and its modal reduction. The config validator (config_validate.cpp) runs
// them as its structure section; the damping's own rules are its component's (common/dampings/).
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/config/config.hpp"
#include "common/config/matrix_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "common/dynamics/matrix_market.hpp"
#include "common/dynamics/structural_modes.hpp"
#include "config_checks.hpp"

namespace rths::validation {
namespace {

// A mass eigenvalue below 1e-12 x the largest leaves every solve with M without a correct digit.
constexpr double kMassConditionLimit = 1e-12;

// The dense matrices of a structure: sizes, symmetry, definiteness, damping and the removed parts.
void check_dense_matrices(const config::Structure& structure, config::Integrator integrator, const Checker& check) {
  const std::uint32_t dofs = structure.dofs();
  check_square(check, "structure.mass_kg", structure.mass_kg_size(), dofs);
  const RowMajorMatrix mass = to_matrix(structure.mass_kg(), dofs);
  check_symmetric(check, "structure.mass_kg", mass);
  check_square(check, "structure.stiffness_n_per_m", structure.stiffness_n_per_m_size(), dofs);
  const RowMajorMatrix given_stiffness = to_matrix(structure.stiffness_n_per_m(), dofs);
  check_symmetric(check, "structure.stiffness_n_per_m", given_stiffness);
  check_not_negative(check, "structure.stiffness_n_per_m", given_stiffness, "stiffness matrix");
  // The springs' initial stiffness joins it (checked already), for the massless DOFs below.
  const RowMajorMatrix stiffness = stiffness_with_springs(structure);

  // Massless DOFs (an FE export's rotations: zero rows and columns of M) follow the others statically;
  // only Newmark, which solves with K + a0 M + a1 C, can step them, and only when stiffness holds them.
  const std::vector<Eigen::Index> massless = massless_dofs(mass);
  std::vector<Eigen::Index> inertial;
  for (Eigen::Index i = 0; i < mass.rows(); ++i) {
    if (!std::binary_search(massless.begin(), massless.end(), i)) inertial.push_back(i);
  }
  if (!massless.empty() && !inertial.empty()) {
    check.require(integrator == config::NEWMARK_AVERAGE_ACCELERATION, "structure.mass_kg",
                  fmt::format("has {} massless DOF(s) (the first is DOF {}); expected integrator: "
                              "NEWMARK_AVERAGE_ACCELERATION, the integrator that steps massless DOFs",
                              massless.size(), massless.front() + 1));
    const RowMajorMatrix held = stiffness(massless, massless);
    const Eigen::VectorXd held_values = eigenvalues(held);
    check.require(held_values(0) > 1e-12 * std::abs(held_values(held_values.size() - 1)), "structure.stiffness_n_per_m",
                  fmt::format("is singular on the {} massless DOF(s) (smallest eigenvalue {:.6g}); expected every "
                              "massless DOF held by stiffness",
                              massless.size(), held_values(0)));
  }
  // The integrators solve with the mass on the DOFs that have one; a negative-mass DOF has no
  // solution, and a nearly massless one no accurate solution.
  const RowMajorMatrix inertial_mass =
      inertial.empty() ? RowMajorMatrix(mass) : RowMajorMatrix(mass(inertial, inertial));
  const Eigen::VectorXd mass_values = eigenvalues(inertial_mass);
  if (Eigen::LLT<RowMajorMatrix> cholesky(inertial_mass); cholesky.info() != Eigen::Success || !(mass_values(0) > 0)) {
    check.fail("structure.mass_kg", fmt::format("is not positive definite (smallest eigenvalue {:.6g}); expected a "
                                                "symmetric positive-definite mass matrix on the DOFs with mass",
                                                mass_values(0)));
  }
  check.require(mass_values(0) > kMassConditionLimit * mass_values(mass_values.size() - 1), "structure.mass_kg",
                fmt::format("is not positive definite beyond rounding (smallest eigenvalue {:.6g} is below {:g} of the "
                            "largest, {:.6g}); expected a mass on every DOF with mass",
                            mass_values(0), kMassConditionLimit, mass_values(mass_values.size() - 1)));

  // The damping the oneof names, by the rules registered for it (common/dampings/); none: undamped
  // (the specimens may be the only damping).
  check_component(structure, "damping", ComponentContext{}, check.at("structure"));

  for (int p = 0; p < structure.removed_size(); ++p) {
    const config::StructurePart& part = structure.removed(p);
    const std::string at = element("structure.removed", p);
    const int n = part.equation_size();
    check.require(n >= 1, child(at, "equation"), "missing; expected the equations (from 1) the part sits on");
    for (int e = 0; e < n; ++e) {
      const std::uint32_t equation = part.equation(e);
      check.require(equation >= 1 && equation <= dofs, element(child(at, "equation"), e),
                    fmt::format("is {}, expected an equation from 1 to dofs = {}", equation, dofs));
      for (int f = 0; f < e; ++f) {
        check.require(part.equation(f) != equation, element(child(at, "equation"), e),
                      fmt::format("is {} like equation[{}]; expected each equation once", equation, f));
      }
    }
    for (const auto& [field, values] :
         {std::pair{"mass_kg", &part.mass_kg()}, std::pair{"damping_ns_per_m", &part.damping_ns_per_m()},
          std::pair{"stiffness_n_per_m", &part.stiffness_n_per_m()}}) {
      if (values->empty()) continue;
      check_square(check, child(at, field), values->size(), static_cast<std::uint64_t>(n));
      check_symmetric(check, child(at, field), to_matrix(*values, static_cast<std::uint32_t>(n)));
    }
  }
}

// Sparse entries: as many rows, columns and values, every one within the matrix.
Eigen::SparseMatrix<double> sparse_matrix(const config::SparseMatrix& m, const std::string& path, std::uint32_t dofs,
                                          const Checker& check) {
  try {
    return to_sparse_matrix(m, dofs);
  } catch (const ConfigError& e) {
    check.fail(path, e.what());
  }
}

void check_sparse_symmetric(const Checker& check, const std::string& path, const Eigen::SparseMatrix<double>& m) {
  const Eigen::SparseMatrix<double> transpose = m.transpose();
  const Eigen::SparseMatrix<double> difference = m - transpose;
  if (m.nonZeros() == 0) return;  // a zero matrix (an all-zero damping file) is symmetric
  const double scale = m.coeffs().cwiseAbs().maxCoeff();
  for (Eigen::Index col = 0; col < difference.outerSize(); ++col) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(difference, col); it; ++it) {
      if (std::abs(it.value()) <= kSymmetryTolerance * scale) continue;
      check.fail(path, fmt::format("is not symmetric: entry (row {}, column {}) is {} but (row {}, column {}) is {}; "
                                   "expected a symmetric matrix (relative tolerance {})",
                                   it.row() + 1, it.col() + 1, m.coeff(it.row(), it.col()), it.col() + 1, it.row() + 1,
                                   m.coeff(it.col(), it.row()), kSymmetryTolerance));
    }
  }
}

// The pivots of a sparse LDL^T: their signs are those of the eigenvalues (Sylvester's law of
// inertia), which a sparse model cannot afford to compute all of. Empty when the factorisation met
// a zero pivot (a singular matrix).
Eigen::VectorXd ldlt_pivots(const Eigen::SparseMatrix<double>& m) {
  const Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(m);
  if (ldlt.info() != Eigen::Success) return {};
  return ldlt.vectorD();
}

// The sparse matrices of a structure: entries within the matrix, symmetric, a positive-definite
// mass (every DOF with mass: sparse models hold no massless DOFs), no negative stiffness or damping.
void check_sparse_matrices(const config::Structure& structure, config::Integrator integrator, const Checker& check) {
  const std::uint32_t dofs = structure.dofs();
  const config::SparseMatrices& sparse = structure.sparse();
  check.require(
      structure.mass_kg_size() == 0 && structure.stiffness_n_per_m_size() == 0 && !structure.has_damping_ns_per_m(),
      "structure.sparse",
      "given with mass_kg, stiffness_n_per_m or damping_ns_per_m; expected the "
      "matrices either dense or sparse");
  check.require(sparse.has_damping_ns_per_m() ? !structure.has_rayleigh() : true, "structure.sparse.damping_ns_per_m",
                "given with structure.rayleigh; expected one damping");
  check.require(structure.removed_size() == 0, "structure.removed",
                "given with a sparse structure; expected the numerical substructure's own matrices (removing parts "
                "is for dense models)");
  check.require(integrator != config::NEWMARK_AVERAGE_ACCELERATION, "integrator",
                "is NEWMARK_AVERAGE_ACCELERATION, which steps dense models only; expected GENERALIZED_ALPHA with "
                "rho_infinity: 1 (the same average-acceleration method), CHEN_RICLES, KR_ALPHA or RK4");
  for (const auto& [field, given] :
       {std::pair{"mass_kg", sparse.has_mass_kg()}, std::pair{"stiffness_n_per_m", sparse.has_stiffness_n_per_m()}}) {
    check.require(given, child("structure.sparse", field), "missing; expected the matrix's entries");
  }
  const Eigen::SparseMatrix<double> mass = sparse_matrix(sparse.mass_kg(), "structure.sparse.mass_kg", dofs, check);
  check_sparse_symmetric(check, "structure.sparse.mass_kg", mass);
  const Eigen::VectorXd mass_pivots = ldlt_pivots(mass);
  if (mass_pivots.size() == 0 || !(mass_pivots.minCoeff() > kMassConditionLimit * mass_pivots.cwiseAbs().maxCoeff())) {
    check.fail("structure.sparse.mass_kg",
               mass_pivots.size() == 0
                   ? std::string("is singular; expected a symmetric positive-definite mass matrix (a sparse model "
                                 "needs mass on every DOF: condense massless DOFs first)")
                   : fmt::format("is not positive definite (smallest LDL^T pivot {:.6g}, largest {:.6g}); expected a "
                                 "symmetric positive-definite mass matrix, with mass on every DOF",
                                 mass_pivots.minCoeff(), mass_pivots.cwiseAbs().maxCoeff()));
  }
  for (const auto& [field, given, matrix] :
       {std::tuple{"stiffness_n_per_m", true, &sparse.stiffness_n_per_m()},
        std::tuple{"damping_ns_per_m", sparse.has_damping_ns_per_m(), &sparse.damping_ns_per_m()}}) {
    if (!given) continue;
    const std::string path = child("structure.sparse", field);
    const Eigen::SparseMatrix<double> m = sparse_matrix(*matrix, path, dofs, check);
    check_sparse_symmetric(check, path, m);
    if (m.nonZeros() == 0) continue;  // zero: semi-definite
    // Semi-definite: shifted by a trace of the mass, sigma M with sigma kEigenvalueTolerance of the
    // matrix's scale, it is positive definite, every pivot positive; an indefinite one keeps a
    // negative pivot or breaks down (a singular matrix alone would break down unshifted).
    const double sigma =
        kEigenvalueTolerance * m.diagonal().cwiseAbs().maxCoeff() / mass.diagonal().cwiseAbs().maxCoeff();
    const Eigen::VectorXd pivots = ldlt_pivots(Eigen::SparseMatrix<double>(m + sigma * mass));
    if (pivots.size() == 0 || !(pivots.minCoeff() > 0.0)) {
      check.fail(path, fmt::format(
                           "has a negative eigenvalue (an LDL^T pivot of it shifted by {:.3g} M is {}); expected "
                           "a positive semi-definite matrix (a negative one feeds energy into the structure and "
                           "the response grows without bound)",
                           sigma, pivots.size() == 0 ? std::string("zero") : fmt::format("{:.6g}", pivots.minCoeff())));
    }
  }
  // Its Rayleigh damping (damping_ns_per_m is refused above), by the rules registered for it.
  check_component(structure, "damping", ComponentContext{}, check.at("structure"));
}

// Hysteretic springs: DOFs within the model, a law with parameters that make a dissipating loop, an
// integrator explicit in displacement, names usable as CSV columns.
void check_springs(const config::Structure& structure, config::Integrator integrator, const Checker& check) {
  if (structure.spring_size() == 0) return;
  check.require(integrator == config::CHEN_RICLES || integrator == config::KR_ALPHA, "integrator",
                fmt::format("is {}, but structure.spring needs the step's displacement before its force (no "
                            "iteration); expected CHEN_RICLES or KR_ALPHA",
                            config::Integrator_Name(integrator)));
  check.require(!structure.has_reduction(), "structure.reduction",
                "given with structure.spring; expected one of them (a modal reduction holds a linear model: its "
                "modes do not follow a spring that yields)");
  check.require(structure.removed_size() == 0, "structure.removed",
                "given with structure.spring; expected the numerical substructure's own matrices (springs are "
                "elements of the numerical model)");
  const std::uint32_t dofs = structure.dofs();
  std::unordered_map<std::string, int> first_of;
  for (int s = 0; s < structure.spring_size(); ++s) {
    const config::HystereticSpring& spring = structure.spring(s);
    const std::string at = element("structure.spring", s);
    const std::string name = spring.name().empty() ? fmt::format("spring{}", s + 1) : spring.name();
    if (const std::string problem = column_name_problem(name); !problem.empty()) check.fail(child(at, "name"), problem);
    if (const auto [other, fresh] = first_of.emplace(name, s); !fresh) {
      check.fail(child(at, "name"),
                 fmt::format("\"{}\" is also structure.spring[{}]'s; expected distinct names", name, other->second));
    }
    // Its columns us_NAME and fs_NAME must not be a DOF's (the DOFs' columns are their names).
    for (const std::string& column : {"us_" + name, "fs_" + name}) {
      if (std::find(structure.dof_name().begin(), structure.dof_name().end(), column) != structure.dof_name().end()) {
        check.fail(child(at, "name"),
                   fmt::format("\"{}\" would record its state in column \"{}\", which is also a DOF's name "
                               "(structure.dof_name); expected names whose columns differ",
                               name, column));
      }
    }
    check.require(spring.dof_i() >= 1 && spring.dof_i() <= dofs, child(at, "dof_i"),
                  fmt::format("is {}, expected a DOF from 1 to dofs = {}", spring.dof_i(), dofs));
    check.require(spring.dof_j() <= dofs && spring.dof_j() != spring.dof_i(), child(at, "dof_j"),
                  fmt::format("is {}, expected 0 (the ground) or a DOF from 1 to dofs = {} other than dof_i",
                              spring.dof_j(), dofs));
    check.require(spring.law_case() != config::HystereticSpring::LAW_NOT_SET, at,
                  "has no law; expected bilinear { stiffness_n_per_m: ... yield_force_n: ... hardening_ratio: ... } "
                  "or bouc_wen { ... }");
    const bool bouc_wen = spring.has_bouc_wen();
    const std::string law = child(at, bouc_wen ? "bouc_wen" : "bilinear");
    const double stiffness = bouc_wen ? spring.bouc_wen().stiffness_n_per_m() : spring.bilinear().stiffness_n_per_m();
    const double yield = bouc_wen ? spring.bouc_wen().yield_force_n() : spring.bilinear().yield_force_n();
    const double ratio = bouc_wen ? spring.bouc_wen().post_yield_ratio() : spring.bilinear().hardening_ratio();
    check.require(stiffness > 0.0, child(law, "stiffness_n_per_m"),
                  fmt::format("is {}, expected the spring's initial stiffness > 0", stiffness));
    check.require(yield > 0.0, child(law, "yield_force_n"), fmt::format("is {}, expected a yield force > 0", yield));
    check.require(ratio >= 0.0 && ratio < 1.0, child(law, bouc_wen ? "post_yield_ratio" : "hardening_ratio"),
                  fmt::format("is {}, expected the post-yield stiffness over the initial, 0 to below 1", ratio));
    if (!bouc_wen) continue;
    const config::BoucWenSpring& b = spring.bouc_wen();
    // Constantinou and Adnane (1987): beta > 0 and -beta <= gamma <= beta make the loop dissipate;
    // gamma = -beta left out (z never saturates: the unloading stiffness has no bound).
    check.require(b.beta() > 0.0, child(law, "beta"), fmt::format("is {}, expected > 0", b.beta()));
    check.require(b.gamma() > -b.beta() && b.gamma() <= b.beta(), child(law, "gamma"),
                  fmt::format("is {}, expected -beta < gamma <= beta (beta is {}): a loop that dissipates energy, "
                              "with a bounded unloading stiffness",
                              b.gamma(), b.beta()));
    check.require(b.exponent() >= 1.0 && b.exponent() <= 100.0, child(law, "exponent"),
                  fmt::format("is {}, expected 1 to 100 (the sharpness of the yield)", b.exponent()));
  }
}

}  // namespace

void check_structure(const config::Structure& structure, config::Integrator integrator, const Checker& check) {
  check.require(structure.has_dofs(), "structure.dofs", "missing; expected the number of degrees of freedom (>= 1)");
  const std::uint32_t dofs = structure.dofs();
  check.require(dofs >= 1, "structure.dofs", "is 0, expected the number of degrees of freedom (>= 1)");
  // Before anything of that size is made (the sparse matrices, the record's columns).
  check.require(dofs <= kMaxDofs, "structure.dofs",
                fmt::format("is {}, expected at most {} degrees of freedom", dofs, kMaxDofs));

  check_springs(structure, integrator, check);
  if (structure.has_sparse()) {
    check_sparse_matrices(structure, integrator, check);
  } else {
    check_dense_matrices(structure, integrator, check);
  }

  const int ground = structure.ground_influence_size();
  check.require(ground == 0 || static_cast<std::uint32_t>(ground) == dofs, "structure.ground_influence",
                fmt::format("has {} entries, expected none (a column of ones) or dofs = {}", ground, dofs));

  // (Messages are formatted only on failure here too.)
  std::vector<bool> recorded(dofs, false);
  for (int i = 0; i < structure.record_dof_size(); ++i) {
    const std::uint32_t d = structure.record_dof(i);
    if (d < 1 || d > dofs) {
      check.fail(element("structure.record_dof", i), fmt::format("is {}, expected a DOF from 1 to dofs = {}", d, dofs));
    }
    if (recorded[d - 1]) {
      check.fail(element("structure.record_dof", i), fmt::format("is {} again; expected each DOF once", d));
    }
    recorded[d - 1] = true;
  }

  const int names = structure.dof_name_size();
  check.require(names == 0 || static_cast<std::uint32_t>(names) == dofs, "structure.dof_name",
                fmt::format("has {} entries, expected none (x1..x{}) or dofs = {}", names, dofs, dofs));
  // The names head CSV columns.
  // (Messages are formatted only on failure: a finite-element model has thousands of names.)
  std::unordered_map<std::string_view, int> first_of;
  for (int i = 0; i < names; ++i) {
    const std::string& name = structure.dof_name(i);
    if (name.empty()) {
      check.fail(element("structure.dof_name", i), "is empty; expected a name for the DOF's columns in the results");
    }
    if (const std::string problem = column_name_problem(name); !problem.empty()) {
      check.fail(element("structure.dof_name", i), problem);
    }
    if (const auto [at, fresh] = first_of.emplace(name, i); !fresh) {
      check.fail(element("structure.dof_name", i),
                 fmt::format("\"{}\" is also dof_name[{}]; expected distinct names", name, at->second));
    }
  }

  const int kinds = structure.dof_kind_size();
  check.require(
      kinds == 0 || static_cast<std::uint32_t>(kinds) == dofs, "structure.dof_kind",
      fmt::format("has {} entries, expected none (the DOFs' names decide, docs/models.md) or dofs = {}", kinds, dofs));
  // A spring's deformation is one quantity: a length or an angle, not their difference.
  const std::vector<DofKind> kind = dof_kinds(structure);
  for (int s = 0; s < structure.spring_size(); ++s) {
    const config::HystereticSpring& spring = structure.spring(s);
    if (spring.dof_j() == 0 || kind[spring.dof_i() - 1] == kind[spring.dof_j() - 1]) continue;
    check.fail(child(element("structure.spring", s), "dof_j"),
               fmt::format("is a {}, dof_i a {}; expected two DOFs of one kind (structure.dof_kind)",
                           kind[spring.dof_j() - 1] == DofKind::kRotation ? "rotation" : "translation",
                           kind[spring.dof_i() - 1] == DofKind::kRotation ? "rotation" : "translation"));
  }
}

// structure.reduction (docs/models.md, "Modal reduction"): fewer modes than DOFs, a restrained
// structure (the static corrections are K^-1 l), and nothing that needs the whole structure in the
// hybrid run.
void check_reduction(const config::Experiment& experiment, const Checker& check) {
  const config::Structure& structure = experiment.structure();
  const config::ModalReduction& reduction = structure.reduction();
  const std::uint32_t dofs = structure.dofs();
  check.require(reduction.has_modes(), "structure.reduction.modes",
                fmt::format("missing; expected the number of modes to keep, 1 to {} (dofs - 1)", dofs - 1));
  check.require(reduction.modes() >= 1 && reduction.modes() < dofs, "structure.reduction.modes",
                fmt::format("is {}, expected 1 to {} (fewer modes than the structure's {} DOFs)", reduction.modes(),
                            dofs - 1, dofs));
  check.require(structure.removed_size() == 0, "structure.reduction",
                "is given with structure.removed; expected one or the other (the reduction projects the "
                "numerical substructure's own matrices, the reference needs the whole structure unreduced)");
  for (const config::Site& site : experiment.site()) {
    check.require(!site.has_setup(), "structure.reduction",
                  fmt::format("is given, but site \"{}\" has a setup (multi-axial), whose evaluation reads every "
                              "DOF's motion from the records; expected no reduction with a multi-axial site",
                              site.name()));
  }
  Eigen::VectorXd pivots;
  if (structure.has_sparse()) {
    pivots = ldlt_pivots(to_sparse_matrix(structure.sparse().stiffness_n_per_m(), dofs));
  } else {
    const RowMajorMatrix stiffness = to_matrix(structure.stiffness_n_per_m(), dofs);
    const Eigen::LDLT<Eigen::MatrixXd> ldlt{Eigen::MatrixXd(stiffness)};
    if (ldlt.info() == Eigen::Success) pivots = ldlt.vectorD();
    const std::size_t massless = massless_dofs(to_matrix(structure.mass_kg(), dofs)).size();
    check.require(reduction.modes() <= dofs - massless, "structure.reduction.modes",
                  fmt::format("is {}, but the structure has {} DOFs with mass ({} massless); expected at most {}",
                              reduction.modes(), dofs - massless, massless, dofs - massless));
  }
  // Sylvester's law of inertia: a rigid-body mode shows as a pivot of rounding's size.
  if (pivots.size() == 0 || !(pivots.minCoeff() > 1e-12 * pivots.cwiseAbs().maxCoeff())) {
    check.fail("structure.reduction",
               fmt::format("needs a restrained structure, but the stiffness is singular (smallest LDL^T pivot {}): a "
                           "free structure's rigid-body modes have no static response; expected supports in "
                           "stiffness_n_per_m, or no reduction",
                           pivots.size() == 0 ? std::string("zero") : fmt::format("{:.6g}", pivots.minCoeff())));
  }
}

}  // namespace rths::validation
