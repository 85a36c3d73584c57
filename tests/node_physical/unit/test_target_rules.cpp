// The rules of rths-target, the emulated lab controller, tick by tick through a scripted port and a
// scripted clock: no socket, no wall clock (the test chooses each tick's index, its time and what
// arrived before it). Only the peer's newer counter acts and feeds the watchdog; another sender is
// answered, never obeyed, and counted; only the peer's disarm (ENABLE 0 with a newer counter)
// disarms, after which the watchdog never trips and nothing is taken; without it the watchdog still
// trips, at the first tick past its time; and a stall of the target itself (its ticks catching up)
// is no silence of the site.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <google/protobuf/text_format.h>

#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/target/target_emulator.hpp"
#include "support/bridge_layouts.hpp"

namespace rths::test_target_rules {
namespace {

constexpr double kRateHz = 4096;
constexpr double kWatchdogS = 0.01;
// The first tick after the last new counter at which more than kWatchdogS has passed: 41 ticks of
// 1/4096 s (40 ticks are 9.77 ms, 41 are 10.01 ms).
constexpr std::int64_t kTripTicks = 41;

// A spring behind an ideal actuator at one channel: the sensors read the command in force exactly.
config::Site lab_site() {
  config::Experiment experiment;
  const std::string text = std::string(R"(
site {
  name: "lab"
  channel {
    specimen { spring { stiffness_n_per_m: 55834.4 } }
    stroke_limit_m: 0.1 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4
  }
  driver { udp_bridge { target: "127.0.0.1:47100" )") +
                           test::kOneChannelBridgeLayout + "} }\n}\n";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &experiment));
  return experiment.site(0);
}

Sender sender(std::uint16_t port) {
  Sender s;
  s.address[10] = 0xFF;  // ::ffff:127.0.0.1
  s.address[11] = 0xFF;
  s.address[12] = 127;
  s.address[15] = 1;
  s.port = port;
  return s;
}

const Sender kSite = sender(40001);
const Sender kStranger = sender(40002);

// What the target answered: to whom, and the reply's values.
struct Answer {
  Sender to;
  std::uint32_t counter = 0;
  std::uint32_t applied_counter = 0;
  BridgeChannel channel;
};

// The time each tick runs, as the test says (on time: tick k at k / 4096 s).
class ScriptedClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override { return now_ns_; }
  void set(std::int64_t ns) { now_ns_ = ns; }
  static std::int64_t on_time(std::int64_t k) { return std::llround(static_cast<double>(k) * 1e9 / kRateHz); }

 private:
  std::int64_t now_ns_ = 0;
};

// The target's port played by the test: datagrams queued before a tick are what that tick drains.
class ScriptedPort final : public TargetPort {
 public:
  std::size_t receive(std::span<std::byte> buffer, Sender& from) override {
    if (queued_.empty()) return 0;
    auto [sender, bytes] = std::move(queued_.front());
    queued_.pop_front();
    std::copy(bytes.begin(), bytes.end(), buffer.begin());
    from = sender;
    last_ = sender;
    return bytes.size();
  }
  bool answer(std::span<const std::byte> datagram) override {
    answers_.emplace_back(last_, std::vector<std::byte>(datagram.begin(), datagram.end()));
    return true;
  }
  void queue(const Sender& from, std::vector<std::byte> datagram) { queued_.emplace_back(from, std::move(datagram)); }
  std::vector<std::pair<Sender, std::vector<std::byte>>>& answers() { return answers_; }

 private:
  std::deque<std::pair<Sender, std::vector<std::byte>>> queued_;
  std::vector<std::pair<Sender, std::vector<std::byte>>> answers_;
  Sender last_;
};

// rths-target's tick behind a scripted port.
class Rig {
 public:
  Rig()
      : site_(lab_site()),
        command_(site_.driver().udp_bridge().command(), 1),
        reply_(site_.driver().udp_bridge().reply(), 1),
        target_(site_, kRateHz, kWatchdogS, port_, clock_, nullptr) {}

