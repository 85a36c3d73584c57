// What a parsed experiment must mean before anything is built from it. Every problem is one line
// that names the field, where it was written and what was expected ("Errors that teach"); all of
// a config's problems are reported in one run (Problems, Checker), and the run must not find out
// halfway through.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "rths/common/address.hpp"
#include "rths/common/component_registry.hpp"
#include "rths/common/config.hpp"
#include "rths/common/frame_force_checks.hpp"
#include "rths/common/link.hpp"
#include "rths/common/matrix_checks.hpp"
#include "rths/common/matrix_market.hpp"
#include "rths/common/problems.hpp"
#include "rths/common/setup_checks.hpp"
#include "rths/common/structural_modes.hpp"

namespace rths {
namespace {

namespace pb = google::protobuf;
using pb::FieldDescriptor;

// Step rates above this are beyond any actuator loop the middleware serves (docs/architecture.md §3 runs 1 kHz).
constexpr double kMaxRateHz = 100e3;
// A mass eigenvalue below 1e-12 x the largest leaves every solve with M without a correct digit.
constexpr double kMassConditionLimit = 1e-12;
// Real-time bounds (proto/experiment.proto, Realtime). A peer silent for longer than 10 s is lost for
// any network a test runs over, and the actuators wait that long holding; a timeout below two steps
// would end a test on one late packet.
constexpr double kMaxPeerTimeoutS = 10.0;
constexpr double kMinPeerTimeoutSteps = 2.0;
// The numerical node says hello every 0.1 s: a shorter handshake timeout gives a site one chance. Ten
// minutes is time enough to start the sites by hand.
constexpr double kMinHandshakeTimeoutS = 0.1;
constexpr double kMaxHandshakeTimeoutS = 600.0;
constexpr double kMaxStartDelayS = 10.0;
constexpr double kMaxStartRampS = 9.9;     // a start ramp ends within the longest start delay
constexpr double kStartRampMarginS = 0.1;  // between the end of the start ramp and the earliest start
constexpr double kMaxStopHoldS = 60.0;
// Delay guard bounds (proto/experiment.proto, DelayGuard): a model ten times off is no model, and a
// smoothing longer than 10 s would watch a delay long after it destabilised the test.
constexpr double kMaxGuardModelError = 10.0;
constexpr double kMaxGuardSmoothingS = 10.0;

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::string child(const std::string& parent, std::string_view field) {
  return parent.empty() ? std::string(field) : fmt::format("{}.{}", parent, field);
}

std::string element(const std::string& field_path, int index) {
  return fmt::format("{}[{}]", field_path, index);
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string too_long(std::string_view name) {
  return fmt::format(
      "\"{}\" is {} bytes long; expected at most {} (it becomes part of file names, which may have "
      "255 bytes)",
      shortened(name, 40), name.size(), kMaxNameBytes);
}

// Why a DOF's or a spring's name cannot head CSV columns and be part of a file name (response_DOF.png,
// spring_NAME_loop.png); empty when it can.
std::string column_name_problem(std::string_view name) {
  const auto* const bad = std::find_if(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return c == ',' || c == '"' || c == '/' || u < 0x20 || u == 0x7f;
  });
  if (bad != name.end()) {
    return fmt::format(
        "\"{}\" contains '{}'; expected a name usable as a CSV column and in a file name (no comma, "
        "quote, '/' or control character)",
        shortened(name), *bad);
  }
  return name.size() > kMaxNameBytes ? too_long(name) : std::string{};
}

// NaN compares false with everything, so a NaN would slip through every range check below; one
// walk over all the doubles of the message rules non-finite numbers out first.
void check_finite(const pb::Message& message, const std::string& path, const Checker& check) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const auto* field : fields) {
    const std::string field_path = child(path, field->name());
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const auto at = [&] { return field->is_repeated() ? element(field_path, i) : field_path; };
      double value = 0;
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_DOUBLE:
          value = field->is_repeated() ? reflection->GetRepeatedDouble(message, field, i)
                                       : reflection->GetDouble(message, field);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          value = field->is_repeated() ? reflection->GetRepeatedFloat(message, field, i)
                                       : reflection->GetFloat(message, field);
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          check_finite(field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                            : reflection->GetMessage(message, field),
                       at(), check);
          continue;
        default:
          continue;
      }
      if (!std::isfinite(value)) check.fail(at(), fmt::format("is {}, expected a finite number", value));
    }
  }
}

