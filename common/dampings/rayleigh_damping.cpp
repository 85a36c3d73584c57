// Rayleigh damping (config RayleighDamping): C = a0 M + a1 K fitted to a modal damping ratio at each
// of two modes (structural_modes.hpp), of a dense structure or of a sparse one's lowest modes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>

#include "common/config/matrix_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/dynamics/structural_damping.hpp"
#include "common/dynamics/structural_modes.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

// A sparse model's Rayleigh modes come from Lanczos iteration, which finds its lowest modes.
constexpr std::uint32_t kMaxSparseMode = 100;

class Rayleigh final : public StructuralDamping {
 public:
  // rayleigh_damping keeps the guard of memory: a mode the structure has (a mode beyond an int reads
  // as a negative one).
  explicit Rayleigh(const config::RayleighDamping& rayleigh)
      : mode_a_(static_cast<int>(rayleigh.mode_a())),
        zeta_a_(rayleigh.zeta_a()),
        mode_b_(static_cast<int>(rayleigh.mode_b())),
        zeta_b_(rayleigh.zeta_b()) {}

  [[nodiscard]] Eigen::MatrixXd dense(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness) const override {
    return rayleigh_damping(mass, stiffness, mode_a_, zeta_a_, mode_b_, zeta_b_);
  }
  [[nodiscard]] Eigen::SparseMatrix<double> sparse(const Eigen::SparseMatrix<double>& mass,
                                                   const Eigen::SparseMatrix<double>& stiffness,
                                                   const LowestSquaredFrequencies& lowest) const override {
    return rayleigh_damping(mass, stiffness, mode_a_, zeta_a_, mode_b_, zeta_b_, lowest);
  }

 private:
  int mode_a_;
  double zeta_a_;
  int mode_b_;
  double zeta_b_;
};

bool expect_ratio(const Checker& check, const char* field, double zeta) {
  return check.expect(zeta >= 0 && zeta < 1, field,
                      fmt::format("is {}, expected a modal damping ratio in [0, 1)", zeta));
}

bool expect_distinct_modes(const config::RayleighDamping& rayleigh, const Checker& check) {
  return check.expect(rayleigh.mode_a() != rayleigh.mode_b(), "mode_b",
                      fmt::format("is {} like mode_a; expected two distinct modes", rayleigh.mode_b()));
}

// A sparse model: two of its lowest modes (the Lanczos iteration finds them).
void validate_sparse(const config::RayleighDamping& rayleigh, std::uint32_t dofs, const Checker& check) {
  const std::uint32_t highest = std::min(dofs, kMaxSparseMode);
  for (const auto& [name, mode] : {std::pair{"mode_a", rayleigh.mode_a()}, std::pair{"mode_b", rayleigh.mode_b()}}) {
    check.expect(mode >= 1 && mode <= highest, name,
                 fmt::format("is {}, expected a mode number from 1 to {} (a sparse model's damping is fitted at two "
                             "of its lowest modes)",
                             mode, highest));
  }
  expect_distinct_modes(rayleigh, check);
  expect_ratio(check, "zeta_a", rayleigh.zeta_a());
  expect_ratio(check, "zeta_b", rayleigh.zeta_b());
}

// A dense structure, whose mass and stiffness passed their rules: two modes with distinct, positive
// frequencies among those of its DOFs with mass.
void validate_dense(const config::RayleighDamping& rayleigh, const config::Structure& structure, const Checker& check) {
  for (const auto& [name, given, zeta] : {std::tuple{"zeta_a", rayleigh.has_zeta_a(), rayleigh.zeta_a()},
                                          std::tuple{"zeta_b", rayleigh.has_zeta_b(), rayleigh.zeta_b()}}) {
    check.expect(given, name, "missing; expected a modal damping ratio in [0, 1)");
    expect_ratio(check, name, zeta);
  }
  const std::uint32_t dofs = structure.dofs();
  if (!check.expect(dofs >= 2, "",
                    "needs two distinct modes, but a 1-DOF structure has one; expected damping_ns_per_m instead")) {
    return;
  }
  const RowMajorMatrix mass = to_matrix(structure.mass_kg(), dofs);
  const auto modes = static_cast<std::uint32_t>(dofs - massless_dofs(mass).size());
  bool modes_ok = true;
  for (const auto& [name, mode] : {std::pair{"mode_a", rayleigh.mode_a()}, std::pair{"mode_b", rayleigh.mode_b()}}) {
    modes_ok =
        check.expect(mode >= 1 && mode <= modes, name,
                     fmt::format("is {}, expected a mode number from 1 to the {} DOFs with mass", mode, modes)) &&
        modes_ok;
  }
  if (!(expect_distinct_modes(rayleigh, check) && modes_ok)) return;  // the frequencies below are the modes'
  // C = a0 M + a1 K is fitted from zeta_i = a0 / (2 w_i) + a1 w_i / 2 at the two modes: the fit needs
  // two different, positive natural frequencies.
  const Eigen::VectorXd squared = squared_frequencies(mass, stiffness_with_springs(structure));
  const double largest = std::max(std::abs(squared.maxCoeff()), std::abs(squared.minCoeff()));
  bool positive = true;
  for (const auto mode : {rayleigh.mode_a(), rayleigh.mode_b()}) {
    const double w2 = squared(static_cast<Eigen::Index>(mode) - 1);
    positive = check.expect(w2 > 1e-12 * largest, "",
                            fmt::format("mode {} has natural frequency {} rad/s (stiffness_n_per_m is not positive "
                                        "definite); expected modes with positive frequencies to fit Rayleigh damping",
                                        mode, std::sqrt(std::max(w2, 0.0)))) &&
               positive;
  }
  if (!positive) return;
  const double wa = std::sqrt(squared(static_cast<Eigen::Index>(rayleigh.mode_a()) - 1));
  const double wb = std::sqrt(squared(static_cast<Eigen::Index>(rayleigh.mode_b()) - 1));
  check.expect(std::abs(wa - wb) > 1e-9 * std::max(wa, wb), "",
               fmt::format("modes {} and {} have the same natural frequency {} rad/s; expected modes with distinct "
                           "frequencies",
                           rayleigh.mode_a(), rayleigh.mode_b(), wa));
}

// Every number is finite by the time a component's rules run: the config validator checks them all
// first, and the structure's mass and stiffness before its damping.
void validate(const config::RayleighDamping& rayleigh, const ComponentContext& context, const Checker& check) {
  const config::Structure& structure = damped_structure(context);
  if (structure.has_sparse()) {
    validate_sparse(rayleigh, structure.dofs(), check);
  } else {
    validate_dense(rayleigh, structure, check);
  }
}

std::unique_ptr<StructuralDamping> make(const config::RayleighDamping& rayleigh, const ComponentContext& /*context*/) {
  return std::make_unique<Rayleigh>(rayleigh);
}

[[maybe_unused]] const bool kRayleighDampingRegistered =
    register_component<config::RayleighDamping, StructuralDamping>(validate, make);

}  // namespace
}  // namespace rths
