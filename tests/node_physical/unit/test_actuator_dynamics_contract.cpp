// What every registered actuator dynamics must do, whichever it is: tests that run over the registry,
// so that a model added to config::Actuator's oneof `dynamics` is held to them without a line here
// beyond its sample config (docs/architecture.md §9).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include "common/config/config.hpp"
#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/actuators/linear_actuator.hpp"
#include "node_physical/interfaces/actuator_dynamics.hpp"
#include "node_physical/plants/actuator_plant.hpp"
#include "results.pb.h"
#include "support/alloc_counter.hpp"
#include "support/contract_support.hpp"
#include "support/test_support.hpp"

namespace rths::test_actuator_dynamics_contract {
namespace {

namespace pb = google::protobuf;

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;

// A valid config of each dynamics the oneof can hold, by member name: what the contract runs.
const std::map<std::string, std::string>& samples() {
  static const std::map<std::string, std::string> s{
      // Seed 004 Eq. 7, the IISL actuator.
      {"linear", "linear { numerator: [2.382e9] denominator: [1, 485.5, 1.317e5, 3.182e7, 2.382e9] }"},
      // examples/actuator/spring_servo_hydraulic.textproto.
      {"servo_hydraulic",
       "servo_hydraulic { area_m2: 1e-3 flow_gain_m2_per_s: 0.075 compliance_m3_per_pa: 3.333e-14 "
       "leakage_m3_per_s_per_pa: 1e-12 piston_mass_kg: 10 piston_damping_ns_per_m: 2000 substeps: 16 }"},
  };
  return s;
}

// With a force limit, which the servo-hydraulic model's factory reads from the channel.
config::Actuator sample(const std::string& member) {
  auto actuator = test::parse_sample<config::Actuator>(samples(), member);
  actuator.mutable_limits()->set_force_n(2e4);
  return actuator;
}

std::vector<std::string> members() {
  return test::oneof_members(*config::Actuator::descriptor(), "dynamics");
}

// A channel of `actuator` on a spring specimen.
config::Channel channel_of(const config::Actuator& actuator) {
  config::Channel channel;
  channel.mutable_specimen()->mutable_spring()->set_stiffness_n_per_m(1e5);
  *channel.mutable_actuator() = actuator;
  return channel;
}

// The problems the registered rules of its dynamics find in `actuator` (an empty list: valid).
std::vector<std::string> problems_of(const config::Actuator& actuator) {
  const config::Channel channel = channel_of(actuator);
  return test::component_problems(channel.actuator(), ComponentContext{.rate_hz = kRateHz, .channel = &channel}, "",
                                  "dynamics");
}

// 5 mm at 2 Hz.
InterfaceMotion command_at(int step) {
  const double w = 2 * std::numbers::pi * 2.0;
  const double t = step * kDt;
  return {0.005 * std::sin(w * t), 0.005 * w * std::cos(w * t), -0.005 * w * w * std::sin(w * t)};
}

TEST(ComponentRegistry, EveryActuatorDynamicsTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<ActuatorDynamics>(*config::Actuator::descriptor(), "dynamics", samples());
}

// The registry builds the dynamics the config names: the plant's report is the member of the report's
// oneof of the same name (the names agree by design: actuator { linear {} } reports as
// PlantReport.linear), with the limits as configured.
TEST(ActuatorDynamicsContract, TheDynamicsBuiltReportsAsTheOneTheConfigNames) {
  for (const std::string& member : members()) {
    const config::Actuator config = sample(member);
    ASSERT_TRUE(problems_of(config).empty()) << member << ": " << problems_of(config).front();
    const std::unique_ptr<Plant> plant = make_plant(channel_of(config), kRateHz);
    results::PlantReport report;
    plant->report(report);
    EXPECT_EQ(registry::member_name(report, "kind"), member);
  }
  config::Actuator none;
  none.mutable_noise()->set_seed(2);
  try {
    (void)make_plant(channel_of(none), kRateHz);
    ADD_FAILURE() << "an actuator of no dynamics was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "actuator: no dynamics given (expected linear or servo_hydraulic)");
  }
}

TEST(ActuatorDynamicsContract, APlantsStepAllocatesNothingAndStaysFinite) {
  for (const std::string& member : members()) {
    const std::unique_ptr<Plant> plant = make_plant(channel_of(sample(member)), kRateHz);
    for (int i = 0; i < 8; ++i) (void)plant->step(command_at(i), kDt);
    const std::uint64_t before = test::allocations_on_this_thread();
    double sum = 0.0;
    for (int i = 8; i < 4096; ++i) sum += plant->step(command_at(i), kDt).displacement_m;
    EXPECT_EQ(test::allocations_on_this_thread() - before, 0U) << member;
    EXPECT_TRUE(std::isfinite(sum)) << member;
  }
}

// What the rules accept, the factory builds: the rules are the only statement of the config's bounds,
// and a constructor keeps only the guards that protect its memory. Every numeric field of each sample
// (its nested messages' too) is swept over values on both sides of any bound a rule might draw; both
// verdicts must occur. The steps are not held finite here: a model integrated explicitly is stable
// only below a step its parameters set, which no rule of its config can know (the servo-hydraulic oil
// column's mode at A / sqrt(C m), RK4's bound on its substep); the samples step finite above.
TEST(ActuatorDynamicsContract, WhatTheRulesAcceptIsBuilt) {
  const std::vector<double> values{-1.0, 0.0, 1e-12, 1e-3, 0.5, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 16.0, 65536.0, 65537.0};
  for (const std::string& member : members()) {
    const auto valid = [](const config::Actuator& config) { return problems_of(config).empty(); };
    const auto built = [&](const config::Actuator& config, const std::string& what, bool /*changed*/) {
      std::unique_ptr<Plant> plant;
      ASSERT_NO_THROW(plant = make_plant(channel_of(config), kRateHz)) << member << " " << what;
      EXPECT_TRUE(std::isfinite(plant->step(command_at(1), kDt).displacement_m)) << member << " " << what;
    };
    test::sweep_verdicts<config::Actuator>(sample(member), member, values, valid, built,
                                           {.repeated_doubles = true, .nested_messages = true});
  }
}

// The guards the linear model keeps (the states its arrays hold, the sizes of a state space, a proper
// transfer function with a numerator) agree with its rules on their boundaries: what the rules accept
// is built, what the guards refuse the rules refuse.
TEST(ActuatorDynamicsContract, TheLinearModelsGuardsAgreeWithItsRulesOnTheirBoundaries) {
  const auto verdicts = [](const std::string& text) {
    config::Actuator actuator;
    EXPECT_TRUE(pb::TextFormat::ParseFromString(text, &actuator)) << text;
    bool built = true;
    try {
      (void)continuous_model(actuator.linear());
    } catch (const std::invalid_argument&) {
      built = false;
    }
    return std::pair{problems_of(actuator).empty(), built};
  };
  const auto accepted_and_built = [&](const std::string& text) {
    EXPECT_EQ(verdicts(text), std::pair(true, true)) << text;
  };
  const auto refused_by_both = [&](const std::string& text) {
    EXPECT_EQ(verdicts(text), std::pair(false, false)) << text;
  };
  // (s + 1)^8 and (s + 1)^9: the most states the arrays hold, and one more.
  accepted_and_built("linear { numerator: [1] denominator: [1, 8, 28, 56, 70, 56, 28, 8, 1] }");
  refused_by_both("linear { numerator: [1] denominator: [1, 9, 36, 84, 126, 126, 84, 36, 9, 1] }");
  accepted_and_built("linear { numerator: [1, 2] denominator: [1, 2] }");
  refused_by_both("linear { numerator: [1, 2, 3] denominator: [1, 2] }");
  refused_by_both("linear { numerator: [0, 0] denominator: [1, 2] }");
  refused_by_both("linear { numerator: [1] denominator: [0, 1, 2] }");
  std::string eight = "linear { state_space { states: 8 a: [";
  for (int i = 0; i < 64; ++i) eight += (i == 0 ? "" : ", ") + std::string(i % 9 == 0 ? "-1" : "0");
  eight += "] b: [1, 1, 1, 1, 1, 1, 1, 1] c: [1, 1, 1, 1, 1, 1, 1, 1] } }";
  accepted_and_built(eight);
  refused_by_both("linear { state_space { states: 9 a: [-1] b: [1] c: [1] } }");
  refused_by_both("linear { state_space { states: 2 a: [-1, 0, 0] b: [1, 1] c: [1, 1] } }");
  refused_by_both("linear { state_space { states: 1 a: [-1] b: [1, 1] c: [1] } }");
}

// Every broken rule of a dynamics is reported in one run, each on the field's path; an actuator of no
// dynamics is refused naming how each is written.
TEST(ActuatorDynamicsContract, EveryBrokenRuleOfADynamicsIsReported) {
  config::Actuator servo = sample("servo_hydraulic");
  servo.mutable_servo_hydraulic()->set_area_m2(-1);
  servo.mutable_servo_hydraulic()->clear_piston_mass_kg();
  servo.mutable_servo_hydraulic()->set_valve_time_constant_s(-0.1);
  servo.mutable_servo_hydraulic()->set_substeps(0);
  std::vector<std::string> lines = problems_of(servo);
  ASSERT_EQ(lines.size(), 4U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "servo_hydraulic.area_m2: is -1, expected a piston area (m^2) > 0");
  EXPECT_EQ(lines[1], "servo_hydraulic.piston_mass_kg: missing; expected a piston mass (kg) > 0");
  EXPECT_EQ(lines[2], "servo_hydraulic.valve_time_constant_s: is -0.1, expected >= 0 s (0: ideal valve)");
  EXPECT_EQ(lines[3], "servo_hydraulic.substeps: is 0, expected 1..65536 RK4 substeps per step");

  config::Actuator linear;
  ASSERT_TRUE(pb::TextFormat::ParseFromString(
      "linear { numerator: [1, 1, 1] denominator: [1, -1] perturbation { relative: 2 } }", &linear));
  lines = problems_of(linear);
  ASSERT_EQ(lines.size(), 3U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("linear.numerator: has 3 coefficients for a denominator of 2", 0), 0U) << lines[0];
  EXPECT_EQ(lines[1].rfind("linear.denominator: has a root 1+0j with real part >= 0", 0), 0U) << lines[1];
  EXPECT_EQ(lines[2], "linear.perturbation.relative: is 2, expected a relative perturbation in [0, 1)");
  ASSERT_TRUE(pb::TextFormat::ParseFromString(
      "linear { numerator: [1] denominator: [1, 1] state_space { states: 1 a: [-1] b: [1] c: [1] } }", &linear));
  EXPECT_EQ(problems_of(linear),
            std::vector<std::string>{"linear: has both a transfer function and state_space; expected one of them"});

  // Through the config validator: the actuator of no dynamics, with what each is written as.
  config::Experiment experiment = test::load_example("actuator/spring_servo_hydraulic.textproto").experiment;
  experiment.mutable_site(0)->mutable_channel(0)->mutable_actuator()->clear_servo_hydraulic();
  try {
    validate(experiment, "servo.textproto");
    ADD_FAILURE() << "an actuator of no dynamics was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "servo.textproto: site[0].channel[0].actuator: has no dynamics; expected linear { numerator: [...] "
              "denominator: [...] } or servo_hydraulic { ... }");
  }
}

}  // namespace
}  // namespace rths::test_actuator_dynamics_contract
