// rths-target as a process on 127.0.0.1, driven by the test through the bridge's datagrams: a probe
// reads without moving the actuator, a command beyond the stroke is clamped, counted and flagged,
// the site's disarm ends the session without a trip, and the watchdog trips within its time plus two
// ticks once the commands stop, then holds. Also the bridge driver against it: the two speak the same
// protocol, with hardware-true timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/text_format.h>

#include <asio/io_context.hpp>

#include "common/config/config.hpp"
#include "common/transport/udp_link.hpp"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/drivers/udp_bridge.hpp"
#include "node_physical/plants/site_plants.hpp"
#include "node_physical/target/target_emulator.hpp"
#include "support/bridge_layouts.hpp"
#include "support/process.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_target {
namespace {

namespace fs = std::filesystem;
using Buffer = std::array<std::byte, kMaxDatagramBytes>;

constexpr double kRateHz = 4096;
constexpr double kWatchdogS = 0.05;
constexpr double kSpringNPerM = 55834.4;
constexpr double kStrokeM = 0.1;

// One channel, a spring behind an ideal actuator (the sensors read the command exactly, so every
// value a test checks is exact).
// setup: an extra block of the site (a setup transformation), or empty.
std::string target_config(const std::string& setup = "") {
  return R"(name: "target"
structure { dofs: 1 mass_kg: [2701] stiffness_n_per_m: [558343] }
ground_motion { synthetic { seed: 3 duration_s: 2 } }
site {
  name: "lab"
  influence: [-1]
  channel {
    specimen { spring { stiffness_n_per_m: 55834.4 } }
    stroke_limit_m: 0.1 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4
  }
  safe_motion { start_ramp_s: 0 }
)" + setup +
         R"(
  driver {
    udp_bridge {
      target: "127.0.0.1:47100"
      reply_timeout_s: 0.0004
)" + std::string(test::kOneChannelBridgeLayout) +
         R"(
    }
  }
}
)";
}

// A running rths-target and the test's side of its bridge.
class Target {
 public:
  // watchdog_s: the target's; the tests of the protocol give it seconds, so that a stall of this
  // test's own thread (not real-time) on a loaded machine does not trip it.
  Target(const fs::path& dir, double duration_s, const std::string& setup = "", const std::string& watchdog_s = "0.05")
      : dir_(dir),
        config_(write_config(dir, setup)),
        site_(load_experiment(config_).experiment.site(0)),
        command_(site_.driver().udp_bridge().command(), 1),
        reply_(site_.driver().udp_bridge().reply(), 1),
        process_("rths-target",
                 {config_.string(), "--site", "lab", "--listen", "127.0.0.1:0", "--rate", "4096", "--watchdog-s",
                  watchdog_s, "--duration-s", std::to_string(duration_s), "--out", (dir / "out").string()},
                 dir / "target"),
        link_(io_, "127.0.0.1", 0) {
    const std::string at = process_.wait_for_line("listening on ", std::chrono::seconds(10));
    EXPECT_FALSE(at.empty()) << process_.err();
    if (!at.empty()) {
      link_.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(at.substr(at.rfind(':') + 1))));
      link_.lock_peer(true);
    }
  }

  // Sends a command datagram (counter 0: a probe).
  void send(std::uint32_t counter, double command_m, bool enable = true) {
    BridgeChannel channel;
    channel.command_m = command_m;
    std::vector<std::byte> datagram(command_.bytes());
    command_.pack(BridgeFrame{counter, enable, std::span(&channel, 1)}, datagram);
    link_.send(datagram);
  }
  // The next reply (within two seconds): its echo and the channel's sensors and status.
  bool reply(std::uint32_t& echo, BridgeChannel& channel) {
    Buffer buffer{};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < deadline) {
      if (const std::size_t n = link_.receive(buffer)) {
        BridgeFrame frame{0, false, std::span(&channel, 1)};
        const bool ok = reply_.unpack(std::span<const std::byte>(buffer.data(), n), frame);
        echo = frame.counter;
        return ok;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return false;
  }
  // Reads and discards the replies waiting (to datagrams sent without waiting for theirs).
  void drain() {
    Buffer buffer{};
    while (link_.receive(buffer) != 0) {
    }
  }
  // Sends and waits for the answer.
  BridgeChannel ask(std::uint32_t counter, double command_m) {
    send(counter, command_m);
    std::uint32_t echo = 0xFFFFFFFFU;
    BridgeChannel channel;
    EXPECT_TRUE(reply(echo, channel));
    EXPECT_EQ(echo, counter);
    return channel;
  }
  int wait() { return process_.wait(std::chrono::seconds(30)); }
  [[nodiscard]] const test::Process& process() const { return process_; }
  [[nodiscard]] fs::path csv() const { return dir_ / "out" / "target_lab.csv"; }
  [[nodiscard]] const config::Site& site() const { return site_; }
  [[nodiscard]] std::uint16_t port() const {
    const std::string peer = link_.peer_description();
    return static_cast<std::uint16_t>(std::stoi(peer.substr(peer.rfind(':') + 1)));
  }

 private:
  static fs::path write_config(const fs::path& dir, const std::string& setup) {
    fs::path file = dir / "target.textproto";
    std::ofstream(file) << target_config(setup);
    return file;
  }

  fs::path dir_;
  fs::path config_;
  config::Site site_;
  BridgeLayout command_;
  BridgeLayout reply_;
  test::Process process_;
  asio::io_context io_;
  UdpLink link_;
};

