// A site driving equipment over the UDP bridge, end to end on 127.0.0.1: the seed 002 Case II spring
// behind the seed 004 actuator with the RLS controller, 50 ms round trip through rths-relay, the
// actuator and specimen in rths-target at 4096 Hz; and the ways a rig must refuse or stop.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"
#include "rths/common/exit_codes.hpp"
#include "test_support.hpp"

namespace rths {
namespace {

namespace fs = std::filesystem;
using test::csv_column;
using test::Process;

constexpr double kSeconds = 10.0;  // of El Centro: the x2 peak falls in the first 5 s
const std::string kSite = "spring";

class BridgeRun : public test::RunFolderTest {
 protected:
  [[nodiscard]] static std::string config() { return test::example("hardware/spring_bridge.textproto").string(); }
  [[nodiscard]] std::string calibration() const { return (dir_ / "calibration.textproto").string(); }
  [[nodiscard]] std::string calibration_set() const {
    return "site[spring].channel[0].controller.rls.calibration_path=" + calibration();
  }
  // The RLS controller's initial FIR from the monolithic reference (virtual time).
  void calibrate() const {
    Process cal("rths-numerical", {"calibrate", config(), "--out", calibration()}, dir_ / "calibrate");
    ASSERT_EQ(cal.wait(std::chrono::seconds(120)), kExitCompleted) << cal.err();
  }
  // rths-target on a free port, at a real-time priority as a lab's controller has its own machine;
  // its address ("" when it did not come up).
  // watchdog_s: the target's; the comparison gives it 20 ms, as this VM's host stalls reach several
  // milliseconds (a stall of the site is not what that test is about).
  std::string start_target(std::optional<Process>& target, const std::string& watchdog_s) const {
    target.emplace("rths-target",
                   std::vector<std::string>{config(), "--site", kSite, "--listen", "127.0.0.1:0", "--out",
                                            (dir_ / "target").string(), "--realtime-priority", "70", "--watchdog-s",
                                            watchdog_s, "--set", calibration_set()},
                   dir_ / "target");
    return target->wait_for_line("listening on ", std::chrono::seconds(10));
  }
};

// The floors through the bridge agree with the same experiment on the simulated plant. Tolerance:
// rths-target applies a command at its first tick after the datagram arrives and answers with that
// tick's sensors, so against the simulated plant (command from t_j, reading at t_j) the actuator's
// loop gains at most one target period, 1/4096 s = 0.244 ms, plus the loopback transport (p99 about
// 0.03 ms here) and the bridge's wake-up (p99 well under 0.1 ms): under 0.4 ms. Uncompensated, the
// IISL actuator's 13.67 ms lag costs 5.63 % of the x2 peak (docs/configuration.md): 0.41 % per ms,
// so at most 0.17 % for 0.4 ms; the RLS controller compensates most of a constant lag. Twice that
// bound, 0.33 %, for the peak, and for the largest difference anywhere in the history relative to
// the peak. The RLS controller also absorbs a whole step of extra lag (a driver that handed over the
// previous reply still passes here), so the bridge's timing itself is guarded where it is exact:
// UdpBridge.* against a scripted target and RthsTarget.TheBridgeDriverDrivesItWithHardwareTrueTiming.
TEST_F(BridgeRun, SpringThroughTheBridgeAndTheTargetMatchesTheSimulatedPlant) {
#ifdef RTHS_SANITIZED
  GTEST_SKIP() << "a sanitized build runs several times slower: the emulator cannot keep 4096 Hz and answer "
                  "within the step, so the comparison is meaningless here; the plain suite runs it";
#endif
  calibrate();
  std::optional<Process> target;
  const std::string target_at = start_target(target, "0.02");
  ASSERT_FALSE(target_at.empty()) << target->err();
  const std::vector<std::string> sets{calibration_set(), "site[spring].driver.udp_bridge.target=" + target_at,
                                      "site[spring].link.forward.delay_s=0.025",
                                      "site[spring].link.backward.delay_s=0.025"};
  ASSERT_EQ(test::run_through_relay(dir_, config(), kSite, sets, kSeconds), kExitCompleted);
  target->signal(SIGINT);
  ASSERT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();

  // The same experiment in virtual time: the site's plants simulated at the site's rate.
  std::vector<std::string> virtual_args{"run",
                                        config(),
                                        "--out",
                                        (dir_ / "virtual").string(),
                                        "--quiet",
                                        "--set",
                                        "duration_s=" + std::to_string(kSeconds)};
  for (const auto& s : sets) virtual_args.insert(virtual_args.end(), {"--set", s});
  Process simulated("rths-numerical", virtual_args, dir_ / "virtual");
  ASSERT_EQ(simulated.wait(std::chrono::seconds(60)), kExitCompleted) << simulated.err();

  constexpr double kTolerancePct = 0.33;
  for (const std::string floor : {"x1_m", "x2_m"}) {
    const auto bridged = csv_column(dir_ / "run/numerical.csv", floor);
    const auto virtual_time = csv_column(dir_ / "virtual/numerical.csv", floor);
    ASSERT_EQ(bridged.size(), virtual_time.size()) << floor;
    const double peak = test::peak(virtual_time);
    const double peak_pct = 100.0 * std::abs(test::peak(bridged) - peak) / peak;
    const double history_pct = 100.0 * test::max_diff(bridged, virtual_time) / peak;
    std::printf("%s: peak %.6f mm through the bridge, %.6f mm simulated: peak %.4f %%, largest difference %.4f %%\n",
                floor.c_str(), 1e3 * test::peak(bridged), 1e3 * peak, peak_pct, history_pct);
    EXPECT_LT(peak_pct, kTolerancePct) << floor;
    EXPECT_LT(history_pct, kTolerancePct) << floor;
  }
  // Every step was answered in time or counted; the ramps ran; the target never clamped or tripped
  // while commanded (its watchdog trips only once the site has stopped sending).
  const results::SiteSummary site = test::read_site_summary(dir_ / "site/site_spring.json");
  const results::UdpBridgePlant& bridge = site.channels(0).plant().udp_bridge();
  std::printf("bridge: %llu replies, %llu missed, round trip p50 %.1f us p99 %.1f us\n",
              static_cast<unsigned long long>(bridge.replies()), static_cast<unsigned long long>(bridge.missed()),
              bridge.round_trip_p50_us(), bridge.round_trip_p99_us());
  EXPECT_LT(bridge.longest_missed_run(), 10U);
  EXPECT_EQ(site.safe_motion().stop_ramp(), "completed");
  EXPECT_EQ(site.safe_motion().start_ramp_steps(), 1024);
  EXPECT_NE(target->out().find(" 0 stroke clamps"), std::string::npos) << target->out();
  EXPECT_NE(target->out().find(" 0 after the trip"), std::string::npos) << target->out();
}

// kill -9 of the site mid-run: nothing stops the actuator but the target's own watchdog, which
// must trip within 10 ms of the last command and hold. It is given 8 ms (the default is 4 ms): a
// host stall of the site of several milliseconds, which this VM has under a parallel suite, must not
// trip it before the kill.
TEST_F(BridgeRun, KilledSiteTripsTheTargetsWatchdogWithinTenMilliseconds) {
  calibrate();
  std::optional<Process> target;
  const std::string target_at = start_target(target, "0.008");
  ASSERT_FALSE(target_at.empty()) << target->err();
  const std::vector<std::string> sets{"--set", calibration_set(),
                                      "--set", "site[spring].driver.udp_bridge.target=" + target_at,
                                      "--set", test::site_key_override(dir_, kSite)};
  std::vector<std::string> site_args{"serve",    config(),      "--site", kSite,
                                     "--listen", "127.0.0.1:0", "--out",  (dir_ / "site").string()};
  site_args.insert(site_args.end(), sets.begin(), sets.end());
  Process site("rths-physical", site_args, dir_ / "site");
  const std::string site_at = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(site_at.empty()) << site.err();
  std::vector<std::string> numerical_args{
      "run",    config(), "--realtime", "--set", "site[spring].address=" + site_at, "--out", (dir_ / "run").string(),
      "--quiet"};
  numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
  Process numerical("rths-numerical", numerical_args, dir_ / "numerical");
  // The start ramp (1 s after a 1.2 s start delay), then 2 s of the test.
  std::this_thread::sleep_for(std::chrono::milliseconds(4200));
  site.signal(SIGKILL);
  EXPECT_EQ(numerical.wait(std::chrono::seconds(30)), kExitPeerLost) << numerical.err();
  const std::string line = target->wait_for_line("watchdog: no new command for ", std::chrono::seconds(5));
  ASSERT_FALSE(line.empty()) << target->out();
  const double silent_ms = std::stod(line);
  std::printf("watchdog tripped %.1f ms after the last command\n", silent_ms);
  EXPECT_GT(silent_ms, 8.0);
  EXPECT_LE(silent_ms, 10.0);
  EXPECT_NE(line.find("; holding at "), std::string::npos) << line;
  target->signal(SIGINT);
  EXPECT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
}

// No target: the site refuses to start before it listens, naming the address (exit 10).
TEST_F(BridgeRun, WithoutItsTargetASiteRefusesToStartNamingTheAddress) {
  calibrate();
  Process site("rths-physical",
               {"serve", config(), "--site", kSite, "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string(),
                "--set", calibration_set(), "--set", "site[spring].driver.udp_bridge.target=127.0.0.1:9", "--set",
                "site[spring].driver.udp_bridge.open_timeout_s=0.3", "--set", test::site_key_override(dir_, kSite)},
               dir_ / "site");
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitEquipment) << site.err();
  EXPECT_NE(site.err().find("no reply from target 127.0.0.1:9 within 0.3 s"), std::string::npos) << site.err();
  EXPECT_EQ(site.out().find("listening on"), std::string::npos) << site.out();
}

// A target whose reply layout differs (a datagram of the wrong size) is refused on its first packet,
// naming the expected and received sizes.
TEST_F(BridgeRun, AReplyOfTheWrongSizeIsRefusedNamingBothSizes) {
  calibrate();
  std::optional<Process> target;
  target.emplace(
      "rths-target",
      std::vector<std::string>{config(), "--site", kSite, "--listen", "127.0.0.1:0", "--set", calibration_set(),
                               "--set", "site[spring].driver.udp_bridge.reply[3].type=FLOAT"},
      dir_ / "target");
  const std::string target_at = target->wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(target_at.empty()) << target->err();
  Process site("rths-physical",
               {"serve", config(), "--site", kSite, "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string(),
                "--set", calibration_set(), "--set", "site[spring].driver.udp_bridge.target=" + target_at, "--set",
                test::site_key_override(dir_, kSite)},
               dir_ / "site");
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitEquipment) << site.err();
  EXPECT_NE(site.err().find("a 20-byte datagram, expected 24 bytes"), std::string::npos) << site.err();
  target->signal(SIGINT);
  EXPECT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
}

}  // namespace
}  // namespace rths
