// What every registered driver to equipment must do, whichever it is: tests that run over the
// registry with a fake of each driver's equipment, so that a driver added to config::Driver's oneof
// is held to them as soon as it has its fake in support/driver_equipment.hpp (docs/architecture.md,
// "Components"; docs/plant-drivers.md). The UDP bridge's own rules (its counter, stale replies, a
// foreign sender, the disarm) are in test_udp_bridge.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/interfaces/plant_driver.hpp"
#include "node_physical/plants/site_plants.hpp"
#include "results.pb.h"
#include "support/alloc_counter.hpp"
#include "support/contract_support.hpp"
#include "support/driver_equipment.hpp"
#include "support/test_support.hpp"

namespace rths::test_driver_contract {
namespace {

using test::fakes;
using test::UdpTarget;

namespace pb = google::protobuf;

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;

using test::Equipment;

// A driver opened against its equipment at 12 mm under 345 N.
struct Rig {
  std::unique_ptr<Equipment> equipment;
  config::Site site;
  std::unique_ptr<PlantDriver> driver;
  std::array<Measurement, 1> measured{};
  std::array<InterfaceMotion, 1> commands{};

  explicit Rig(const std::string& member) : equipment(equipment_of(member)), site(equipment->site()) {
    driver = make_plant_driver(site, kRateHz);
    equipment->open(*driver, 0.012, 345.0, measured);
  }
  static std::unique_ptr<Equipment> equipment_of(const std::string& member) { return fakes().at(member)(); }
  bool step(double command_m) {
    commands[0].displacement_m = command_m;
    return driver->exchange(commands, measured, kDt);
  }
};

std::vector<std::string> driver_members() {
  return test::oneof_members(*config::Driver::descriptor());
}

TEST(DriverContract, TheSiteBuildsTheDriverItNamesWhichReportsAsThatDriver) {
  for (const std::string& member : driver_members()) {
    Rig rig(member);
    EXPECT_TRUE(test::component_problems(rig.site.driver(), ComponentContext{kRateHz, nullptr, &rig.site}).empty());
    EXPECT_EQ(rig.driver->channels(), 1U) << member;
    EXPECT_EQ(rig.measured[0].displacement_m, 0.012) << member << ": open() reads where the actuator is";
    results::PlantReport report;
    rig.driver->report(0, report);
    const pb::FieldDescriptor* held = results::PlantReport::GetReflection()->GetOneofFieldDescriptor(
        report, results::PlantReport::descriptor()->FindOneofByName("kind"));
    ASSERT_NE(held, nullptr) << member;
    EXPECT_EQ(held->name(), member);
  }
}

TEST(DriverContract, AStepAllocatesNothingAnsweredOrNot) {
  for (const std::string& member : driver_members()) {
    Rig rig(member);
    rig.equipment->answer(1, 0.001, 1.0, 0.0);
    bool ok = rig.step(0.0);  // the first step, outside the count
    const std::uint64_t before = test::allocations_on_this_thread();
    for (std::uint32_t j = 2; j < 200; ++j) {
      if (j % 7 != 0) rig.equipment->answer(j, 0.001, 1.0, 1e-5 * j);
      ok = rig.step(1e-5 * j) && ok;
      rig.equipment->drain();
    }
    EXPECT_EQ(test::allocations_on_this_thread(), before) << member;
    EXPECT_TRUE(ok) << member;
  }
}

TEST(DriverContract, OnSilenceItHoldsTheLastMeasurementAndSaysSo) {
  for (const std::string& member : driver_members()) {
    Rig rig(member);
    rig.equipment->answer(1, 0.004, 40.0, 0.002);
    ASSERT_TRUE(rig.step(0.002)) << member;
    EXPECT_FALSE(rig.measured[0].held) << member;
    ASSERT_TRUE(rig.step(0.003)) << member << ": one silent step is not yet a fault";
    EXPECT_TRUE(rig.measured[0].held) << member << ": a held reading must say so (controllers must not learn from it)";
    EXPECT_EQ(rig.measured[0].displacement_m, 0.004) << member;
    EXPECT_EQ(rig.measured[0].force_n, 40.0) << member;
    EXPECT_NE(rig.driver->status(0) & driver_status::kReplyMissing, 0U) << member;
  }
}

TEST(DriverContract, AnAnswerOfTheWrongSizeStopsTheSiteHoldingTheLastMeasurement) {
  for (const std::string& member : driver_members()) {
    Rig rig(member);
    rig.equipment->answer(1, 0.004, 40.0, 0.002);
    ASSERT_TRUE(rig.step(0.002)) << member;
    rig.equipment->answer_of_wrong_size();
    EXPECT_FALSE(rig.step(0.003)) << member;
    EXPECT_FALSE(rig.driver->fault().empty()) << member << ": a stop says why";
    EXPECT_EQ(rig.measured[0].displacement_m, 0.004) << member;
  }
}

// Whatever a driver's rules accept, its factory builds: every numeric field of its config swept on
// both sides of its bounds. A constructor's guard that the rules lack (or a rule that lets through
// what the constructor refuses) turns this red.
TEST(DriverContract, WhatTheRulesAcceptIsBuilt) {
  const std::vector<double> values{-1.0, 0.0, 1e-6, 1e-4, 4e-4, 1e-3, 0.5, 1.0, 2.0, 60.0, 61.0, 1024.0, 1025.0, 1e6};
  for (const std::string& member : driver_members()) {
    const std::unique_ptr<Equipment> fake = Rig::equipment_of(member);
    config::Site site = fake->site();
    const auto valid = [&](const config::Driver& driver) {
      *site.mutable_driver() = driver;
      return test::component_problems(site.driver(), ComponentContext{kRateHz, nullptr, &site}).empty();
    };
    const auto built = [&](const config::Driver& /*driver*/, const std::string& what, bool /*changed*/) {
      EXPECT_NO_THROW((void)make_plant_driver(site, kRateHz)) << member << " " << what;
    };
    // An address or a layout is not a number: their own tests.
    test::sweep_verdicts<config::Driver>(fake->site().driver(), member, values, valid, built);
  }
}

// Every broken rule of a driver is reported in one run, each on the field's path.
TEST(DriverContract, EveryBrokenRuleOfTheBridgeIsReported) {
  UdpTarget target;
  config::Site site = target.site();
  config::UdpBridge& bridge = *site.mutable_driver()->mutable_udp_bridge();
  bridge.set_reply_timeout_s(0.01);
  bridge.set_max_missed_replies(0);
  bridge.set_open_timeout_s(0);
  bridge.mutable_reply(1)->set_channel(3);
  const std::vector<std::string> lines =
      test::component_problems(site.driver(), ComponentContext{kRateHz, nullptr, &site}, "site[0].driver");
  ASSERT_EQ(lines.size(), 4U) << ::testing::PrintToString(lines);
  EXPECT_NE(lines[0].find("site[0].driver.udp_bridge.reply_timeout_s"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("site[0].driver.udp_bridge.max_missed_replies"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("site[0].driver.udp_bridge.open_timeout_s"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("site[0].driver.udp_bridge.reply[1].channel"), std::string::npos) << lines[3];
}

}  // namespace
}  // namespace rths::test_driver_contract