// The dense matrices of a structure: sizes, symmetry, definiteness, damping and the removed parts.
void check_dense_matrices(const config::Structure& structure, config::Integrator integrator, const Checker& check) {
  const std::uint32_t dofs = structure.dofs();
  check_square(check, "structure.mass_kg", structure.mass_kg_size(), dofs);
  const RowMajor mass = to_matrix(structure.mass_kg(), dofs);
  check_symmetric(check, "structure.mass_kg", mass);
  check_square(check, "structure.stiffness_n_per_m", structure.stiffness_n_per_m_size(), dofs);
  const RowMajor given_stiffness = to_matrix(structure.stiffness_n_per_m(), dofs);
  check_symmetric(check, "structure.stiffness_n_per_m", given_stiffness);
  check_not_negative(check, "structure.stiffness_n_per_m", given_stiffness, "stiffness matrix");
  // The springs' initial stiffness joins it (checked already), for the massless DOFs below.
  const RowMajor stiffness = stiffness_with_springs(structure);

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
    const RowMajor held = stiffness(massless, massless);
    const Eigen::VectorXd held_values = eigenvalues(held);
    check.require(held_values(0) > 1e-12 * std::abs(held_values(held_values.size() - 1)), "structure.stiffness_n_per_m",
                  fmt::format("is singular on the {} massless DOF(s) (smallest eigenvalue {:.6g}); expected every "
                              "massless DOF held by stiffness",
                              massless.size(), held_values(0)));
  }
  // The integrators solve with the mass on the DOFs that have one; a negative-mass DOF has no
  // solution, and a nearly massless one no accurate solution.
  const RowMajor inertial_mass = inertial.empty() ? RowMajor(mass) : RowMajor(mass(inertial, inertial));
  const Eigen::VectorXd mass_values = eigenvalues(inertial_mass);
  if (Eigen::LLT<RowMajor> cholesky(inertial_mass); cholesky.info() != Eigen::Success || !(mass_values(0) > 0)) {
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

// The ground motion's source, by the rules registered for it (common/ground_motions/).
void check_ground_motion(const config::Experiment& experiment, const Checker& check) {
  const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment};
  if (!check_component(experiment.ground_motion(), "source", context, check.at("ground_motion"))) {
    check.fail("ground_motion", "has no source; expected record { path: \"...\" unit: G } or synthetic { ... }");
  }
}

// The models a channel may hold, as an error spells them ("spring { ... } or bouc_wen { ... }"): from
// the registry, so that the sentence stays true as models are added.
std::string model_kinds() {
  return registry::member_sketches(*config::Model::descriptor(), "kind");
}

// A channel's specimen or prediction model (config::Model): its rules are the registered model's
// (smith_predictor/models/, docs/architecture.md §9).
void check_model(const config::Experiment& experiment, const config::Site& site, const config::Model& model,
                 const std::string& path, const Checker& check) {
  const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
  if (!check_component(model, "kind", context, check.at(path))) {
    check.fail(path, fmt::format("has no model; expected {}", model_kinds()));
  }
}

// One direction of a link: its delay and loss models by the rules registered for them
// (common/impairments/), the rules across them here.
void check_impairment(const config::Impairment& impairment, const std::string& path, const Checker& check) {
  check.expect(impairment.delay_s() >= 0, child(path, "delay_s"),
               fmt::format("is {}, expected a delay >= 0 s", impairment.delay_s()));
  const bool jitter_ok = check.expect(impairment.jitter_s() >= 0, child(path, "jitter_s"),
                                      fmt::format("is {}, expected a jitter >= 0 s", impairment.jitter_s()));
  if (const std::string model = registry::member_name(impairment, "jitter_model"); jitter_ok && !model.empty()) {
    check.expect(impairment.jitter_s() == 0, child(path, "jitter_s"),
                 fmt::format("is {}, but {} {{ ... }} is given too; expected 0 (jitter_s is the uniform jitter, "
                             "used only when no other delay model is given)",
                             impairment.jitter_s(), model));
  }
  const ComponentContext context;
  check_component(impairment, "jitter_model", context, check.at(path));
  if (impairment.has_loss() && !check_component(impairment.loss(), "model", context, check.at(child(path, "loss")))) {
    check.expect(false, child(path, "loss"),
                 "has no model; expected loss { probability: p } or loss { gilbert_elliott { ... } }");
  }
  const double duplicate = impairment.duplicate_probability();
  check.expect(duplicate >= 0 && duplicate <= 1, child(path, "duplicate_probability"),
               fmt::format("is {}, expected a duplication probability in [0, 1]", duplicate));
}

// A channel's actuator: its dynamics by the rules its model registered (node_physical/actuators/),
// its noise and limits.
void check_actuator(const config::Experiment& experiment, const config::Site& site, const config::Channel& channel,
                    const std::string& path, const Checker& check) {
  const config::Actuator& actuator = channel.actuator();
  const ComponentContext context{
      .rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site, .channel = &channel};
  if (!check_component(actuator, "dynamics", context, check.at(path))) {
    check.fail(path, fmt::format("has no dynamics; expected {}",
                                 registry::member_sketches(*config::Actuator::descriptor(), "dynamics")));
  }
  const auto& noise = actuator.noise();
  check.require(noise.displacement_sd_m() >= 0, child(path, "noise.displacement_sd_m"),
                fmt::format("is {}, expected a standard deviation >= 0 m", noise.displacement_sd_m()));
  check.require(noise.force_sd_n() >= 0, child(path, "noise.force_sd_n"),
                fmt::format("is {}, expected a standard deviation >= 0 N", noise.force_sd_n()));
  const auto& limits = actuator.limits();
  check.require(limits.stroke_m() >= 0, child(path, "limits.stroke_m"),
                fmt::format("is {}, expected >= 0 m (0: none)", limits.stroke_m()));
  check.require(limits.velocity_m_per_s() >= 0, child(path, "limits.velocity_m_per_s"),
                fmt::format("is {}, expected >= 0 m/s (0: none)", limits.velocity_m_per_s()));
  check.require(limits.force_n() >= 0, child(path, "limits.force_n"),
                fmt::format("is {}, expected >= 0 N (0: none)", limits.force_n()));
}

