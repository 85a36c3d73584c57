// A site driving equipment over the UDP bridge, end to end on 127.0.0.1, in the runs whose timing
// assumes the cores are their own: the seed 002 Case II spring behind the seed 004 actuator with the
// RLS controller, 50 ms round trip through rths-relay, the actuator and specimen in rths-target at
// 4096 Hz, against the simulated plant; a killed site, which only the target's watchdog stops; and a
// stalled one, whose own loop records the stall (the other ways a rig must refuse or stop:
// realtime/test_bridge_run.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/exit_codes.hpp"
#include "common/records/results.hpp"
#include "support/bridge_run.hpp"
#include "support/process.hpp"
#include "support/spring_bridge.hpp"
#include "support/test_support.hpp"

namespace rths::test_bridge_run {
namespace {

using test::BridgeRun;
using test::Process;

// The floors through the bridge agree with the same experiment on the simulated plant, within
// test::kSpringBridgeTolerancePct (its derivation is in spring_bridge.hpp).
TEST_F(BridgeRun, SpringThroughTheBridgeAndTheTargetMatchesTheSimulatedPlant) {
#ifdef RTHS_SANITIZED
  GTEST_SKIP() << test::kSanitizedBridgeSkip;
#endif
  calibrate();
  // A machine that could not keep the target's time gets a second run (test::spring_bridge_kept_time).
  std::vector<std::string> sets;
  std::optional<Process> target;
  std::filesystem::path attempt_dir;
  for (int attempt = 1;; ++attempt) {
    attempt_dir = dir_ / ("attempt" + std::to_string(attempt));
    std::filesystem::create_directories(attempt_dir);
    const std::string target_at = start_target(target, test::kSpringBridgeWatchdogS, attempt_dir / "target");
    ASSERT_FALSE(target_at.empty()) << target->err();
    sets = {calibration_set(), "site[spring].driver.udp_bridge.target=" + target_at};
    for (const auto& link : test::spring_bridge_link_sets()) sets.push_back(link);
    const test::RelayRun run =
        test::run_through_relay_outcome(attempt_dir, config(), kSite, sets, test::kSpringBridgeSeconds);
    target->signal(SIGINT);
    ASSERT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
    const test::SpringBridgeRun ended{run.numerical,
                                      run.site,
                                      run.site_err,
                                      target->out(),
                                      attempt_dir / "run/summary.json",
                                      attempt_dir / "site/site_spring.json"};
    if (!test::spring_bridge_stopped_by_the_machine(ended)) {
      ASSERT_EQ(run.numerical, kExitCompleted) << run.numerical_err;
      ASSERT_EQ(run.site, kExitCompleted) << run.site_err;
      if (test::spring_bridge_kept_time(ended)) {
        break;
      }
    }
    if (attempt == test::kSpringBridgeAttempts) {
      GTEST_SKIP() << test::kSpringBridgeOverload;
    }
  }

  test::run_spring_bridge_in_virtual_time(dir_ / "virtual", sets);
  test::expect_floors_match(attempt_dir / "run/numerical.csv", dir_ / "virtual/numerical.csv");
  test::expect_bridge_ran_cleanly(test::read_site_summary(attempt_dir / "site/site_spring.json"), target->out());
}

// kill -9 of the site mid-run: nothing stops the actuator but the target's own watchdog at its
// default time W, which must trip after more than W and at most W plus two of its ticks (by its own
// clock, the ticks: printed to 0.1 ms) after the last command, and hold. A run in which the site
// stopped on its own before the kill (a host stall of the site longer than W, or the target's replies
// missed in a row) measured the machine: it is run again, and skipped saying so when every attempt was.
TEST_F(BridgeRun, KilledSiteTripsTheTargetsWatchdogWithinItsTimeAndTwoTicks) {
#ifdef RTHS_SANITIZED
  GTEST_SKIP() << "the subject is the watchdog's timing, which a sanitized build's stalls of the site trip "
                  "before the kill; the plain suite runs it (the killed-site paths run under sanitizers in "
                  "the signal campaign)";
#endif
  calibrate();
  const double watchdog_ms = 1e3 * std::stod(test::kSpringBridgeWatchdogS);
  for (int attempt = 1;; ++attempt) {
    const std::filesystem::path at = dir_ / ("attempt" + std::to_string(attempt));
    std::filesystem::create_directories(at);
    std::optional<Process> target;
    const std::string target_at = start_target(target, test::kSpringBridgeWatchdogS, at / "target");
    ASSERT_FALSE(target_at.empty()) << target->err();
    SiteAndNumerical run = start_site_and_numerical(target_at, at, 20.0);
    ASSERT_TRUE(wait_into_the_test(at, std::chrono::milliseconds(2000))) << run.site->err();
    const bool tripped_before = target->out().find("watchdog: ") != std::string::npos;
    run.site->signal(SIGKILL);
    const int numerical = run.numerical->wait(std::chrono::seconds(30));
    const bool site_stopped_first =
        tripped_before || numerical == kExitPeerAborted || test::missed_replies_abort(run.site->err());
    if (site_stopped_first) {
      std::printf("[ overload ] attempt %d: the site stopped before the kill: %s\n", attempt,
                  test::last_line(run.site->err()).c_str());
      target->signal(SIGINT);
      target->wait(std::chrono::seconds(10));
      if (attempt == test::kSpringBridgeAttempts) {
        GTEST_SKIP() << "the site stopped on its own before the kill in every run: this machine cannot keep the "
                        "site's steps within the target's watchdog";
      }
      continue;
    }
    EXPECT_EQ(numerical, kExitPeerLost) << run.numerical->err();
    const std::string line = target->wait_for_line("watchdog: no new command for ", std::chrono::seconds(5));
    ASSERT_FALSE(line.empty()) << target->out();
    const double silent_ms = std::stod(line);
    std::printf("watchdog tripped %.1f ms after the last command (watchdog %.1f ms)\n", silent_ms, watchdog_ms);
    EXPECT_GT(silent_ms, watchdog_ms - 0.05);
    EXPECT_LE(silent_ms, watchdog_ms + 2e3 / 4096 + 0.05);
    EXPECT_NE(line.find("; holding at "), std::string::npos) << line;
    target->signal(SIGINT);
    EXPECT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
    EXPECT_EQ(target->out().find("disarmed"), std::string::npos) << target->out();
    break;
  }
}
// A site stopped for 80 ms (SIGSTOP, as a host stall would) sends nothing for that long: the target's
// 50 ms watchdog trips, the site stops for the fault bit (exit code 10, the numerical node 5), and the site's
// loop records the stall (lateness_max_us), which is what test::target_watchdog_on_a_stalled_site
// reads to tell a machine's stall from a site that stopped sending on its own.
TEST_F(BridgeRun, AStalledSiteTripsTheTargetsWatchdogAndItsLoopRecordsTheStall) {
#ifdef RTHS_SANITIZED
  GTEST_SKIP() << "a sanitized build's own stalls of the site trip the watchdog before the one made here; the "
                  "plain suite runs it";
#endif
  calibrate();
  std::optional<Process> target;
  const std::string target_at = start_target(target, test::kSpringBridgeWatchdogS, dir_ / "target");
  ASSERT_FALSE(target_at.empty()) << target->err();
  SiteAndNumerical run = start_site_and_numerical(target_at, dir_, 20.0);
  // In the test's loop: the rule below reads the stall from that loop's timing, not from a ramp's.
  ASSERT_TRUE(wait_into_the_test(dir_, std::chrono::milliseconds(2000))) << run.site->err();
  if (target->out().find("watchdog: ") != std::string::npos) {
    target->signal(SIGINT);
    target->wait(std::chrono::seconds(10));
    GTEST_SKIP() << "the target's watchdog tripped before the stall was made: this machine cannot keep the "
                    "site's steps within the target's watchdog";
  }
  run.site->signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  run.site->signal(SIGCONT);
  const int numerical = run.numerical->wait(std::chrono::seconds(30));
  EXPECT_EQ(numerical, kExitPeerAborted) << run.numerical->err();
  const int site = run.site->wait(std::chrono::seconds(30));
  target->signal(SIGINT);
  ASSERT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
  ASSERT_EQ(site, kExitEquipment) << run.site->err();
  EXPECT_NE(run.site->err().find("a fault bit"), std::string::npos) << run.site->err();
  const test::SpringBridgeRun ended{
      numerical, site, run.site->err(), target->out(), dir_ / "run/summary.json", dir_ / "site/site_spring.json"};
  EXPECT_TRUE(test::target_watchdog_on_a_stalled_site(ended)) << target->out();
  EXPECT_TRUE(test::spring_bridge_stopped_by_the_machine(ended));
  EXPECT_GE(test::read_site_summary(ended.site_summary).loop().lateness_max_us(), 75e3);
  // The same trip with the site's loops on time would be rths's own: the rule does not excuse it.
  results::SiteSummary summary = test::read_site_summary(ended.site_summary);
  results::SafeMotionReport& ramps = *summary.mutable_safe_motion();
  for (results::LoopTiming* loop :
       {summary.mutable_loop(), ramps.mutable_start_ramp_loop(), ramps.mutable_stop_ramp_loop()}) {
    loop->set_lateness_max_us(900.0);
    loop->set_compute_max_us(900.0);
  }
  test::SpringBridgeRun on_time = ended;
  on_time.site_summary = dir_ / "site_on_time.json";
  write_results_json(on_time.site_summary, summary);
  EXPECT_FALSE(test::target_watchdog_on_a_stalled_site(on_time));
  EXPECT_FALSE(test::spring_bridge_stopped_by_the_machine(on_time));
  // A stall in a ramp's loop is a silence for the target as well: the stop ramp's one here.
  ramps.mutable_stop_ramp_loop()->set_lateness_max_us(75e3);
  test::SpringBridgeRun ramp_stalled = ended;
  ramp_stalled.site_summary = dir_ / "site_ramp_stalled.json";
  write_results_json(ramp_stalled.site_summary, summary);
  EXPECT_TRUE(test::target_watchdog_on_a_stalled_site(ramp_stalled));
  // So is a trip after a completed test, in the stop ramp: when the ramp's loop stalled, not when it kept time.
  test::SpringBridgeRun completed = ramp_stalled;
  completed.numerical = kExitCompleted;
  completed.site = kExitEquipment;  // the site's stop ramp ended for the target's fault bit
  EXPECT_TRUE(test::spring_bridge_stopped_by_the_machine(completed));
  completed.site_summary = on_time.site_summary;
  EXPECT_FALSE(test::spring_bridge_stopped_by_the_machine(completed));
  // A site that reported success while the target tripped is wrong, whatever its loops recorded.
  completed.site_summary = ramp_stalled.site_summary;
  completed.site = kExitCompleted;
  EXPECT_FALSE(test::spring_bridge_stopped_by_the_machine(completed));
}

}  // namespace
}  // namespace rths::test_bridge_run
