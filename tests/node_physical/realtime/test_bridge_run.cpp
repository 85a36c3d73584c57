// A site driving equipment over the UDP bridge, end to end on 127.0.0.1: the seed 002 Case II spring
// behind the seed 004 actuator with the RLS controller, 50 ms round trip through rths-relay, the
// actuator and specimen in rths-target at 4096 Hz; and the ways a rig must refuse or stop.
// The two runs whose tolerances assume the cores are their own (the comparison, the killed site)
// are in serial/test_bridge_run.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "common/config/config.hpp"
#include "common/core/exit_codes.hpp"
#include "common/transport/udp_link.hpp"
#include "node_physical/drivers/bridge_layout.hpp"
#include "support/bridge_run.hpp"
#include "support/process.hpp"
#include "support/spring_bridge.hpp"
#include "support/test_support.hpp"

namespace rths::test_bridge_run {
namespace {

using test::BridgeRun;
using test::Process;

// Another process on the site's host that sends rths-target command datagrams of the bridge's layout.
class Stranger {
 public:
  explicit Stranger(const std::string& target_at)
      : layout_(rths::load_experiment(test::spring_bridge_config(), {}, false)
                    .experiment.site(0)
                    .driver()
                    .udp_bridge()
                    .command(),
                1),
        link_(io_, "127.0.0.1", 0) {
    link_.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(target_at.substr(target_at.rfind(':') + 1))));
  }
  void send(std::uint32_t counter, double command_m) {
    rths::BridgeChannel channel;
    channel.command_m = command_m;
    std::vector<std::byte> datagram(layout_.bytes());
    layout_.pack(rths::BridgeFrame{counter, true, std::span(&channel, 1)}, datagram);
    link_.send(datagram);
  }

 private:
  rths::BridgeLayout layout_;
  asio::io_context io_;
  rths::UdpLink link_;
};

// The largest |value| of a CSV column.
double largest(const std::filesystem::path& csv, const std::string& column) {
  const std::vector<double> v = test::csv_column(csv, column);
  double m = 0.0;
  for (const double x : v) m = std::max(m, std::abs(x));
  return m;
}

// The bridge comparisons read positions in the examples' records as rows at kBridgeRateHz (when to
// stall or kill a site, the held steps a link's delay makes): it must be the examples' rate.
TEST(BridgeExamples, RunAtTheRateTheComparisonsCountRowsAt) {
  for (const char* name : {"hardware/spring_bridge.textproto", "marths/elcentro_bridge.textproto"}) {
    const LoadedConfig loaded = load_experiment(test::example(name), {}, /*resolve_calibration_files=*/false);
    EXPECT_EQ(loaded.experiment.rate_hz(), test::kBridgeRateHz) << name;
  }
}