// A channel's or an actuator's controller, by the rules its component registered.
void check_controller(const config::Experiment& experiment, const config::Site& site,
                      const config::Controller& controller, const std::string& path, const Checker& check) {
  const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
  check_component(controller, "kind", context, check.at(path));
}

// A limit is given and positive, or absent (none); a channel with an actuator needs all three, since
// a real or emulated actuator must never run without its interlock.
void check_interlock_limits(const config::Channel& channel, const std::string& path, const Checker& check) {
  struct Limit {
    bool given;
    double value;
    std::string_view field;
    std::string_view unit;
  };
  const std::array<Limit, 3> limits{{
      {channel.has_stroke_limit_m(), channel.stroke_limit_m(), "stroke_limit_m", "m"},
      {channel.has_velocity_limit_m_per_s(), channel.velocity_limit_m_per_s(), "velocity_limit_m_per_s", "m/s"},
      {channel.has_force_limit_n(), channel.force_limit_n(), "force_limit_n", "N"},
  }};
  for (const Limit& l : limits) {
    if (l.given) {
      check.require(l.value > 0, child(path, l.field),
                    fmt::format("is {}, expected a positive limit ({}); leave it out for none", l.value, l.unit));
    } else {
      check.require(!channel.has_actuator(), child(path, l.field),
                    fmt::format("missing; a channel with an actuator needs its interlock limits stroke_limit_m, "
                                "velocity_limit_m_per_s and force_limit_n (> 0, {})",
                                l.unit));
    }
  }
}

// The tracking interlock: a positive limit, over 1 to one second of steps.
void check_tracking_limit(const config::Channel& channel, const std::string& path, double rate_hz,
                          const Checker& check) {
  if (channel.has_tracking_limit_m()) {
    check.require(
        channel.tracking_limit_m() > 0 && std::isfinite(channel.tracking_limit_m()), child(path, "tracking_limit_m"),
        fmt::format("is {}, expected a positive limit (m); leave it out for none", channel.tracking_limit_m()));
  }
  const auto max_steps = static_cast<std::uint32_t>(std::ceil(rate_hz));
  check.require(channel.tracking_limit_steps() >= 1 && channel.tracking_limit_steps() <= max_steps,
                child(path, "tracking_limit_steps"),
                fmt::format("is {}, expected 1 to {} (one second of steps at {:g} Hz)", channel.tracking_limit_steps(),
                            max_steps, rate_hz));
  check.require(channel.has_tracking_limit_m() || !channel.has_tracking_limit_steps(),
                child(path, "tracking_limit_steps"), "is given without tracking_limit_m; expected both, or neither");
}

// The start ramp must end before step 0 and move within the velocity limits; the stop ramp's safe
// positions must be inside the strokes.
void check_safe_motion(const config::Experiment& experiment, const config::Site& site, const std::string& path,
                       const Checker& check) {
  const config::SafeMotion& m = site.safe_motion();
  // (With a driver, the driver's own rule names the placement.)
  check.require(site.placement() == config::REMOTE || site.has_driver(), path,
                fmt::format("site \"{}\" is LOCAL; expected safe_motion only on a REMOTE site (rths-physical runs "
                            "the ramps)",
                            site.name()));
  check.require(m.start_ramp_s() >= 0 && m.start_ramp_s() <= kMaxStartRampS, child(path, "start_ramp_s"),
                fmt::format("is {:g}, expected 0 to {:g} s", m.start_ramp_s(), kMaxStartRampS));
  const double start_delay = experiment.realtime().start_delay_s();
  check.require(m.start_ramp_s() == 0 || start_delay >= m.start_ramp_s() + kStartRampMarginS,
                child(path, "start_ramp_s"),
                fmt::format("is {:g} s but realtime.start_delay_s is {:g} s; expected a start delay of at least the "
                            "ramp plus {:g} s (the ramp ends before step 0)",
                            m.start_ramp_s(), start_delay, kStartRampMarginS));
  check.require(m.stop_hold_s() >= 0 && m.stop_hold_s() <= kMaxStopHoldS, child(path, "stop_hold_s"),
                fmt::format("is {:g}, expected 0 to {:g} s", m.stop_hold_s(), kMaxStopHoldS));
  check.require(m.stop_velocity_m_per_s() > 0, child(path, "stop_velocity_m_per_s"),
                fmt::format("is {:g}, expected a velocity > 0 m/s", m.stop_velocity_m_per_s()));
  check.require(m.safe_position_m_size() == 0 || m.safe_position_m_size() == site.channel_size(),
                child(path, "safe_position_m"),
                fmt::format("has {} values, expected none (0 for every channel) or one per channel ({})",
                            m.safe_position_m_size(), site.channel_size()));
  for (int c = 0; c < site.channel_size() && c < m.safe_position_m_size(); ++c) {
    const double stroke = site.channel(c).stroke_limit_m();
    check.require(stroke == 0 || std::abs(m.safe_position_m(c)) < stroke, element(child(path, "safe_position_m"), c),
                  fmt::format("is {:g} m, expected a position inside channel {}'s stroke limit {:g} m",
                              m.safe_position_m(c), c, stroke));
  }
  for (int c = 0; c < site.channel_size(); ++c) {
    const double limit = site.channel(c).velocity_limit_m_per_s();
    check.require(limit == 0 || m.stop_velocity_m_per_s() <= limit, child(path, "stop_velocity_m_per_s"),
                  fmt::format("is {:g} m/s, expected at most channel {}'s velocity_limit_m_per_s {:g}",
                              m.stop_velocity_m_per_s(), c, limit));
  }
}

