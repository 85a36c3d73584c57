// What every registered damping of a structure must do, whichever it is: tests that run over the
// registry, so that a damping added to config::Structure's oneof damping is held to them without a
// line here beyond its sample config (docs/architecture.md §9). Rayleigh damping against the
// integrators and the sparse solvers is in test_integrators.cpp and test_sparse_structure.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>
#include <Eigen/Dense>

#include "common/core/component_registry.hpp"
#include "common/core/config_error.hpp"
#include "common/dynamics/eigen_problems.hpp"
#include "common/dynamics/structural_damping.hpp"
#include "experiment.pb.h"
#include "node_numerical/structure/structure.hpp"
#include "support/contract_support.hpp"
#include "support/test_support.hpp"

namespace rths::test_damping_contract {
namespace {

namespace pb = google::protobuf;

// A three-storey shear frame: 1000 kg a floor, 1e6 N/m a storey.
constexpr const char* kFrame =
    "dofs: 3 mass_kg: [1000, 0, 0, 0, 1000, 0, 0, 0, 1000] "
    "stiffness_n_per_m: [2e6, -1e6, 0, -1e6, 2e6, -1e6, 0, -1e6, 1e6] ";

// A valid structure with each damping the oneof can hold, by member name: what the contract runs.
const std::map<std::string, std::string>& samples() {
  static const std::map<std::string, std::string> s{
      // One DOF: the sweep's lists (1, 1/2, 1/3, ...) make a symmetric matrix only as a 1 x 1 one.
      {"damping_ns_per_m", "dofs: 1 mass_kg: [1000] stiffness_n_per_m: [1e6] damping_ns_per_m { value: [2000] }"},
      {"rayleigh", std::string(kFrame) + "rayleigh { mode_a: 1 zeta_a: 0.02 mode_b: 3 zeta_b: 0.05 }"},
  };
  return s;
}

config::Structure parsed(const std::string& text) {
  config::Structure s;
  EXPECT_TRUE(pb::TextFormat::ParseFromString(text, &s)) << text;
  return s;
}

// The same structure given sparse: its dense matrices as sparse entries.
config::Structure sparse_of(const config::Structure& dense) {
  config::Structure s = dense;
  s.clear_mass_kg();
  s.clear_stiffness_n_per_m();
  const auto n = static_cast<int>(dense.dofs());
  for (const auto& [from, to] :
       {std::pair{&dense.mass_kg(), s.mutable_sparse()->mutable_mass_kg()},
        std::pair{&dense.stiffness_n_per_m(), s.mutable_sparse()->mutable_stiffness_n_per_m()}}) {
    for (int k = 0; k < n * n; ++k) {
      if ((*from)[k] == 0.0) continue;
      to->add_row(static_cast<std::uint32_t>(k / n + 1));
      to->add_column(static_cast<std::uint32_t>(k % n + 1));
      to->add_value((*from)[k]);
    }
  }
  return s;
}

std::vector<std::string> members() {
  return test::oneof_members(*config::Structure::descriptor(), "damping");
}

// The problems the registered rules find in `structure`'s damping (an empty list: valid).
std::vector<std::string> problems_of(const config::Structure& structure) {
  return test::component_problems(structure, ComponentContext{}, "structure", "damping");
}

// The damping a structure's model is built with, dense.
Eigen::MatrixXd damping_of(const config::Structure& structure) {
  const StructuralModel model = make_structure(structure);
  return model.is_sparse() ? Eigen::MatrixXd(model.sparse_damping) : model.damping;
}

TEST(DampingContract, EveryDampingTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<StructuralDamping>(*config::Structure::descriptor(), "damping", samples());
}

// The registry builds the damping the config names: the matrix given, or the Rayleigh damping whose
// modal damping ratios at the two modes are the config's, for a dense and a sparse structure alike.
TEST(DampingContract, TheDampingBuiltIsTheOneTheConfigNames) {
  for (const std::string& member : members()) {
    ASSERT_TRUE(problems_of(parsed(samples().at(member))).empty()) << member;
  }
  const config::Structure matrix = parsed(
      "dofs: 2 mass_kg: [1000, 0, 0, 1000] stiffness_n_per_m: [2e6, -1e6, -1e6, 1e6] "
      "damping_ns_per_m { value: [3000, -1000, -1000, 2000] }");
  ASSERT_TRUE(problems_of(matrix).empty());
  EXPECT_EQ(damping_of(matrix), (Eigen::Matrix2d() << 3000, -1000, -1000, 2000).finished());

  const config::Structure rayleigh = parsed(samples().at("rayleigh"));
  const Eigen::Map<const Eigen::Matrix3d> mass(rayleigh.mass_kg().data());
  const Eigen::Map<const Eigen::Matrix3d> stiffness(rayleigh.stiffness_n_per_m().data());
  const SymmetricEigen modes = generalized_symmetric_eigen(stiffness, mass);
  const Eigen::Matrix3d modal = modes.vectors.transpose() * damping_of(rayleigh) * modes.vectors;
  for (const auto& [mode, zeta] : {std::pair{0, 0.02}, std::pair{2, 0.05}}) {
    EXPECT_NEAR(modal(mode, mode) / (2.0 * std::sqrt(modes.values(mode))), zeta, 1e-12) << "mode " << mode + 1;
  }
  const config::Structure sparse = sparse_of(rayleigh);
  ASSERT_TRUE(problems_of(sparse).empty()) << problems_of(sparse).front();
  EXPECT_LT((damping_of(sparse) - damping_of(rayleigh)).norm(), 1e-9 * damping_of(rayleigh).norm());
}

// What the rules accept, the factory builds, finite and symmetric: the rules are the only statement of
// the config's bounds, and a damping keeps only the guards that protect memory. Every numeric field of
// each sample (and a matrix's list) is swept over values on both sides of any bound a rule might draw,
// on a dense structure and for Rayleigh damping on a sparse one too; both verdicts must occur.
TEST(DampingContract, WhatTheRulesAcceptIsBuiltFiniteAndSymmetric) {
  const std::vector<double> values{-1.0, 0.0, 1e-3, 0.5, 1.0, 2.0, 3.0, 4.0, 16.0, 100.0, 1e4};
  std::vector<std::pair<std::string, config::Structure>> bases;
  for (const std::string& member : members()) bases.emplace_back(member, parsed(samples().at(member)));
  bases.emplace_back("rayleigh", sparse_of(parsed(samples().at("rayleigh"))));
  for (const auto& [member, base] : bases) {
    test::sweep_verdicts<config::Structure>(
        base, member, values, [](const config::Structure& structure) { return problems_of(structure).empty(); },
        [&, member = member](const config::Structure& structure, const std::string& what, bool /*changed*/) {
          Eigen::MatrixXd damping;
          ASSERT_NO_THROW(damping = damping_of(structure)) << member << " " << what;
          EXPECT_TRUE(damping.allFinite()) << member << " " << what;
          EXPECT_LE((damping - damping.transpose()).norm(), 1e-9 * damping.norm()) << member << " " << what;
        },
        {.repeated_doubles = true, .every_field_known = true});
  }
}

// The guards a damping keeps beside the rules draw their line where the rules do: a damping matrix
// of dofs x dofs entries, and Rayleigh damping at a mode the structure has (the last one of a dense
// structure's DOFs with mass).
TEST(DampingContract, TheGuardsAgreeWithTheRules) {
  const config::Structure frame = parsed(std::string(kFrame) + "damping_ns_per_m { }");
  const Eigen::Map<const Eigen::Matrix3d> mass(frame.mass_kg().data());
  const Eigen::Map<const Eigen::Matrix3d> stiffness(frame.stiffness_n_per_m().data());
  for (int entries = 8; entries <= 10; ++entries) {
    config::Structure structure = frame;
    for (int k = 0; k < entries; ++k) structure.mutable_damping_ns_per_m()->add_value(k % 4 == 0 ? 1000.0 : 0.0);
    const bool accepted = problems_of(structure).empty();
    EXPECT_EQ(accepted, entries == 9) << entries << " entries";
    const auto damping = ComponentFactories<StructuralDamping>::make_member(structure, "damping", ComponentContext{});
    if (accepted) {
      EXPECT_NO_THROW((void)damping->dense(mass, stiffness)) << entries << " entries";
    } else {
      EXPECT_THROW((void)damping->dense(mass, stiffness), std::invalid_argument) << entries << " entries";
    }
  }
  for (const std::uint32_t mode_b : {3U, 4U}) {
    config::Structure structure = frame;
    config::RayleighDamping& rayleigh = *structure.mutable_rayleigh();
    rayleigh.set_zeta_a(0.02);
    rayleigh.set_zeta_b(0.02);
    rayleigh.set_mode_b(mode_b);
    const bool accepted = problems_of(structure).empty();
    EXPECT_EQ(accepted, mode_b == 3) << "mode_b " << mode_b;
    const auto damping = ComponentFactories<StructuralDamping>::make_member(structure, "damping", ComponentContext{});
    if (accepted) {
      EXPECT_NO_THROW((void)damping->dense(mass, stiffness)) << "mode_b " << mode_b;
    } else {
      EXPECT_THROW((void)damping->dense(mass, stiffness), std::invalid_argument) << "mode_b " << mode_b;
    }
  }
}

// Two modes of the same frequency cannot fit Rayleigh damping. A dense structure's rules compute its
// modes and refuse them; a sparse model's modes are computed by its build, which reports them as the
// config's error naming the field (exit 2), not as a failed run. Two identical two-storey frames,
// uncoupled: every frequency twice.
TEST(DampingContract, RepeatedFrequenciesAreTheConfigsErrorDenseOrSparse) {
  const config::Structure dense = parsed(
      "dofs: 4 mass_kg: [1000, 0, 0, 0, 0, 1000, 0, 0, 0, 0, 1000, 0, 0, 0, 0, 1000] "
      "stiffness_n_per_m: [2e6, -1e6, 0, 0, -1e6, 1e6, 0, 0, 0, 0, 2e6, -1e6, 0, 0, -1e6, 1e6] "
      "rayleigh { mode_a: 1 zeta_a: 0.02 mode_b: 2 zeta_b: 0.02 }");
  const std::vector<std::string> problems = problems_of(dense);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_NE(problems[0].find("have the same natural frequency"), std::string::npos) << problems[0];
  const config::Structure sparse = sparse_of(dense);
  ASSERT_TRUE(problems_of(sparse).empty());
  const std::string error = test::error_of<ConfigError>([&] { (void)make_structure(sparse); }, "built");
  EXPECT_EQ(error.rfind("structure.rayleigh.mode_b: mode 2 has the natural frequency of mode 1", 0), 0U) << error;
}

// Every problem of a damping is reported in one run, each at its field.
TEST(DampingContract, ADampingWithSeveralMistakesReportsThemAll) {
  const config::Structure dense =
      parsed(std::string(kFrame) + "rayleigh { mode_a: 0 zeta_a: 1.5 mode_b: 7 zeta_b: -0.1 }");
  EXPECT_EQ(problems_of(dense),
            (std::vector<std::string>{
                "structure.rayleigh.zeta_a: is 1.5, expected a modal damping ratio in [0, 1)",
                "structure.rayleigh.zeta_b: is -0.1, expected a modal damping ratio in [0, 1)",
                "structure.rayleigh.mode_a: is 0, expected a mode number from 1 to the 3 DOFs with mass",
                "structure.rayleigh.mode_b: is 7, expected a mode number from 1 to the 3 DOFs with mass",
            }));
  EXPECT_EQ(problems_of(sparse_of(dense)),
            (std::vector<std::string>{
                "structure.rayleigh.mode_a: is 0, expected a mode number from 1 to 3 (a sparse model's damping is "
                "fitted at two of its lowest modes)",
                "structure.rayleigh.mode_b: is 7, expected a mode number from 1 to 3 (a sparse model's damping is "
                "fitted at two of its lowest modes)",
                "structure.rayleigh.zeta_a: is 1.5, expected a modal damping ratio in [0, 1)",
                "structure.rayleigh.zeta_b: is -0.1, expected a modal damping ratio in [0, 1)",
            }));
  const config::Structure missing = parsed(std::string(kFrame) + "rayleigh { mode_b: 2 }");
  EXPECT_EQ(problems_of(missing), (std::vector<std::string>{
                                      "structure.rayleigh.zeta_a: missing; expected a modal damping ratio in [0, 1)",
                                      "structure.rayleigh.zeta_b: missing; expected a modal damping ratio in [0, 1)",
                                  }));
}

}  // namespace
}  // namespace rths::test_damping_contract
