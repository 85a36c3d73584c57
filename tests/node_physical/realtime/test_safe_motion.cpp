// A site that runs its safe motion in real time: it ramps from the measured position to the initial
// position before step 0 and, after the test, holds and then moves to its safe position (the ramps'
// plans and checks: unit/test_safe_motion.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "common/core/exit_codes.hpp"
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

}  // namespace
}  // namespace rths::test_safe_motion