// The site's driver: the equipment behind its channels.
void check_driver(const config::Site& site, const std::string& path, double rate_hz, const Checker& check) {
  // Real equipment starts and stops on ramps, never by a jump.
  check.require(site.has_safe_motion(), child(path, "safe_motion"),
                fmt::format("missing; site \"{}\" drives equipment, expected safe_motion {{ start_ramp_s: ... "
                            "stop_hold_s: ... stop_velocity_m_per_s: ... }} (docs/running.md: start and stop ramps)",
                            site.name()));
  const std::string at = child(path, "driver");
  check.require(site.placement() != config::LOCAL, at,
                fmt::format("site \"{}\" is LOCAL (in the numerical node's process, which also runs in virtual time "
                            "and cannot keep equipment in step); expected placement: REMOTE, served by rths-physical "
                            "(on the numerical node's own host for a local specimen)",
                            site.name()));
  if (site.driver().kind_case() == config::Driver::KIND_NOT_SET) {
    check.fail(at, "has no kind; expected udp_bridge { target: \"host:port\" command { ... } reply { ... } }");
  }
  for (int c = 0; c < site.channel_size(); ++c) {
    const auto& channel = site.channel(c);
    const std::string channel_path = element(child(path, "channel"), c);
    for (const auto& [given, field] : {std::pair{channel.has_stroke_limit_m(), "stroke_limit_m"},
                                       std::pair{channel.has_velocity_limit_m_per_s(), "velocity_limit_m_per_s"},
                                       std::pair{channel.has_force_limit_n(), "force_limit_n"}}) {
      check.require(given, child(channel_path, field),
                    "missing; a site with a driver moves real actuators, which need their interlock limits "
                    "stroke_limit_m, velocity_limit_m_per_s and force_limit_n (> 0)");
    }
  }
  // With a setup transformation the datagrams carry its actuators, each with its own stroke limit.
  if (site.has_setup()) {
    const auto carried = static_cast<int>(driven_channels(site));
    check.require(site.setup().stroke_limit_m_size() == carried, child(path, "setup.stroke_limit_m"),
                  fmt::format("has {} values; a site with a driver moves real actuators, expected each one's stroke "
                              "limit ({} values, m, > 0)",
                              site.setup().stroke_limit_m_size(), carried));
  }
  // The driver's own rules, by the registry (node_physical/drivers/).
  check_component(site.driver(), "kind", ComponentContext{rate_hz, nullptr, &site}, check.at(child(path, "driver")));
}

// The run-time delay guard's settings (the budget itself is planned when the run starts).
void check_delay_guard(const config::Site& site, const std::string& path, const Checker& check) {
  const config::DelayGuard& g = site.delay_guard();
  check.require(site.placement() == config::REMOTE, path,
                fmt::format("site \"{}\" is LOCAL (in the numerical node's process: no network delays its "
                            "force); expected delay_guard only on a REMOTE site",
                            site.name()));
  check.require(
      g.model_error() >= 0 && g.model_error() <= kMaxGuardModelError, child(path, "model_error"),
      fmt::format("is {:g}, expected a relative model error from 0 to {:g}", g.model_error(), kMaxGuardModelError));
  check.require(g.warn_fraction() > 0 && g.warn_fraction() <= 1, child(path, "warn_fraction"),
                fmt::format("is {:g}, expected a fraction of the budget above 0 and at most 1", g.warn_fraction()));
  check.require(g.transfer_delay_s() >= 0 && std::isfinite(g.transfer_delay_s()), child(path, "transfer_delay_s"),
                fmt::format("is {:g}, expected a delay >= 0 s", g.transfer_delay_s()));
  check.require(g.smoothing_s() > 0 && g.smoothing_s() <= kMaxGuardSmoothingS, child(path, "smoothing_s"),
                fmt::format("is {:g}, expected a time constant above 0 and at most {:g} s", g.smoothing_s(),
                            kMaxGuardSmoothingS));
}