  // Queues a datagram from `from` for the next tick (counter 0: a probe).
  void send(const Sender& from, std::uint32_t counter, double command_m, bool enable = true) {
    BridgeChannel channel;
    channel.command_m = command_m;
    std::vector<std::byte> datagram(command_.bytes());
    command_.pack(BridgeFrame{counter, enable, std::span(&channel, 1)}, datagram);
    port_.queue(from, std::move(datagram));
  }
  // Runs ticks from..to (inclusive) on time, each true.
  void ticks(std::int64_t from, std::int64_t to) {
    for (std::int64_t k = from; k <= to; ++k) ASSERT_TRUE(tick(k)) << k;
  }
  // One tick at its time (on time by default).
  bool tick(std::int64_t k, std::int64_t now_ns = -1) {
    clock_.set(now_ns < 0 ? ScriptedClock::on_time(k) : now_ns);
    return target_.tick(k);
  }
  // The last answer the target sent.
  Answer last_answer() {
    Answer a;
    if (port_.answers().empty()) {
      ADD_FAILURE() << "no answer";
      return a;
    }
    const auto& [to, bytes] = port_.answers().back();
    a.to = to;
    BridgeFrame frame{0, false, std::span(&a.channel, 1)};
    EXPECT_TRUE(reply_.unpack(bytes, frame));
    a.counter = frame.counter;
    a.applied_counter = frame.applied_counter;
    return a;
  }
  [[nodiscard]] std::size_t answers() { return port_.answers().size(); }
  TargetEmulator& target() { return target_; }

