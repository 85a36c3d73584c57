// What every registered setup kind must do, whichever it is: tests that run over the registry, so
// that a kind added to config::SetupTransform's oneof is held to them without a line here beyond its
// sample config (docs/architecture.md §9).
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include "common/config/setup_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "experiment.pb.h"
#include "node_physical/plants/setup_transform.hpp"
#include "node_physical/setups/matrix_setup.hpp"
#include "support/alloc_counter.hpp"
#include "support/contract_support.hpp"
#include "support/test_support.hpp"

namespace rths::test_setup_contract {
namespace {

namespace pb = google::protobuf;

// A valid setup of each kind the oneof can hold, by member name, with the channels of its site.
const std::map<std::string, std::pair<int, std::string>>& samples() {
  static const std::map<std::string, std::pair<int, std::string>> s{
      {"matrix", {2, "matrix { actuators: 3 value: [1, 0, 0, 1, 0.7071, 0.7071] }"}},
      {"inclined_actuator", {1, "inclined_actuator { length_m: 2 angle_deg: 30 offset_m: 0.05 }"}},
      {"two_actuators",
       {2, "two_actuators { actuator { length_m: 1.8 angle_deg: 20 } actuator { length_m: 2.5 angle_deg: 135 } }"}},
      // Seed 000's coupler (the maRTHS benchmark).
      {"rigid_coupler", {2, "rigid_coupler { arm_m: 0.29539 angle_deg: 25.4633 }"}},
  };
  return s;
}

std::vector<std::string> members() {
  return test::oneof_members(*config::SetupTransform::descriptor());
}

// A site of the sample's channels with `setup`.
config::Site site_of(const std::string& member, const config::SetupTransform& setup) {
  config::Site site;
  for (int c = 0; c < samples().at(member).first; ++c) site.add_channel();
  *site.mutable_setup() = setup;
  return site;
}

config::Site sample_site(const std::string& member) {
  config::SetupTransform setup;
  EXPECT_TRUE(pb::TextFormat::ParseFromString(samples().at(member).second, &setup)) << member;
  return site_of(member, setup);
}

// The problems the registered rules of its kind find in the site's setup (an empty list: valid).
std::vector<std::string> problems_of(const config::Site& site) {
  return test::component_problems(site.setup(), ComponentContext{.site = &site});
}

std::unique_ptr<SetupTransform> made(const config::Site& site) {
  return ComponentFactories<SetupTransform>::make_member(site.setup(), "kind", ComponentContext{.site = &site});
}

// A small motion of every DOF (m, or rad for a coupler's rotation) and its rate.
std::vector<double> small(std::size_t n, double scale) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * (1.0 + 0.5 * static_cast<double>(i));
  return v;
}

TEST(ComponentRegistry, EverySetupTheConfigCanNameHasRulesAFactoryItsActuatorsAndASample) {
  test::expect_every_member_registered<SetupTransform>(*config::SetupTransform::descriptor(), "kind", samples());
  for (const pb::Descriptor* type : registry::member_types(*config::SetupTransform::descriptor(), "kind")) {
    EXPECT_TRUE(ComponentFacts<SetupActuators>::has(*type)) << type->full_name() << ": no actuator count";
  }
}

// The registry builds the kind the config names, driving the site's channels and as many actuators as
// the kind states (what the validator and the driver's datagrams count).
TEST(SetupContract, TheSetupBuiltDrivesTheActuatorsItsKindStates) {
  for (const std::string& member : members()) {
    const config::Site site = sample_site(member);
    ASSERT_TRUE(problems_of(site).empty()) << member << ": " << problems_of(site).front();
    const std::unique_ptr<SetupTransform> setup = make_setup_transform(site);
    EXPECT_EQ(setup->dofs(), static_cast<std::size_t>(site.channel_size())) << member;
    EXPECT_EQ(setup->actuators(), setup_actuators(site.setup())) << member;
    EXPECT_EQ(driven_channels(site), setup->actuators()) << member;
  }
  config::Site none;
  none.add_channel();
  none.mutable_setup();
  EXPECT_EQ(setup_actuators(none.setup()), 0U);
  try {
    (void)make_setup_transform(none);
    ADD_FAILURE() << "a setup of no kind was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "setup: has no transformation; expected matrix { actuators: ... value: [...] }, inclined_actuator { "
              "length_m: ... angle_deg: ... }, two_actuators { actuator { ... } actuator { ... } } or "
              "rigid_coupler { arm_m: ... angle_deg: ... }");
  }
}

// A step's calls allocate nothing, and near the reference every one succeeds: the strokes of a small
// motion come back as that motion, and forces map both ways.
TEST(SetupContract, TheStepCallsAllocateNothingAndRoundTrip) {
  for (const std::string& member : members()) {
    const std::unique_ptr<SetupTransform> setup = make_setup_transform(sample_site(member));
    const std::vector<double> u = small(setup->dofs(), 1e-3);
    const std::vector<double> v = small(setup->dofs(), 1e-2);
    std::vector<double> s(setup->actuators());
    std::vector<double> sv(setup->actuators());
    std::vector<double> f(setup->actuators(), 100.0);
    std::vector<double> back(setup->dofs());
    std::vector<double> force(setup->dofs());
    const std::uint64_t before = test::allocations_on_this_thread();
    bool ok = setup->strokes(u, s) && setup->stroke_velocities(u, v, sv) && setup->interface_displacements(s, back) &&
              setup->interface_forces(s, f, force) && setup->actuator_forces(s, force, f);
    EXPECT_EQ(test::allocations_on_this_thread(), before) << member;
    ASSERT_TRUE(ok) << member;
    for (std::size_t i = 0; i < u.size(); ++i) EXPECT_NEAR(back[i], u[i], 1e-12) << member << " DOF " << i;
    for (const double x : f) EXPECT_TRUE(std::isfinite(x)) << member;
    ok = setup->interface_forces(s, f, back);
    ASSERT_TRUE(ok) << member;
    for (std::size_t i = 0; i < force.size(); ++i) EXPECT_NEAR(back[i], force[i], 1e-9 * 100.0) << member;
  }
}

// What the rules accept, the factory builds, and the setup maps the reference both ways with finite
// values: the rules are the only statement of the config's bounds, and a constructor keeps only the
// guards that protect its memory. Every numeric field of each sample (its actuators' too) is swept over
// values on both sides of any bound a rule might draw; both verdicts must occur.
TEST(SetupContract, WhatTheRulesAcceptIsBuiltAndMapsTheReference) {
  const std::vector<double> values{-200.0, -100.0, -1.0, 0.0,  0.05, 0.5,  1.0,   2.0,   3.0,   6.0,
                                   10.0,   45.0,   80.0, 85.0, 89.0, 90.0, 100.0, 180.0, 181.0, 1e6};
  for (const std::string& member : members()) {
    const auto valid = [&](const config::SetupTransform& setup) { return problems_of(site_of(member, setup)).empty(); };
    const auto maps = [&](const config::SetupTransform& setup, const std::string& what, bool /*changed*/) {
      const config::Site site = site_of(member, setup);
      std::unique_ptr<SetupTransform> built;
      ASSERT_NO_THROW(built = made(site)) << member << " " << what;
      ASSERT_EQ(built->actuators(), setup_actuators(setup)) << member << " " << what;
      const std::vector<double> zero(built->dofs(), 0.0);
      std::vector<double> s(built->actuators());
      std::vector<double> back(built->dofs());
      ASSERT_TRUE(built->strokes(zero, s)) << member << " " << what << ": the reference is in the valid range";
      ASSERT_TRUE(built->interface_displacements(s, back)) << member << " " << what;
      for (const double x : back) EXPECT_TRUE(std::isfinite(x)) << member << " " << what;
    };
    test::sweep_verdicts<config::SetupTransform>(sample_site(member).setup(), member, values, valid, maps,
                                                 {.repeated_doubles = true, .nested_messages = true});
  }
}

// The one guard a constructor keeps (the matrix's size, which its arrays rely on) agrees with the
// rules on its boundary: one entry short or over, both refuse; exactly actuators x DOFs, both build.
TEST(SetupContract, TheMatrixGuardAgreesWithTheRulesOnItsBoundary) {
  const config::Site site = sample_site("matrix");
  const config::SetupMatrix& matrix = site.setup().matrix();
  const std::vector<double> t(matrix.value().begin(), matrix.value().end());
  for (const int extra : {-1, 0, 1}) {
    std::vector<double> values = t;
    if (extra < 0) values.pop_back();
    if (extra > 0) values.push_back(0.5);
    config::Site changed = site;
    changed.mutable_setup()->mutable_matrix()->clear_value();
    for (const double v : values) changed.mutable_setup()->mutable_matrix()->add_value(v);
    const bool accepted = problems_of(changed).empty();
    EXPECT_EQ(accepted, extra == 0) << extra;
    if (accepted) {
      EXPECT_NO_THROW(MatrixSetup(matrix.actuators(), values, 2)) << extra;
    } else {
      EXPECT_THROW(MatrixSetup(matrix.actuators(), values, 2), std::invalid_argument) << extra;
    }
  }
}

// Every broken rule of a setup is reported in one run, each on the field's path.
TEST(SetupContract, EveryBrokenRuleOfASetupIsReported) {
  config::Site inclined = sample_site("inclined_actuator");
  inclined.add_channel();
  inclined.mutable_setup()->mutable_inclined_actuator()->set_angle_deg(90);
  inclined.mutable_setup()->mutable_inclined_actuator()->set_offset_m(3);
  std::vector<std::string> lines = problems_of(inclined);
  ASSERT_EQ(lines.size(), 3U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("inclined_actuator: drives one interface DOF, but the site has 2 channels", 0), 0U);
  EXPECT_EQ(lines[1].rfind("inclined_actuator.angle_deg: is 90 degrees: the actuator lies 90 degrees off", 0), 0U);
  EXPECT_EQ(lines[2].rfind("inclined_actuator.offset_m: is 3 m, expected a crosswise offset", 0), 0U);

  config::Site pair = sample_site("two_actuators");
  pair.mutable_setup()->mutable_two_actuators()->mutable_actuator(0)->set_length_m(-1);
  pair.mutable_setup()->mutable_two_actuators()->mutable_actuator(1)->clear_length_m();
  pair.mutable_setup()->mutable_two_actuators()->mutable_actuator(1)->set_angle_deg(200);
  lines = problems_of(pair);
  ASSERT_EQ(lines.size(), 3U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("two_actuators.actuator[0].length_m: is -1", 0), 0U) << lines[0];
  EXPECT_EQ(lines[1].rfind("two_actuators.actuator[1].length_m: missing", 0), 0U) << lines[1];
  EXPECT_EQ(lines[2].rfind("two_actuators.actuator[1].angle_deg: is 200, expected an angle", 0), 0U) << lines[2];

  // The setup's own rules after its kind's: every stroke limit that is not one.
  config::Site limited = sample_site("matrix");
  for (const double limit : {0.1, -0.1, 0.0}) limited.mutable_setup()->add_stroke_limit_m(limit);
  Problems problems;
  EXPECT_FALSE(check_setup(limited.setup(), ComponentContext{.site = &limited}, Checker(problems, "setup")));
  ASSERT_EQ(problems.size(), 2U) << ::testing::PrintToString(problems.lines());
  EXPECT_EQ(problems.lines()[0], "setup.stroke_limit_m[1]: is -0.1, expected actuator 1's stroke limit (m, > 0)");
  EXPECT_EQ(problems.lines()[1], "setup.stroke_limit_m[2]: is 0, expected actuator 2's stroke limit (m, > 0)");
}

}  // namespace
}  // namespace rths::test_setup_contract