// A frame model of all a site's channels as its modified Smith predictor's prediction model.
void check_frame_prediction(const config::Site& site, const std::string& path, const Checker& check) {
  const std::string at = child(path, "compensation.frame_prediction");
  check.require(site.placement() == config::REMOTE, at,
                "is given on a LOCAL site, whose force needs no prediction; expected it only on a REMOTE site");
  check.require(site.compensation().mode() == config::MODIFIED_SMITH, at,
                fmt::format("is given with compensation.mode {}; a frame prediction model is the modified Smith "
                            "predictor's: expected mode: MODIFIED_SMITH",
                            config::CompensationMode_Name(site.compensation().mode())));
  for (int c = 0; c < site.channel_size(); ++c) {
    check.require(!site.channel(c).has_prediction(), child(element(child(path, "channel"), c), "prediction"),
                  "is given with compensation.frame_prediction, which predicts every channel; expected one or the "
                  "other");
  }
  if (const auto problem = frame_force_model_problem(site.compensation().frame_prediction(),
                                                     static_cast<std::size_t>(site.channel_size()))) {
    check.fail(problem->field.empty() ? at : child(at, problem->field), problem->what);
  }
}

void check_multi_axial(const config::Experiment& experiment, const config::Site& site, const std::string& path,
                       const Checker& check) {
  for (const auto& [name, given] : {std::pair{"actuator_plant", site.has_actuator_plant()},
                                    std::pair{"actuator_controller", site.has_actuator_controller()},
                                    std::pair{"force_model", site.has_force_model()}}) {
    check.require(!given || site.has_setup(), child(path, name),
                  "needs the site's setup { ... }: it works on the setup's actuators");
  }
  for (int i = 0; i < site.evaluation_dof_size(); ++i) {
    const std::string& dof = site.evaluation_dof(i);
    const std::vector<std::string> names = dof_names(experiment.structure());
    check.require(std::find(names.begin(), names.end(), dof) != names.end(), element(child(path, "evaluation_dof"), i),
                  fmt::format("\"{}\" is not a DOF of the structure; expected one of its dof_name", dof));
    check.require(site.has_actuator_plant(), element(child(path, "evaluation_dof"), i),
                  "is given on a site without an actuator_plant; the benchmark criteria are a multi-axial site's");
  }
  if (!site.has_setup()) return;
  const std::size_t actuators = setup_actuators(site.setup());
  if (site.has_actuator_plant()) {
    const std::string at = child(path, "actuator_plant");
    check.require(site.actuator_plant().has_two_actuator_frame(), at,
                  "has no plant; expected two_actuator_frame { ... } (seed 000 Eqs. 19-26)");
    check.require(actuators == 2, at,
                  fmt::format("two_actuator_frame drives two actuators, the setup has {}", actuators));
    check_component(site.actuator_plant(), "kind",
                    ComponentContext{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site},
                    check.at(at));
    const double sd = site.actuator_plant().noise().displacement_sd_m();
    check.require(std::isfinite(sd) && sd >= 0, child(at, "noise.displacement_sd_m"),
                  fmt::format("is {}, expected a standard deviation >= 0 m", sd));
    check.require(site.actuator_plant().noise().force_sd_n() == 0, child(at, "noise.force_sd_n"),
                  "is given, but the actuator plant measures no force (the force model gives it); expected none");
    check.require(site.has_force_model(), child(path, "force_model"),
                  "missing; a site with an actuator_plant has no load cells: expected force_model { ... }");
  }
  if (site.has_actuator_controller()) {
    const std::string at = child(path, "actuator_controller");
    for (int c = 0; c < site.channel_size(); ++c) {
      check.require(!site.channel(c).has_controller(), child(element(child(path, "channel"), c), "controller"),
                    "is given with the site's actuator_controller; expected one or the other");
    }
    const config::SiteController& controller = site.actuator_controller();
    // One controller per actuator of the setup: the site's rule; each controller's are its own.
    check.require(!controller.has_decentralised() ||
                      static_cast<std::size_t>(controller.decentralised().actuator_size()) == actuators,
                  child(at, "decentralised.actuator"),
                  fmt::format("has {} controller(s), expected one per actuator of the setup ({})",
                              controller.decentralised().actuator_size(), actuators));
    const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
    if (!check_component(controller, "kind", context, check.at(at))) {
      check.fail(at, "has no controller; expected decentralised { actuator { ... } ... } or ukf { ... }");
    }
  }
  if (site.has_force_model()) {
    const std::string at = child(path, "force_model");
    // A remote multi-axial site's channels have no model each: its Smith predictor needs one of them all.
    const config::CompensationMode mode = site.compensation().mode();
    if (site.placement() == config::REMOTE) {
      check.require(mode != config::MODIFIED_SMITH || site.compensation().has_frame_prediction(),
                    child(path, "compensation.frame_prediction"),
                    "missing; a REMOTE multi-axial site's modified Smith predictor needs a frame model of all its "
                    "channels: expected frame_prediction { dofs: ... } (or mode: NONE, no compensation)");
      check.require(mode != config::CLASSIC_SMITH, child(path, "compensation.mode"),
                    "is CLASSIC_SMITH on a multi-axial site, which has no per-channel model to predict with; "
                    "expected MODIFIED_SMITH with a frame_prediction, or NONE");
      check.require(!site.has_delay_guard(), child(path, "delay_guard"),
                    "is given on a multi-axial site; its delay budget is planned from per-channel models, which "
                    "such a site has not: expected no delay_guard");
    }
    if (const auto problem =
            frame_force_model_problem(site.force_model(), static_cast<std::size_t>(site.channel_size()))) {
      check.fail(problem->field.empty() ? at : child(at, problem->field), problem->what);
    }
  }
}

