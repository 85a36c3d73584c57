// A site that runs its safe motion in real time: it ramps from the measured position to the initial
// position before step 0 and, after the test, holds and then moves to its safe position (the ramps'
// plans and checks: unit/test_safe_motion.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "common/core/exit_codes.hpp"
#include "node_physical/controllers/pass_through.hpp"
#include "node_physical/server/site_server.hpp"
#include "node_physical/site/safe_motion.hpp"
#include "support/process.hpp"
#include "support/safe_motion.hpp"

namespace rths::test_safe_motion {
namespace {

using test::ramping_config;

constexpr double kRate = test::kRampingRateHz;

// A site with safe motion ramps to the initial position before step 0 and, after the test, holds
// and then moves to its safe position; the summary says what each ramp did.
class SafeMotionSite : public test::RunFolderTest {};

TEST_F(SafeMotionSite, RampsBeforeAndAfterTheTestAndEndsAtTheSafePosition) {
  const auto file = dir_ / "ramps.textproto";
  std::ofstream(file) << ramping_config(
      "start_ramp_s: 0.3 stop_hold_s: 0.1 safe_position_m: [0.002] stop_velocity_m_per_s: 0.02");
  const std::string key = test::site_key_override(dir_, "lab");
  test::Process site("rths-physical",
                     {"serve", file.string(), "--site", "lab", "--listen", "127.0.0.1:0", "--out",
                      (dir_ / "site").string(), "--set", key},
                     dir_ / "site");
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  test::Process numerical("rths-numerical",
                          {"run", file.string(), "--realtime", "--set", "site[lab].address=" + where, "--set", key,
                           "--out", (dir_ / "run").string(), "--quiet"},
                          dir_ / "numerical");
  ASSERT_EQ(numerical.wait(std::chrono::seconds(30)), kExitCompleted) << numerical.err();
  ASSERT_EQ(site.wait(std::chrono::seconds(30)), kExitCompleted) << site.err();
  const results::SiteSummary summary = test::read_site_summary(dir_ / "site/site_lab.json");
  const results::SafeMotionReport& motion = summary.safe_motion();
  EXPECT_EQ(motion.start_ramp_steps(), std::llround(0.3 * kRate));
  ASSERT_EQ(motion.start_position_m_size(), 1);
  EXPECT_EQ(motion.start_position_m(0), 0.0);  // a simulated actuator starts at rest
  EXPECT_EQ(motion.stop_ramp(), "completed");
  // Hold 102 steps, the move from the last command at 0.02 m/s peak, the settle.
  const std::vector<double> command = test::csv_column(dir_ / "site/site_lab.csv", "command_m");
  ASSERT_FALSE(command.empty());
  // The record's command column is the controller's command: pass-through, the admitted target.
  EXPECT_EQ(command, test::csv_column(dir_ / "site/site_lab.csv", "target_m"));
  const double way = std::abs(0.002 - command.back());
  EXPECT_EQ(motion.stop_ramp_steps(), std::llround(0.1 * kRate) +
                                          static_cast<std::int64_t>(std::ceil(std::numbers::pi * way / 0.04 * kRate)) +
                                          std::llround(kStopSettleS * kRate));
  ASSERT_EQ(motion.final_position_m_size(), 1);
  EXPECT_EQ(motion.final_position_m(0), 0.002);  // the ideal actuator reads the command exactly
}

// What happened at the end of a stop ramp, in order: the ramp's commands, the disarm and the log lines
// (run_stop_ramp steps, disarms and logs on the calling thread).
using Events = std::vector<std::string>;

// Equipment whose actuators read their commands, and which says when it was disarmed.
class DisarmedEquipment final : public PlantDriver {
 public:
  explicit DisarmedEquipment(Events& events) : events_(events) {}
  [[nodiscard]] std::size_t channels() const override { return 1; }
  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double /*dt_s*/) override {
    measured[0] = {commands[0].displacement_m, 0.0, 0.0};
    events_.emplace_back("command");
    return true;
  }
  std::string disarm() override {
    events_.emplace_back("disarm");
    return {};
  }
  void report(std::size_t /*channel*/, results::PlantReport& out) const override { out.mutable_ideal(); }

 private:
  Events& events_;
};

// A log that writes its lines into the events.
class LogIntoEvents final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit LogIntoEvents(Events& events) : events_(events) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    events_.push_back("log: " + std::string(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

 private:
  Events& events_;
};

// run_stop_ramp on one channel of `equipment` (commanded last at 0) for a site with a UDP bridge whose
// stop ramp holds 20 ms, then moves to 1 mm at 0.02 m/s; the stroke limit 0.05 m.
std::optional<StopRampFault> stop_ramp_on(std::unique_ptr<PlantDriver> equipment, results::SafeMotionReport& report) {
  config::Site site;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(name: "lab" driver { udp_bridge { target: "127.0.0.1:9" } }
         safe_motion { stop_hold_s: 0.02 safe_position_m: [0.001] stop_velocity_m_per_s: 0.02 })",
      &site));
  std::vector<std::unique_ptr<ActuatorController>> controllers;
  controllers.push_back(std::make_unique<PassThroughController>());
  PhysicalSubstructure substructure(std::move(controllers), std::move(equipment),
                                    Interlock({{0.05, 0.1, 1e4}}, 1.0 / kRate));
  return run_stop_ramp(substructure, site, RealtimeOptions{}, report);
}