// A stranger on the site's host commands rths-target to 90 mm while a site drives it: one datagram
// with a counter newer than the site's, one 2^31 - 1 ahead (the farthest still newer), then one every
// millisecond for 2 s with newer and newer counters. The target obeys the site alone (the sender of
// the first command it took): the run completes, the command in force at the target never went beyond
// what the site sent, the stranger's datagrams were counted, and the site's disarm left the watchdog
// untripped. A target that had obeyed would have answered with the stranger's counter in force and
// stopped the site (interlock, exit 8): never exit 0 with the actuator following a stranger.
TEST_F(BridgeRun, AStrangersCommandsNeverMoveTheActuator) {
#ifdef RTHS_SANITIZED
  GTEST_SKIP() << test::kSanitizedBridgeSkip;
#endif
  calibrate();
  for (int attempt = 1;; ++attempt) {
    const std::filesystem::path at = dir_ / ("attempt" + std::to_string(attempt));
    std::filesystem::create_directories(at);
    std::optional<Process> target;
    const std::string target_at = start_target(target, test::kSpringBridgeWatchdogS, at / "target");
    ASSERT_FALSE(target_at.empty()) << target->err();
    SiteAndNumerical run = start_site_and_numerical(target_at, at, 5.0);
    ASSERT_TRUE(wait_into_the_test(at, std::chrono::milliseconds(800))) << run.site->err();
    Stranger stranger(target_at);
    stranger.send(1'000'000, 0.09);
    stranger.send(1'000'000 + (1U << 31) - 1U, 0.09);
    for (std::uint32_t i = 0; i < 2000; ++i) {
      stranger.send(2'000'000 + i, 0.09);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const int numerical = run.numerical->wait(std::chrono::seconds(40));
    const int site = run.site->wait(std::chrono::seconds(20));
    target->signal(SIGINT);
    ASSERT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
    if (site == kExitEquipment && test::missed_replies_abort(run.site->err())) {
      if (attempt == test::kSpringBridgeAttempts) GTEST_SKIP() << test::kSpringBridgeOverload;
      continue;
    }
    ASSERT_EQ(site, kExitCompleted) << run.site->err();
    ASSERT_EQ(numerical, kExitCompleted) << run.numerical->err();
    const std::string report = target->out();
    std::printf("%s", report.c_str());
    const double site_largest = largest(site_record(at), "command_m");
    const double target_largest = largest(at / "target/target_spring.csv", "command0_m");
    std::printf("largest command: %.4f mm sent by the site, %.4f mm in force at the target\n", 1e3 * site_largest,
                1e3 * target_largest);
    ASSERT_GT(site_largest, 0.005);                  // the test moved the actuator
    EXPECT_LE(target_largest, site_largest + 1e-9);  // the wire carries millimetres in doubles
    // Never the stranger's 90 mm. Not a tighter bound: the RLS controller's own command overshoots
    // now and then (46 mm seen here against a 16 mm target, in a run whose adaptation then stopped
    // at its divergence limit), and the rule is the line above.
    EXPECT_LT(target_largest, 0.09);
    std::smatch foreign;
    ASSERT_TRUE(std::regex_search(report, foreign, std::regex(R"(\), ([0-9]+) foreign)"))) << report;
    EXPECT_GE(std::stoi(foreign[1]), 1000) << report;
    EXPECT_NE(report.find("watchdog not tripped, disarmed by the site"), std::string::npos) << report;
    EXPECT_EQ(test::read_site_summary(site_summary(at)).channels(0).plant().udp_bridge().disarm(), "confirmed");
    break;
  }
}

// A test that completed is no success when the site then cannot bring the actuators to rest: the
// target goes away during the stop ramp's hold (5 s here, so that the test's end and the kill need no
// timing), the site's replies stop, and it ends with the equipment's exit code, not 0.
TEST_F(BridgeRun, ATargetLostInTheStopRampEndsACompletedTestWithTheEquipmentsExitCode) {
#ifdef RTHS_SANITIZED
  GTEST_SKIP() << test::kSanitizedBridgeSkip;
#endif
  calibrate();
  std::optional<Process> target;
  const std::string target_at = start_target(target, test::kSpringBridgeWatchdogS, dir_ / "target");
  ASSERT_FALSE(target_at.empty()) << target->err();
  constexpr double kTestS = 2.0;
  SiteAndNumerical run = start_site_and_numerical(target_at, dir_, kTestS, {"site[spring].safe_motion.stop_hold_s=5"});
  // Every row of the test (steps 0 to its end): the site is in its stop ramp's hold.
  const auto rows = static_cast<std::size_t>(kTestS * test::kBridgeRateHz) + 1;
  const bool ended = test::wait_for_rows(site_record(dir_), rows, std::chrono::seconds(30));
  target->signal(SIGKILL);
  const int numerical = run.numerical->wait(std::chrono::seconds(30));
  const int site = run.site->wait(std::chrono::seconds(30));
  if (numerical == kExitPeerAborted && site == kExitEquipment && test::missed_replies_abort(run.site->err())) {
    GTEST_SKIP() << test::kSpringBridgeOverload;  // the test itself did not complete
  }
  ASSERT_TRUE(ended) << run.site->err();
  EXPECT_EQ(numerical, kExitCompleted) << run.numerical->err();
  EXPECT_EQ(site, kExitEquipment) << run.site->err();
  EXPECT_NE(run.site->err().find("the test completed, but the stop ramp stopped: "), std::string::npos)
      << run.site->err();
  EXPECT_TRUE(test::read_site_summary(site_summary(dir_)).safe_motion().stop_ramp().starts_with("stopped: "));
}

// A stranger commanded rths-target first, so it obeys the stranger: the site reads that in the reply
// to the first step of its start ramp (another counter in force) and stops there, before anything it
// sends acts, naming why (interlock, exit 8). The target's watchdog is long here: the stranger sends
// one command only, and the point is the site's view of a target that obeys someone else.
TEST_F(BridgeRun, ATargetThatObeysAnotherSenderStopsTheSiteNamingIt) {
  calibrate();
  std::optional<Process> target;
  const std::string target_at = start_target(target, "10", dir_ / "target");
  ASSERT_FALSE(target_at.empty()) << target->err();
  Stranger stranger(target_at);
  stranger.send(1000, 0.001);
  SiteAndNumerical run = start_site_and_numerical(target_at, dir_, 2.0);
  EXPECT_EQ(run.site->wait(std::chrono::seconds(30)), kExitLimit) << run.site->err();
  EXPECT_NE(run.numerical->wait(std::chrono::seconds(30)), kExitCompleted) << run.numerical->err();
  // The first reply the site reads names the stranger's counter: the reply to command 1, or on a
  // loaded machine to the first command whose reply came in time (every step before it missed).
  std::smatch stopped;
  const std::string err = run.site->err();
  ASSERT_TRUE(std::regex_search(err, stopped,
                                std::regex("interlock: the equipment holds command 1000 in force, not command "
                                           "([0-9]+) that the site just sent: it does not obey this site")))
      << err;
  const results::UdpBridgePlant bridge = test::read_site_summary(site_summary(dir_)).channels(0).plant().udp_bridge();
  EXPECT_EQ(bridge.replies(), 1U) << "the site stops at the first reply it reads";
  EXPECT_EQ(std::stoull(stopped[1]), bridge.missed() + 1) << err;
  target->signal(SIGINT);
  ASSERT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
  EXPECT_NE(target->out().find("1 commands applied"), std::string::npos) << target->out();
  EXPECT_EQ(largest(dir_ / "target/target_spring.csv", "command0_m"), 0.001);
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
  EXPECT_NE(site.err().find("a 36-byte datagram, expected 40 bytes"), std::string::npos) << site.err();
  target->signal(SIGINT);
  EXPECT_EQ(target->wait(std::chrono::seconds(10)), kExitCompleted) << target->err();
}

}  // namespace
}  // namespace rths::test_bridge_run