void check_site(const config::Experiment& experiment, int index, const Checker& check) {
  const auto& site = experiment.site(index);
  const std::string path = element("site", index);
  const std::string name_path = child(path, "name");
  const std::string& name = site.name();
  if (const std::string problem = site_name_problem(name); !problem.empty()) check.fail(name_path, problem);
  for (int other = 0; other < index; ++other) {
    check.require(experiment.site(other).name() != name, name_path,
                  fmt::format("\"{}\" is also the name of site[{}]; expected unique site names", name, other));
  }

  // The multi-axial evaluation reads the reference's whole motion from its records.
  check.require(!site.has_setup() || experiment.structure().record_dof_size() == 0, "structure.record_dof",
                fmt::format("names {} DOFs, but site \"{}\" has a setup, whose evaluation needs every DOF recorded; "
                            "expected no record_dof",
                            experiment.structure().record_dof_size(), name));

  const int channels = site.channel_size();
  check.require(channels >= 1, child(path, "channel"),
                fmt::format("missing; site \"{}\" needs at least one channel {{ specimen {{ ... }} }}", name));
  const std::uint64_t dofs = experiment.structure().dofs();
  const int influence = site.influence_size();
  check.require(static_cast<std::uint64_t>(influence) == dofs * static_cast<std::uint64_t>(channels),
                child(path, "influence"),
                fmt::format("site \"{}\": influence has {} entries, structure has {} DOF{} and the site {} channel{} "
                            "(expected dofs x channels = {}, row-major)",
                            name, influence, dofs, dofs == 1 ? "" : "s", channels, channels == 1 ? "" : "s",
                            dofs * static_cast<std::uint64_t>(channels)));
  // A channel moves one quantity (its records are in m or in rad): its DOFs are all of one kind.
  const std::vector<DofKind> kinds = dof_kinds(experiment.structure());
  for (int c = 0; c < channels; ++c) {
    std::optional<std::size_t> translation;
    std::optional<std::size_t> rotation;
    for (std::size_t d = 0; d < kinds.size(); ++d) {
      if (site.influence(static_cast<int>(d) * channels + c) == 0.0) continue;
      (kinds[d] == DofKind::kRotation ? rotation : translation) = d;
    }
    if (translation && rotation) {
      const std::vector<std::string> names = dof_names(experiment.structure());
      check.fail(child(path, "influence"),
                 fmt::format("site \"{}\" channel {} acts on {} (a translation) and {} (a rotation); expected the "
                             "DOFs of one channel all of one kind (structure.dof_kind, docs/models.md)",
                             name, c, names[*translation], names[*rotation]));
    }
  }

  // A multi-axial site's force comes from its force model, and the monolithic reference is then the
  // whole structure with the specimen in it: its channels have no specimen of their own.
  const bool modelled_force = site.has_force_model() || site.has_actuator_plant();
  for (int c = 0; c < channels; ++c) {
    const auto& channel = site.channel(c);
    const std::string channel_path = element(child(path, "channel"), c);
    if (modelled_force) {
      check.require(!channel.has_specimen(), child(channel_path, "specimen"),
                    "is given, but the site's force_model gives its forces; expected no specimen");
      check.require(!channel.has_actuator(), child(channel_path, "actuator"),
                    "is given, but the site's actuator_plant simulates its actuators; expected no actuator");
    } else {
      check.require(channel.has_specimen(), child(channel_path, "specimen"),
                    fmt::format("missing; expected specimen {{ {} }}", model_kinds()));
      check_model(experiment, site, channel.specimen(), child(channel_path, "specimen"), check);
    }
    if (channel.has_prediction()) {
      check_model(experiment, site, channel.prediction(), child(channel_path, "prediction"), check);
    }
    if (channel.has_actuator()) check_actuator(experiment, site, channel, child(channel_path, "actuator"), check);
    check_interlock_limits(channel, channel_path, check);
    check_tracking_limit(channel, channel_path, experiment.rate_hz(), check);
    if (channel.has_controller()) {
      check_controller(experiment, site, channel.controller(), child(channel_path, "controller"), check);
    }
  }

  if (site.has_setup()) {
    // The setup's DOFs are the site's channels. Both nodes validate the same file, so a setup the site
    // could not build is refused at the numerical node too, before anything moves. The site's rules
    // below count the setup's actuators: they wait for a setup without problems.
    const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
    if (!check_setup(site.setup(), context, check.at(child(path, "setup")))) return;
  }

  if (site.placement() == config::REMOTE) {
    // Where the numerical node sends in real time: checked here so a bad one never waits for a run.
    const std::string at = child(path, "address");
    HostPort peer;
    try {
      peer = parse_host_port(site.address());
    } catch (const std::invalid_argument& e) {
      check.fail(at, e.what());
    }
    check.require(peer.port != 0, at,
                  fmt::format("\"{}\" has port 0; expected the port the site's rths-physical listens on (1..65535)",
                              site.address()));
  }
  if (site.has_safe_motion()) check_safe_motion(experiment, site, child(path, "safe_motion"), check);
  if (site.has_compensation()) {
    const double assumed = site.compensation().assumed_round_trip_s();
    check.require(assumed >= 0, child(path, "compensation.assumed_round_trip_s"),
                  fmt::format("is {}, expected a round-trip delay >= 0 s", assumed));
  }
  if (site.compensation().has_frame_prediction()) check_frame_prediction(site, path, check);
  if (site.has_link()) {
    check.require(site.placement() != config::LOCAL, child(path, "link"),
                  fmt::format("site \"{}\" is LOCAL (in the numerical node's process); expected no link, or "
                              "placement: REMOTE",
                              name));
    if (site.link().has_forward()) check_impairment(site.link().forward(), child(path, "link.forward"), check);
    if (site.link().has_backward()) check_impairment(site.link().backward(), child(path, "link.backward"), check);
  }
  if (site.has_driver()) check_driver(site, path, experiment.rate_hz(), check);
  if (site.has_delay_guard()) check_delay_guard(site, child(path, "delay_guard"), check);
  check_multi_axial(experiment, site, path, check);
}

}  // namespace