// The equipment's watchdog counts the silence after the stop ramp's last command until the disarm: a
// site that logged in between (a log line waits for the log file's lock, held while a loaded disk
// makes the logger's flushing thread wait) would let that watchdog trip on a site that is there. So
// the disarm comes right after the last command, and every log line of the ramp after it.
TEST(StopRamp, TheEquipmentIsDisarmedRightAfterTheRampsLastCommandBeforeAnyLogLine) {
  Events events;
  const std::shared_ptr<spdlog::logger> before = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("stop ramp", std::make_shared<LogIntoEvents>(events)));
  results::SafeMotionReport report;
  const std::optional<StopRampFault> fault = stop_ramp_on(std::make_unique<DisarmedEquipment>(events), report);
  spdlog::set_default_logger(before);

  EXPECT_FALSE(fault.has_value()) << fault->reason;
  EXPECT_EQ(report.stop_ramp(), "completed");
  const auto last_command = std::find(events.rbegin(), events.rend(), "command");
  ASSERT_NE(last_command, events.rend());
  const auto after = last_command.base();
  ASSERT_NE(after, events.end()) << "nothing after the ramp's last command";
  EXPECT_EQ(*after, "disarm") << "the first thing after the ramp's last command";
  EXPECT_EQ(std::count(events.begin(), events.end(), "disarm"), 1);
  // The ramp's lines and the disarm's outcome are still logged, after it.
  EXPECT_GE(std::count_if(after, events.end(), [](const std::string& e) { return e.starts_with("log: "); }), 3);
}

// Equipment that goes wrong in the stop ramp, one way each.
enum class Fault : std::uint8_t { kNoReplyMidRamp, kActuatorBeyondItsStroke, kRefusesTheDisarm };
class FaultyEquipment final : public PlantDriver {
 public:
  explicit FaultyEquipment(Fault fault) : fault_(fault) {}
  [[nodiscard]] std::size_t channels() const override { return 1; }
  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double /*dt_s*/) override {
    if (++exchanges_ == 10 && fault_ == Fault::kNoReplyMidRamp) return false;
    measured[0] = {commands[0].displacement_m, 0.0, 0.0};
    return true;
  }
  // As a setup's actuator whose stroke leaves its limit mid-ramp.
  [[nodiscard]] InterlockTrip check(std::span<const InterfaceMotion> /*commands*/) override {
    if (fault_ != Fault::kActuatorBeyondItsStroke || exchanges_ < 10) return {};
    return InterlockTrip{.what = InterlockTrip::What::kActuatorStroke, .channel = 0, .value = 0.07, .limit = 0.05};
  }
  std::string disarm() override { return fault_ == Fault::kRefusesTheDisarm ? "refused (fault bit set)" : ""; }
  void report(std::size_t /*channel*/, results::PlantReport& out) const override { out.mutable_ideal(); }

 private:
  Fault fault_;
  int exchanges_ = 0;
};

// A stop ramp that did not put the actuators at rest where the site meant, or whose disarm the equipment
// did not confirm, is a fault: after a completed test it is the site's exit, never success.
TEST(StopRamp, EquipmentThatStopsAnsweringMidRampIsAnEquipmentFault) {
  results::SafeMotionReport report;
  const std::optional<StopRampFault> fault =
      stop_ramp_on(std::make_unique<FaultyEquipment>(Fault::kNoReplyMidRamp), report);
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->exit_code, kExitEquipment);
  EXPECT_TRUE(fault->reason.starts_with("the stop ramp stopped: ")) << fault->reason;
  EXPECT_TRUE(report.stop_ramp().starts_with("stopped: ")) << report.stop_ramp();
}
TEST(StopRamp, AnActuatorBeyondItsStrokeMidRampTripsTheInterlock) {
  results::SafeMotionReport report;
  const std::optional<StopRampFault> fault =
      stop_ramp_on(std::make_unique<FaultyEquipment>(Fault::kActuatorBeyondItsStroke), report);
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->exit_code, kExitLimit);
  EXPECT_NE(fault->reason.find("stroke"), std::string::npos) << fault->reason;
}
TEST(StopRamp, ADisarmTheEquipmentRefusesIsAnEquipmentFault) {
  results::SafeMotionReport report;
  const std::optional<StopRampFault> fault =
      stop_ramp_on(std::make_unique<FaultyEquipment>(Fault::kRefusesTheDisarm), report);
  EXPECT_EQ(report.stop_ramp(), "completed");
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->exit_code, kExitEquipment);
  EXPECT_NE(fault->reason.find("refused (fault bit set)"), std::string::npos) << fault->reason;
}

}  // namespace
}  // namespace rths::test_safe_motion