 private:
  config::Site site_;
  BridgeLayout command_;
  BridgeLayout reply_;
  ScriptedPort port_;
  ScriptedClock clock_;
  TargetEmulator target_;
};

// The tick at which the watchdog tripped: the first k of from..to after which tripped() holds (to + 1
// when it did not).
std::int64_t trip_tick(Rig& rig, std::int64_t from, std::int64_t to) {
  for (std::int64_t k = from; k <= to; ++k) {
    EXPECT_TRUE(rig.tick(k));
    if (rig.target().tripped()) return k;
  }
  return to + 1;
}

TEST(TargetRules, TheWatchdogTripsAtTheFirstTickPastItsTimeAfterTheLastNewCounter) {
  Rig rig;
  rig.send(kSite, 1, 0.01);
  rig.ticks(0, 0);
  // New counters every 20 ticks (under the 41 of the watchdog) keep it quiet.
  for (std::uint32_t c = 2; c <= 10; ++c) {
    rig.send(kSite, c, 0.01);
    rig.ticks(std::int64_t{20} * (c - 2) + 1, std::int64_t{20} * (c - 1));
    ASSERT_FALSE(rig.target().tripped()) << c;
  }
  // The last one was drained at tick 161: the trip is at 161 + 41.
  EXPECT_EQ(trip_tick(rig, 181, 400), 161 + kTripTicks);
}

// A stale datagram (an older counter, or the one in force again: a duplicate or a replay) is
// answered and changes nothing: not the command, not the watchdog.
TEST(TargetRules, AStaleCounterDoesNotFeedTheWatchdog) {
  Rig rig;
  rig.send(kSite, 5, 0.02);
  rig.ticks(0, 0);
  std::int64_t k = 1;
  for (; k <= 200 && !rig.target().tripped(); ++k) {
    rig.send(kSite, 3, 0.05);                // older
    rig.send(kSite, 5, 0.05);                // the counter in force again
    rig.send(kSite, 5U - (1U << 31), 0.05);  // 2^31 behind: older in serial-number order too
    ASSERT_TRUE(rig.tick(k));
  }
  EXPECT_EQ(k - 1, kTripTicks) << "the watchdog tripped at tick " << k - 1;
  EXPECT_EQ(rig.target().counters().stale, 3U * kTripTicks);
  EXPECT_EQ(rig.target().counters().applied, 1U);
  EXPECT_EQ(rig.target().counter(), 5U);
  EXPECT_EQ(rig.target().wire_command_m(0), 0.02);
}

// The sender of the first command taken is the only one obeyed: another sender's datagrams, with a
// newer counter, far ahead (2^31 - 1, the farthest still newer) or in a stream, are answered with the
// peer's counter and command in force, counted, and feed no watchdog.
TEST(TargetRules, OnlyTheFirstSendersCommandsAreTakenOthersAreCounted) {
  Rig rig;
  rig.send(kStranger, 0, 0.09);  // a probe locks nothing
  rig.send(kSite, 1, 0.01);
  rig.ticks(0, 0);
  ASSERT_TRUE(rig.target().peer().has_value());
  EXPECT_EQ(*rig.target().peer(), kSite);
  rig.send(kStranger, 2, 0.09);
  rig.send(kStranger, 1U + (1U << 31) - 1U, 0.09);
  rig.ticks(1, 1);
  const Answer to_stranger = rig.last_answer();
  EXPECT_EQ(to_stranger.to, kStranger);
  EXPECT_EQ(to_stranger.counter, 1U + (1U << 31) - 1U);  // its own counter echoed ...
  EXPECT_EQ(to_stranger.applied_counter, 1U);            // ... and the site's command in force
  EXPECT_DOUBLE_EQ(to_stranger.channel.applied_m, 0.01);
  EXPECT_DOUBLE_EQ(to_stranger.channel.displacement_m, 0.01);
  // The site goes on with its next counter: taken, the stranger's far counter notwithstanding.
  rig.send(kSite, 2, 0.015);
  rig.ticks(2, 2);
  EXPECT_EQ(rig.last_answer().applied_counter, 2U);
  EXPECT_DOUBLE_EQ(rig.last_answer().channel.applied_m, 0.015);
  // A stranger's stream alone feeds no watchdog: it trips 41 ticks after the site's last command.
  std::int64_t k = 3;
  for (std::uint32_t c = 100; k <= 200 && !rig.target().tripped(); ++k, ++c) {
    rig.send(kStranger, c, 0.09);
    ASSERT_TRUE(rig.tick(k));
  }
  EXPECT_EQ(k - 1, 2 + kTripTicks);
  EXPECT_EQ(rig.target().counters().foreign, 2U + static_cast<std::uint64_t>(kTripTicks));
  EXPECT_EQ(rig.target().counters().applied, 2U);
  EXPECT_EQ(rig.target().counters().probes, 1U);
}

// With a peer given (--peer), the first command of anyone else is not taken either.
TEST(TargetRules, AGivenPeerIsTheOnlySenderObeyedFromTheStart) {
  const config::Site site = lab_site();
  ScriptedPort port;
  ScriptedClock clock;
  TargetEmulator target(site, kRateHz, kWatchdogS, port, clock, nullptr, kSite);
  const BridgeLayout command(site.driver().udp_bridge().command(), 1);
  BridgeChannel channel;
  channel.command_m = 0.05;
  std::vector<std::byte> datagram(command.bytes());
  command.pack(BridgeFrame{1, true, std::span(&channel, 1)}, datagram);
  port.queue(kStranger, datagram);
  ASSERT_TRUE(target.tick(0));
  EXPECT_EQ(target.counter(), 0U);
  EXPECT_EQ(target.counters().foreign, 1U);
  port.queue(kSite, datagram);
  clock.set(ScriptedClock::on_time(1));
  ASSERT_TRUE(target.tick(1));
  EXPECT_EQ(target.counter(), 1U);
  EXPECT_EQ(target.wire_command_m(0), 0.05);
}

// Nothing but the peer's ENABLE 0 with a newer counter disarms: not a probe, not a stranger's, not a
// stale one, not a command; the watchdog then trips as ever. The disarm itself switches the watchdog
// off for good, holds the command in force, reports its counter as in force with the disarmed bit,
// and nothing is taken after it.
TEST(TargetRules, OnlyThePeersDisarmDisarmsAndAfterItTheWatchdogNeverTrips) {
  Rig rig;
  rig.send(kSite, 7, 0.0, /*enable=*/false);  // before any command: nothing armed, nothing to disarm
  rig.ticks(0, 0);
  EXPECT_EQ(rig.target().counters().disabled, 1U);
  rig.send(kSite, 10, 0.03);
  rig.ticks(1, 1);
  rig.send(kSite, 0, 0.0, false);       // a probe
  rig.send(kStranger, 11, 0.0, false);  // a stranger's disarm
  rig.send(kSite, 9, 0.0, false);       // the site's, stale
  rig.send(kSite, 10, 0.0, false);      // the site's, with the counter in force
  rig.ticks(2, 2);
  EXPECT_FALSE(rig.target().disarmed());
  EXPECT_EQ(rig.target().counter(), 10U);

  // Without the disarm the watchdog trips 41 ticks after the last command (tick 1).
  Rig control;
  control.send(kSite, 10, 0.03);
  control.ticks(1, 1);
  control.send(kSite, 0, 0.0, false);
  control.send(kStranger, 11, 0.0, false);
  control.send(kSite, 9, 0.0, false);
  control.send(kSite, 10, 0.0, false);
  EXPECT_EQ(trip_tick(control, 2, 400), 1 + kTripTicks);

  rig.send(kSite, 11, 0.07, false);  // the disarm (its command is not taken)
  rig.ticks(3, 3);
  ASSERT_TRUE(rig.target().disarmed());
  const Answer confirmed = rig.last_answer();
  EXPECT_EQ(confirmed.counter, 11U);
  EXPECT_EQ(confirmed.applied_counter, 11U);
  EXPECT_DOUBLE_EQ(confirmed.channel.applied_m, 0.03);
  EXPECT_EQ(confirmed.channel.status & target_status::kDisarmed, target_status::kDisarmed);
  EXPECT_EQ(rig.target().disarm().counter, 11U);
  EXPECT_DOUBLE_EQ(rig.target().disarm().hold_m[0], 0.03);
  // Ten watchdog times of silence, then a command: no trip, nothing taken, the actuator held.
  EXPECT_EQ(trip_tick(rig, 4, 4 + 10 * kTripTicks), 5 + 10 * kTripTicks);
  rig.send(kSite, 12, 0.05);
  rig.ticks(5 + 10 * kTripTicks, 5 + 10 * kTripTicks);
  EXPECT_EQ(rig.target().counters().after_disarm, 1U);
  EXPECT_EQ(rig.target().counter(), 11U);
  EXPECT_DOUBLE_EQ(rig.last_answer().channel.displacement_m, 0.03);
  EXPECT_FALSE(rig.target().tripped());
}

// The target stalls for 30 ms (its host did not run it) while the site goes on commanding every
// 4 ticks: at its return the ticks it owes run within microseconds, the first one draining what came
// meanwhile. The site was never silent: no trip, however many ticks the catch-up counts (123 here,
// three times the watchdog's 41). A site silent for as long does trip it, at the first tick after.
TEST(TargetRules, AStallOfTheTargetIsNoSilenceOfTheSite) {
  Rig rig;
  std::uint32_t counter = 0;
  for (std::int64_t k = 0; k < 100; ++k) {
    if (k % 4 == 0) {
      ++counter;
      rig.send(kSite, counter, 0.001 * counter);
    }
    ASSERT_TRUE(rig.tick(k));
  }
  // Ticks 100..222 are due during the stall; the site's datagrams of those 30 ms wait in the port.
  for (int i = 0; i < 30; ++i) {
    ++counter;
    rig.send(kSite, counter, 0.001 * counter);
  }
  const std::int64_t back_ns = ScriptedClock::on_time(100) + 30'000'000;
  for (std::int64_t k = 100; k <= 222; ++k) {
    ASSERT_TRUE(rig.tick(k, back_ns + 1000 * (k - 100))) << k;
  }
  EXPECT_FALSE(rig.target().tripped());
  EXPECT_EQ(rig.target().counter(), counter);
  // Silence of the site for 10.1 ms of the clock, with the ticks on time again: the trip.
  const std::int64_t last_ns = back_ns;  // the last new counter was taken at the stall's first tick
  rig.tick(223, last_ns + 10'000'000);
  EXPECT_FALSE(rig.target().tripped());
  rig.tick(224, last_ns + 10'100'000);
  EXPECT_TRUE(rig.target().tripped());
}

}  // namespace
}  // namespace rths::test_target_rules