namespace {

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
    const RowMajor stiffness = to_matrix(structure.stiffness_n_per_m(), dofs);
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

// Two remote sites at one address would be one site to the network: the numerical node's packets for
// both reach one rths-physical. Compared as written (same_endpoint: no resolver here); sites that
// both leave the address at its default are left to the real-time run, which compares the resolved
// addresses (a virtual-time run does not use them).
void check_distinct_addresses(const config::Experiment& experiment, const Checker& check) {
  std::vector<std::pair<int, HostPort>> seen;
  for (int i = 0; i < experiment.site_size(); ++i) {
    const config::Site& site = experiment.site(i);
    if (site.placement() != config::REMOTE) continue;
    HostPort at = parse_host_port(site.address());  // checked by check_site
    for (const auto& [other, where] : seen) {
      if (!same_endpoint(where, at)) continue;
      if (!site.has_address() && !experiment.site(other).has_address()) continue;
      check.fail(child(element("site", i), "address"),
                 fmt::format("\"{}\" is also site[{}]'s (\"{}\"); expected one address per site: each site's "
                             "rths-physical listens on its own port",
                             site.address(), other, experiment.site(other).name()));
    }
    seen.emplace_back(i, std::move(at));
  }
}

void check_realtime(const config::Realtime& rt, double rate_hz, const Checker& check) {
  const double min_peer_timeout_s = kMinPeerTimeoutSteps / rate_hz;
  check.require(rt.peer_timeout_s() >= min_peer_timeout_s && rt.peer_timeout_s() <= kMaxPeerTimeoutS,
                "realtime.peer_timeout_s",
                fmt::format("is {:g}, expected a timeout from {:g} steps ({:g} s at {:g} Hz) to {:g} s (a silent "
                            "peer ends the test after it)",
                            rt.peer_timeout_s(), kMinPeerTimeoutSteps, min_peer_timeout_s, rate_hz, kMaxPeerTimeoutS));
  check.require(rt.priority() >= 0 && rt.priority() <= 99, "realtime.priority",
                fmt::format("is {}, expected 0 (normal scheduling) or a SCHED_FIFO priority 1..99", rt.priority()));
  check.require(rt.spin_s() >= 0 && rt.spin_s() < 0.01, "realtime.spin_s",
                fmt::format("is {}, expected a busy-wait >= 0 and well below a period (s)", rt.spin_s()));
  check.require(rt.cpu() >= -1, "realtime.cpu", fmt::format("is {}, expected a CPU number or -1 (any)", rt.cpu()));
  check.require(rt.handshake_timeout_s() >= kMinHandshakeTimeoutS && rt.handshake_timeout_s() <= kMaxHandshakeTimeoutS,
                "realtime.handshake_timeout_s",
                fmt::format("is {:g}, expected {:g} to {:g} s (the hello is repeated every 0.1 s)",
                            rt.handshake_timeout_s(), kMinHandshakeTimeoutS, kMaxHandshakeTimeoutS));
  check.require(rt.start_delay_s() >= 0 && rt.start_delay_s() <= kMaxStartDelayS, "realtime.start_delay_s",
                fmt::format("is {:g}, expected 0 to {:g} s", rt.start_delay_s(), kMaxStartDelayS));
}
// What can be told of the keys before a real-time run (site_key() checks the files themselves).
void check_keys_and_hold(const config::Experiment& experiment, const Checker& check) {
  for (int i = 0; i < experiment.site_size(); ++i) {
    const auto& site = experiment.site(i);
    if (site.has_key_file()) {
      check.require(!site.key_file().empty(), child(element("site", i), "key_file"),
                    "is empty; expected the path of the site's key file (rths-numerical keygen FILE)");
    }
  }
  const double extrapolation = experiment.realtime().max_extrapolation_s();
  check.require(extrapolation > 0 && extrapolation <= 1.0, "realtime.max_extrapolation_s",
                fmt::format("is {}, expected > 0 and <= 1 s (a site extrapolates a held target at most this long)",
                            extrapolation));
}
// The config oneofs whose members are registered components: validation walks into them by their
// rules. A program that validates configs without every component's library linked (whole) would
// pass what it cannot check: it stops at its first config instead.
void require_registered_components() {
  static std::once_flag checked;
  std::call_once(checked, [] {
    const std::array<std::pair<const pb::Descriptor*, std::string_view>, 11> oneofs{{
        {config::Controller::descriptor(), "kind"},
        {config::SiteController::descriptor(), "kind"},
        {config::ActuatorPlant::descriptor(), "kind"},
        {config::Driver::descriptor(), "kind"},
        {config::Model::descriptor(), "kind"},
        {config::SetupTransform::descriptor(), "kind"},
        {config::Actuator::descriptor(), "dynamics"},
        {config::GroundMotion::descriptor(), "source"},
        {config::Impairment::descriptor(), "jitter_model"},
        {config::Loss::descriptor(), "model"},
        {config::Structure::descriptor(), "damping"},
    }};
    for (const auto& [holder, oneof] : oneofs) {
      for (const pb::FieldDescriptor* member : registry::members(*holder, oneof)) {
        if (!has_member_rules(*member)) registry::unregistered(*member, "component");
      }
    }
  });
}

}  // namespace

