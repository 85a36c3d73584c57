#include "rths/node_numerical/structure.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "experiment.pb.h"
#include "rths/common/structural_modes.hpp"

namespace rths {

namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The config stores matrices row-major with dofs*dofs entries (proto/experiment.proto, Structure).
template <typename Field>
Eigen::MatrixXd square_matrix(const Field& values, Eigen::Index dofs, const std::string& field) {
  const auto expected = static_cast<std::size_t>(dofs * dofs);
  if (static_cast<std::size_t>(values.size()) != expected) {
    throw std::invalid_argument("structure." + field + ": has " + std::to_string(values.size()) +
                                " entries, expected dofs*dofs = " + std::to_string(expected) + " (row-major)");
  }
  return Eigen::Map<const RowMajorMatrix>(values.data(), dofs, dofs);
}

}  // namespace

Eigen::VectorXd StructuralModel::natural_frequencies_rad_s() const {
  // A singular (unrestrained) stiffness gives eigenvalues that are zero up to rounding, possibly
  // slightly negative: clamp so a rigid-body mode reads as 0 rad/s rather than NaN.
  return squared_frequencies(mass, stiffness).cwiseMax(0.0).cwiseSqrt();
}

Eigen::MatrixXd rayleigh_damping(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness, int mode_a,
                                 double zeta_a, int mode_b, double zeta_b) {
  const Eigen::VectorXd omega_squared = squared_frequencies(mass, stiffness);
  const auto modes = static_cast<int>(omega_squared.size());
  for (const int mode : {mode_a, mode_b}) {
    if (mode < 1 || mode > modes) {
      throw std::invalid_argument("structure.rayleigh: mode " + std::to_string(mode) +
                                  " requested, the structure has " + std::to_string(modes) +
                                  " mode(s) (numbered from 1)");
    }
  }
  const double omega_a = std::sqrt(std::max(omega_squared(mode_a - 1), 0.0));
  const double omega_b = std::sqrt(std::max(omega_squared(mode_b - 1), 0.0));
  const double denominator = omega_b * omega_b - omega_a * omega_a;
  if (!(std::abs(denominator) > 1e-12 * omega_b * omega_b)) {
    throw std::invalid_argument("structure.rayleigh: modes " + std::to_string(mode_a) + " and " +
                                std::to_string(mode_b) +
                                " have the same frequency; Rayleigh damping needs two distinct modes");
  }
  // zeta_i = a0 / (2 omega_i) + a1 omega_i / 2 at both modes (Chopra, Dynamics of Structures, §11.4).
  const double a0 = 2.0 * omega_a * omega_b * (zeta_a * omega_b - zeta_b * omega_a) / denominator;
  const double a1 = 2.0 * (zeta_b * omega_b - zeta_a * omega_a) / denominator;
  return a0 * mass + a1 * stiffness;
}

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
  model.mass = square_matrix(spec.mass_kg(), dofs, "mass_kg");
  model.stiffness = square_matrix(spec.stiffness_n_per_m(), dofs, "stiffness_n_per_m");
  switch (spec.damping_case()) {
    case config::Structure::kDampingNsPerM:
      model.damping = square_matrix(spec.damping_ns_per_m().value(), dofs, "damping_ns_per_m.value");
      break;
    case config::Structure::kRayleigh: {
      const config::RayleighDamping& rayleigh = spec.rayleigh();
      model.damping = rayleigh_damping(model.mass, model.stiffness, static_cast<int>(rayleigh.mode_a()),
                                       rayleigh.zeta_a(), static_cast<int>(rayleigh.mode_b()), rayleigh.zeta_b());
      break;
    }
    case config::Structure::DAMPING_NOT_SET:
    default:
      // No damping given is a legitimate undamped structure (the validator decides whether to allow it).
      model.damping = Eigen::MatrixXd::Zero(dofs, dofs);
      break;
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