void pause_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The target's record names its columns with their units as every rths record does: a rotational
// interface DOF in rad and N m; a multi-axial plant's actuators, which the target emulates, in m and N.
TEST(RthsTarget, ItsRecordsColumnsCarryTheirChannelsUnits) {
  const std::vector<DofKind> kinds{DofKind::kTranslation, DofKind::kRotation};
  const std::vector<std::string> expected{"t_s",      "counter", "datagrams",    "command0_m",        "displacement0_m",
                                          "force0_N", "status0", "command1_rad", "displacement1_rad", "force1_Nm",
                                          "status1"};
  EXPECT_EQ(TargetEmulator::columns(kinds), expected);
  const LoadedConfig bridge = test::load_example("marths/elcentro_bridge.textproto");
  const config::Site& site = bridge.experiment.site(0);
  EXPECT_EQ(channel_kinds(bridge.experiment.structure(), site), kinds);  // its interface: x, theta
  EXPECT_EQ(TargetEmulator::recorded_kinds(bridge.experiment.structure(), site),
            std::vector<DofKind>(2, DofKind::kTranslation));  // its two actuators
}

TEST(RthsTarget, AProbeReadsTheSensorsWithoutMovingTheActuator) {
  const test::ScratchFolder dir("rths_target");
  Target target(dir.path(), 0.6);
  // Probes that carry a 50 mm command: the actuator stays at rest.
  for (int i = 0; i < 10; ++i) {
    const BridgeChannel read = target.ask(0, 0.05);
    EXPECT_EQ(read.displacement_m, 0.0);
    EXPECT_EQ(read.force_n, 0.0);
    pause_ms(5);
  }
  // The same command with a counter moves it (so the probes above would have seen it).
  target.ask(1, 0.05);
  pause_ms(5);
  const BridgeChannel moved = target.ask(0, 0.0);
  EXPECT_DOUBLE_EQ(moved.displacement_m, 0.05);
  EXPECT_DOUBLE_EQ(moved.force_n, kSpringNPerM * 0.05);
  ASSERT_EQ(target.wait(), 0) << target.process().err();
  // The record: every tick before the live command held the actuator at rest, probes answered.
  const std::vector<double> counter = test::csv_column(target.csv(), "counter");
  const std::vector<double> command = test::csv_column(target.csv(), "command0_m");
  const std::vector<double> displacement = test::csv_column(target.csv(), "displacement0_m");
  const std::vector<double> datagrams = test::csv_column(target.csv(), "datagrams");
  ASSERT_FALSE(counter.empty());
  double probes_answered = 0;
  for (std::size_t k = 0; k < counter.size() && counter[k] == 0; ++k) {
    EXPECT_EQ(command[k], 0.0) << k;
    EXPECT_EQ(displacement[k], 0.0) << k;
    probes_answered += datagrams[k];
  }
  EXPECT_EQ(probes_answered, 10.0);
  EXPECT_NE(target.process().out().find("(11 probes)"), std::string::npos) << target.process().out();
}