std::string site_name_problem(std::string_view name) {
  constexpr std::string_view kNameRule =
      "letters, digits, '_' or '-' (it becomes a CSV column suffix and part of file names)";
  if (name.empty()) return fmt::format("missing; expected a name of {}", kNameRule);
  if (const auto* const bad = std::find_if_not(name.begin(), name.end(), is_name_char); bad != name.end()) {
    return fmt::format("\"{}\" contains '{}'; expected only {}", shortened(name), *bad, kNameRule);
  }
  return name.size() > kMaxNameBytes ? too_long(name) : std::string{};
}

void validate(const config::Experiment& experiment, const std::string& source_name, const FieldLocations* where) {
  require_registered_components();
  Problems problems(source_name, where);
  const Checker check(problems);
  // A number that is not finite makes every rule about it meaningless: those problems alone.
  if (!check.section([&] { check_finite(experiment, "", check); })) problems.throw_if_any();

  // Sections whose rules stand alone, each reported; a section that others rely on (the step rate,
  // the structure, every site) is checked first and the dependent ones only when it passed.
  const bool rate_ok =
      check.expect(experiment.rate_hz() > 0 && experiment.rate_hz() <= kMaxRateHz, "rate_hz",
                   fmt::format("is {}, expected a step rate > 0 and <= {} Hz", experiment.rate_hz(), kMaxRateHz));
  check.expect(experiment.duration_s() >= 0, "duration_s",
               fmt::format("is {}, expected >= 0 s (0 runs to the end of the ground motion)", experiment.duration_s()));
  const bool structure_ok = check.section([&] {
    check.require(experiment.has_structure(), "structure",
                  "missing; expected structure { dofs: ... mass_kg: [...] stiffness_n_per_m: [...] }");
    check_structure(experiment.structure(), experiment.integrator(), check);
  });
  const bool alpha_integrator =
      experiment.integrator() == config::KR_ALPHA || experiment.integrator() == config::GENERALIZED_ALPHA;
  check.expect(!experiment.has_rho_infinity() || alpha_integrator, "rho_infinity",
               fmt::format("is set, but integrator {} takes no rho_infinity; expected integrator: KR_ALPHA or "
                           "GENERALIZED_ALPHA, or no rho_infinity",
                           config::Integrator_Name(experiment.integrator())));
  check.expect(experiment.rho_infinity() >= 0.0 && experiment.rho_infinity() <= 1.0, "rho_infinity",
               fmt::format("is {}, expected a spectral radius from 0 (the high modes damped out) to 1 (no numerical "
                           "damping)",
                           experiment.rho_infinity()));

  check.section([&] {
    check.require(
        experiment.has_ground_motion(), "ground_motion",
        "missing; expected ground_motion { record { path: \"...\" unit: G } } or ground_motion { synthetic { } }");
    check_ground_motion(experiment, check);
  });

  const bool some_site = check.expect(
      experiment.site_size() >= 1, "site",
      "missing; expected at least one site { name: \"...\" influence: [...] channel { specimen { ... } } }");
  if (rate_ok && structure_ok && some_site) {
    bool sites_ok = true;
    for (int i = 0; i < experiment.site_size(); ++i) {
      sites_ok = check.section([&] { check_site(experiment, i, check); }) && sites_ok;
    }
    if (sites_ok) {
      check.section([&] { check_distinct_addresses(experiment, check); });
      if (experiment.structure().has_reduction()) check.section([&] { check_reduction(experiment, check); });
    }
  }
  check.section([&] { check_keys_and_hold(experiment, check); });
  if (rate_ok) check.section([&] { check_realtime(experiment.realtime(), experiment.rate_hz(), check); });
  check.expect(experiment.output().memory_budget_mb() > 0, "output.memory_budget_mb",
               fmt::format("is {:g}, expected a memory budget > 0 MB for the run's records",
                           experiment.output().memory_budget_mb()));
  problems.throw_if_any();
}

}  // namespace rths
