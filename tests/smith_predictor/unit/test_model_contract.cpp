// What every registered prediction model must do, whichever it is: tests that run over the registry,
// so that a model added to config::Model's oneof is held to them without a line here beyond its
// sample config (docs/architecture.md §9).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "smith_predictor/site_models/site_models.hpp"
#include "support/alloc_counter.hpp"
#include "support/contract_support.hpp"
#include "support/test_support.hpp"

namespace rths::test_model_contract {
namespace {

namespace pb = google::protobuf;

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;

// A valid config of each model the oneof can hold, by member name: what the contract runs.
const std::map<std::string, std::string>& samples() {
  static const std::map<std::string, std::string> s{
      {"spring", "spring { stiffness_n_per_m: 1e5 }"},
      // Seed 002 Table 1, model A at 3 V (examples/seed002/).
      {"bouc_wen",
       "bouc_wen { alpha_a_n_per_m: 3584 alpha_b_n_per_m_v: 8304 c0a_ns_per_m: 153.9 c0b_ns_per_m_v: 3282 "
       "c1a_ns_per_m: 9947 c1b_ns_per_m_v: 40386 k0_n_per_m: 586 k1_n_per_m: 1.6 x0_m: 0 gamma_per_m2: 36200 "
       "beta_per_m2: 36200 a: 154.6 n: 2 eta_per_s: 60 voltage_v: 3 substeps: 4 }"},
  };
  return s;
}

config::Model sample(const std::string& member) {
  return test::parse_sample<config::Model>(samples(), member);
}

std::vector<std::string> members() {
  return test::oneof_members(*config::Model::descriptor());
}

// The problems the registered rules find in `model` (an empty list: valid).
std::vector<std::string> problems_of(const config::Model& model) {
  return test::component_problems(model, ComponentContext{.rate_hz = kRateHz});
}

// Seed 002's characterisation motion (Fig. 11): 5 mm at 2.5 Hz.
InterfaceMotion motion_at(int step) {
  const double t = step * kDt;
  const double w = 2 * std::numbers::pi * 2.5;
  return {0.005 * std::sin(w * t), 0.005 * w * std::cos(w * t), -0.005 * w * w * std::sin(w * t)};
}

TEST(ModelContract, EveryModelTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<PredictionModel>(*config::Model::descriptor(), "kind", samples());
}

// The registry builds the model the config names: its description (what the handshake digests and the
// logs show) starts with the name of its config message and names every field of it, so that both
// Smith parts' digests see every parameter.
TEST(ModelContract, TheModelBuiltIsTheOneTheConfigNames) {
  for (const std::string& member : members()) {
    const config::Model config = sample(member);
    ASSERT_TRUE(problems_of(config).empty()) << member << ": " << problems_of(config).front();
    const std::string description = make_model(config)->describe();
    const pb::Descriptor* type = config::Model::descriptor()->FindFieldByName(member)->message_type();
    EXPECT_TRUE(description.starts_with(type->name() + " ")) << member << ": " << description;
    for (int f = 0; f < type->field_count(); ++f) {
      EXPECT_NE(description.find(" " + type->field(f)->name() + "="), std::string::npos)
          << member << ": " << description << " does not name " << type->field(f)->name();
    }
  }
  EXPECT_THROW(make_model(config::Model{}), std::invalid_argument);
}

TEST(ModelContract, AStepAllocatesNothing) {
  for (const std::string& member : members()) {
    const std::unique_ptr<PredictionModel> model = make_model(sample(member));
    for (int i = 0; i < 8; ++i) model->step(motion_at(i), kDt);
    const std::uint64_t before = test::allocations_on_this_thread();
    double sum = 0.0;
    for (int i = 8; i < 4096; ++i) sum += model->step(motion_at(i), kDt);
    (*model).reset();  // the model's reset, not the pointer's
    EXPECT_EQ(test::allocations_on_this_thread() - before, 0U) << member;
    EXPECT_TRUE(std::isfinite(sum)) << member;
  }
}

// Both Smith parts start from the same model and a site's specimen is reset between runs: a clone and
// a reset model step exactly as a fresh one does.
TEST(ModelContract, ACloneAndAResetModelStepAsAFreshOne) {
  for (const std::string& member : members()) {
    const std::unique_ptr<PredictionModel> fresh = make_model(sample(member));
    const std::unique_ptr<PredictionModel> used = make_model(sample(member));
    for (int i = 0; i < 300; ++i) used->step(motion_at(i + 17), kDt);
    (*used).reset();
    const std::unique_ptr<PredictionModel> clone = fresh->clone();
    for (int i = 0; i < 1000; ++i) {
      const double expected = fresh->step(motion_at(i), kDt);
      ASSERT_EQ(used->step(motion_at(i), kDt), expected) << member << " reset, step " << i;
      ASSERT_EQ(clone->step(motion_at(i), kDt), expected) << member << " clone, step " << i;
    }
  }
}

// What the rules accept, the factory builds and the model steps with finite forces and a finite dynamic
// stiffness (what the stability planner reads): the rules are the only statement of the config's
// bounds, and a constructor keeps only the guards that protect its memory. Every numeric field of each
// sample is swept over values on both sides of any bound a rule might draw; both verdicts must occur.
// An accepted change of a parameter changes the model's digest (the handshake compares the two Smith
// parts' models by it).
//
// The values stop at 1e4: a model integrated explicitly is stable only below a speed of the motion,
// which no rule of its config can know (the Bouc-Wen damper's RK4 below a speed that falls as
// 1 / sqrt(A (gamma + beta)), bouc_wen_damper.hpp; with A = 1e6, 6500 times seed 002's, that speed is
// below this motion's 0.08 m/s).
TEST(ModelContract, WhatTheRulesAcceptIsBuiltAndStepsFinite) {
  const std::vector<double> values{-1.0, 0.0, 1e-3, 0.5, 1.0, 2.0, 3.0, 4.0, 16.0, 100.0, 1e4};
  for (const std::string& member : members()) {
    const config::Model base = sample(member);
    const std::uint64_t base_digest = model_digest(*make_model(base));
    const auto valid = [](const config::Model& config) { return problems_of(config).empty(); };
    const auto built = [&](const config::Model& config, const std::string& what, bool changed) {
      std::unique_ptr<PredictionModel> model;
      ASSERT_NO_THROW(model = make_model(config)) << member << " " << what;
      if (changed) {
        EXPECT_NE(model_digest(*model), base_digest) << member << " " << what;
      }
      for (const double w : {0.0, 1.0, 2 * std::numbers::pi * 2.5, 1e3}) {
        const std::complex<double> h = model->dynamic_stiffness(w);
        ASSERT_TRUE(std::isfinite(h.real()) && std::isfinite(h.imag())) << member << " " << what << " w " << w;
      }
      for (int i = 0; i < 1024; ++i) {
        ASSERT_TRUE(std::isfinite(model->step(motion_at(i), kDt))) << member << " " << what << " step " << i;
      }
    };
    test::sweep_verdicts<config::Model>(base, member, values, valid, built, {.every_field_known = true});
  }
}

}  // namespace
}  // namespace rths::test_model_contract