TEST(RthsTarget, ACommandBeyondTheStrokeIsClampedCountedAndFlagged) {
  const test::ScratchFolder dir("rths_target");
  Target target(dir.path(), 0.4);
  const BridgeChannel first = target.ask(1, 0.2);  // twice the 0.1 m stroke
  EXPECT_EQ(first.status & target_status::kStrokeClamped, target_status::kStrokeClamped);
  pause_ms(5);
  const BridgeChannel at_stroke = target.ask(2, 0.2);
  EXPECT_EQ(at_stroke.displacement_m, kStrokeM);  // the clamped command reached the actuator, not 0.2
  const BridgeChannel within = target.ask(3, -0.05);
  EXPECT_EQ(within.status & target_status::kStrokeClamped, 0U);
  ASSERT_EQ(target.wait(), 0) << target.process().err();
  EXPECT_NE(target.process().out().find("2 stroke clamps"), std::string::npos) << target.process().out();
  const std::vector<double> command = test::csv_column(target.csv(), "command0_m");
  const std::vector<double> displacement = test::csv_column(target.csv(), "displacement0_m");
  ASSERT_FALSE(command.empty());
  EXPECT_EQ(*std::max_element(command.begin(), command.end()), kStrokeM);
  EXPECT_EQ(*std::max_element(displacement.begin(), displacement.end()), kStrokeM);
}

// Only a newer counter is taken; ENABLE 0 with a newer counter is the site's disarm: answered with
// its counter in force and the disarmed bit, the command held, nothing taken after it, and the
// watchdog never trips (the target runs 8 watchdog times past it). The rules one by one, without a
// clock: TargetRules.*.
TEST(RthsTarget, AnOlderCounterChangesNothingAndTheDisarmEndsTheSession) {
  const test::ScratchFolder dir("rths_target");
  Target target(dir.path(), 0.6);
  target.ask(5, 0.01);
  target.ask(3, 0.02);                     // older than 5
  target.send(6, 0.03, /*enable=*/false);  // the disarm
  std::uint32_t echo = 0;
  BridgeChannel disarmed;
  ASSERT_TRUE(target.reply(echo, disarmed));
  EXPECT_EQ(echo, 6U);
  EXPECT_EQ(disarmed.status & target_status::kDisarmed, target_status::kDisarmed);
  EXPECT_EQ(disarmed.applied_m, 0.01);
  EXPECT_NE(target.process().wait_for_line("disarmed by the site (counter 6) at t=", std::chrono::seconds(5)), "")
      << target.process().out();
  pause_ms(5);
  target.ask(7, 0.04);  // after the disarm: ignored
  pause_ms(5);
  EXPECT_DOUBLE_EQ(target.ask(0, 0.0).displacement_m, 0.01);
  ASSERT_EQ(target.wait(), 0) << target.process().err();
  const std::string& out = target.process().out();
  EXPECT_NE(out.find("1 commands applied (obeying 127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(out.find("0 foreign, 1 stale, 0 disabled"), std::string::npos) << out;
  EXPECT_NE(out.find("1 after the disarm"), std::string::npos) << out;
  EXPECT_NE(out.find("watchdog not tripped, disarmed by the site at t="), std::string::npos) << out;
  EXPECT_EQ(out.find("watchdog: "), std::string::npos) << out;
}

// Commands every 2 ms for 0.2 s (a ramp at 20 mm/s), then none: the trip comes more than
// --watchdog-s after the last new counter by the target's clock and no more than two ticks later (the
// printed line), no counter is taken after it (the record), and the actuator comes to rest where the
// line says. A target whose ticks were late by more than that at the time could not keep its ticks:
// the test then skips saying so.
TEST(RthsTarget, TheWatchdogTripsWithinItsTimePlusTwoTicksAndHolds) {
  const test::ScratchFolder dir("rths_target");
  Target target(dir.path(), 0.8);
  target.ask(0, 0.0);
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t counter = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200)) {
    ++counter;
    target.send(counter, 0.00004 * counter);
    pause_ms(2);
  }
  const std::string line = target.process().wait_for_line("watchdog: ", std::chrono::seconds(5));
  // Nothing re-arms it: a new counter after the trip is answered (with the watchdog bit) and ignored.
  pause_ms(20);  // the hold ramp's 10 ms are over
  target.drain();
  const BridgeChannel before = target.ask(0, 0.0);
  const BridgeChannel after_trip = target.ask(counter + 1, 0.05);
  EXPECT_EQ(after_trip.status & target_status::kWatchdog, target_status::kWatchdog);
  pause_ms(5);
  EXPECT_EQ(target.ask(0, 0.0).displacement_m, before.displacement_m);
  ASSERT_EQ(target.wait(), 0) << target.process().err();
  EXPECT_NE(target.process().out().find("1 after the trip"), std::string::npos) << target.process().out();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(line, m,
                                std::regex(R"(no new command for ([0-9.]+) ms at t=([0-9.]+) s; holding )"
                                           R"(at (-?[0-9.]+) mm)")))
      << line;
  const double tick_ms = 1e3 / kRateHz;
  const double silent_ms = std::stod(m[1]);
  EXPECT_GT(silent_ms, kWatchdogS * 1e3 - 0.05) << line;  // printed to 0.1 ms
  if (silent_ms > kWatchdogS * 1e3 + 2 * tick_ms + 0.05) {
    std::smatch late;
    const std::string& out = target.process().out();
    ASSERT_TRUE(std::regex_search(out, late, std::regex(R"(tick lateness p99 [0-9.]+ us, max ([0-9.]+) us)"))) << out;
    ASSERT_GT(std::stod(late[1]) * 1e-3, silent_ms - kWatchdogS * 1e3 - 2 * tick_ms) << line << "\n" << out;
    GTEST_SKIP() << "the target's ticks were up to " << late[1]
                 << " us late: this machine cannot keep the target's ticks, and the trip came " << silent_ms << " ms";
  }

  const std::vector<double> counters = test::csv_column(target.csv(), "counter");
  const std::vector<double> status = test::csv_column(target.csv(), "status0");
  const std::vector<double> command = test::csv_column(target.csv(), "command0_m");
  ASSERT_FALSE(counters.empty());
  std::size_t changed = 0;  // the tick of the last new counter
  std::size_t tripped = counters.size();
  for (std::size_t k = 1; k < counters.size(); ++k) {
    if (counters[k] != counters[k - 1]) changed = k;
    if (tripped == counters.size() && (static_cast<std::uint32_t>(status[k]) & target_status::kWatchdog) != 0) {
      tripped = k;
    }
  }
  ASSERT_LT(tripped, counters.size()) << "no tick carries the watchdog bit";
  EXPECT_LT(changed, tripped);  // no counter is taken after the trip
  EXPECT_NEAR(static_cast<double>(tripped) / kRateHz, std::stod(m[2]), 0.0005);
  // At rest at the end, where the line said (printed to a micrometre).
  const double hold_m = command.back();
  EXPECT_EQ(command[command.size() - 200], hold_m);
  EXPECT_NEAR(hold_m * 1e3, std::stod(m[3]), 0.0005);
  EXPECT_NE(target.process().out().find("watchdog tripped at t="), std::string::npos) << target.process().out();
}

// The driver and the emulator speak one protocol: open() reads the actuator at rest through a probe,
// every step is answered with its own counter (a generous timeout: this test is about the protocol,
// not the latency), and each measurement is what the sensors read before that step's command acted:
// an earlier step's command, never the step's own (the ideal actuator reads the command exactly).
TEST(RthsTarget, TheBridgeDriverDrivesItWithHardwareTrueTiming) {
  const test::ScratchFolder dir("rths_target");
  Target target(dir.path(), 2.0, "", "5");
  config::UdpBridge bridge = target.site().driver().udp_bridge();
  bridge.set_target("127.0.0.1:" + std::to_string(target.port()));
  bridge.set_reply_timeout_s(0.2);
  bridge.set_max_missed_replies(5);
  const auto driver = make_udp_bridge(bridge, target.site(), 1024);
  std::array<Measurement, 1> measured{};
  measured[0].displacement_m = 1.0;
  driver->open(measured);
  EXPECT_EQ(measured[0].displacement_m, 0.0);
  // The step whose command a measurement is (the wire carries millimetres: within 1e-12 m), -1 for
  // the rest position, -2 for no step's.
  std::vector<double> commanded;
  const auto step_of = [&commanded](double read) {
    if (read == 0.0) return -1;
    for (std::size_t i = 0; i < commanded.size(); ++i) {
      if (std::abs(commanded[i] - read) < 1e-12) return static_cast<int>(i);
    }
    return -2;
  };
  int previous = -1;
  for (int j = 0; j < 300; ++j) {
    commanded.push_back(1e-5 * (j + 1));  // distinct at every step
    std::array<InterfaceMotion, 1> commands{InterfaceMotion{commanded.back(), 0.0, 0.0}};
    ASSERT_TRUE(driver->exchange(commands, measured, 1.0 / 1024)) << driver->fault();
    EXPECT_EQ(driver->status(0) & (driver_status::kReplyMissing | driver_status::kReplyLate), 0U) << j;
    const int seen = step_of(measured[0].displacement_m);
    EXPECT_GE(seen, previous) << "step " << j << " read " << measured[0].displacement_m;  // never back in time
    EXPECT_LT(seen, j) << "step " << j << " read its own command";
    previous = seen;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  EXPECT_GE(previous, 250);  // and the actuator kept up, a step or so behind
  results::PlantReport report;
  driver->report(0, report);
  EXPECT_EQ(report.udp_bridge().replies(), 300U);
  EXPECT_EQ(report.udp_bridge().missed(), 0U);
  EXPECT_EQ(target.wait(), 0) << target.process().err();
}

// A setup transformation at both ends of the wire: the site sends the stroke of an actuator at 30
// degrees to its DOF, the target maps it back to the DOF, and answers with the stroke and the load
// cell of the DOF it senses. Through both mappings (and millimetres on the wire) the site reads an
// earlier step's interface command exactly and the spring's force of it: a transpose, a sign or a
// reference geometry in place of the deformed one on either side is off by percents.
TEST(RthsTarget, ThroughAnInclinedActuatorTheSiteReadsTheInterfaceExactly) {
  const test::ScratchFolder dir("rths_target");
  Target target(dir.path(), 2.0,
                "  setup { inclined_actuator { length_m: 1.5 angle_deg: 30 offset_m: 0.02 } stroke_limit_m: [0.1] }",
                "5");
  config::Site site = target.site();
  site.mutable_driver()->mutable_udp_bridge()->set_target("127.0.0.1:" + std::to_string(target.port()));
  site.mutable_driver()->mutable_udp_bridge()->set_reply_timeout_s(0.2);
  const auto driver = make_plant_driver(site, 1024);
  std::array<Measurement, 1> measured{};
  measured[0].displacement_m = 1.0;
  driver->open(measured);
  EXPECT_NEAR(measured[0].displacement_m, 0.0, 1e-15);
  std::vector<double> commanded;
  int matched = 0;
  for (int j = 0; j < 200; ++j) {
    commanded.push_back(-0.02 + 2e-4 * j);  // distinct at every step, both signs
    std::array<InterfaceMotion, 1> commands{InterfaceMotion{commanded.back(), 0.0, 0.0}};
    ASSERT_FALSE(driver->check(commands).tripped());
    ASSERT_TRUE(driver->exchange(commands, measured, 1.0 / 1024)) << driver->fault();
    const double read = measured[0].displacement_m;
    const bool earlier =
        std::any_of(commanded.begin(), commanded.end() - 1, [read](double c) { return std::abs(c - read) < 1e-12; });
    if (j > 0 && std::abs(read) > 0) {
      EXPECT_TRUE(earlier) << "step " << j << " read " << read << " m, no earlier command";
      matched += earlier ? 1 : 0;
    }
    EXPECT_NEAR(measured[0].force_n, kSpringNPerM * read, 1e-9 * kSpringNPerM * 0.02) << "step " << j;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  EXPECT_GE(matched, 190);
  EXPECT_EQ(target.wait(), 0) << target.process().err();
}

}  // namespace
}  // namespace rths::test_target
