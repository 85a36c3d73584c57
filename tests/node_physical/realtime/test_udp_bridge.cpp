// The UDP bridge driver against a fake real-time target on 127.0.0.1 (a UdpLink in the test): the
// probe at open, the counter and its echo, stale and missing replies, the stop after too many misses,
// a reply of the wrong size, a foreign sender, a target that is not there, and no allocation per step.
//
// The fake target answers ahead of time: a reply sent to the driver's socket before exchange() waits
// in it (loopback delivers within sendto()), so each step finds exactly what the test put there,
// without a thread or a clock in the way.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/text_format.h>

#include <asio/io_context.hpp>

#include "common/transport/udp_link.hpp"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/drivers/udp_bridge.hpp"
#include "support/alloc_counter.hpp"
#include "support/bridge_layouts.hpp"
#include "support/fake_bridge_target.hpp"

namespace rths::test_udp_bridge {
namespace {

using test::bridge_to;
using test::FakeTarget;
constexpr double kDt = 1.0 / 1024;

config::Site one_channel_site() {
  config::Site site;
  site.set_name("lab");
  site.add_channel();
  return site;
}

// The driver opened against the fake target, which answers the probe from a thread (open() blocks
// until it does) with the actuator at 12 mm under 345 N.
struct Opened {
  FakeTarget target;
  std::unique_ptr<PlantDriver> driver;
  BridgeFrame probe{};
  BridgeChannel probe_command{};
  Measurement at_open{};
};

std::unique_ptr<Opened> open_bridge(std::uint32_t max_missed = 3) {
  auto o = std::make_unique<Opened>();
  config::UdpBridge bridge = o->target.bridge();
  bridge.set_max_missed_replies(max_missed);
  o->driver = make_udp_bridge(bridge, one_channel_site(), 1024);
  std::thread answer([&o] {
    o->probe = o->target.next(o->probe_command);
    o->target.reply(0, 0.012, 345.0);
  });
  std::array<Measurement, 1> measured{};
  o->driver->open(measured);
  answer.join();
  o->target.drain();  // further probes, if open() sent any before the answer arrived
  o->at_open = measured[0];
  return o;
}

Measurement step(PlantDriver& driver, double command_m, bool& ok) {
  std::array<InterfaceMotion, 1> commands{InterfaceMotion{command_m, 0.0, 0.0}};
  std::array<Measurement, 1> measured{};
  ok = driver.exchange(commands, measured, kDt);
  return measured[0];
}

results::UdpBridgePlant report(const PlantDriver& driver) {
  results::PlantReport out;
  driver.report(0, out);
  return out.udp_bridge();
}

TEST(UdpBridge, OpenSendsAReadOnlyProbeAndReadsWhereTheActuatorIs) {
  const auto o = open_bridge();
  EXPECT_EQ(o->probe.counter, 0U);
  EXPECT_FALSE(o->probe.enable);
  EXPECT_EQ(o->at_open.displacement_m, 0.012);
  EXPECT_EQ(o->at_open.force_n, 345.0);
}

TEST(UdpBridge, EachStepSendsTheNextCounterAndTakesTheReplyThatEchoesIt) {
  const auto o = open_bridge();
  bool ok = false;
  for (std::uint32_t j = 1; j <= 3; ++j) {
    // The reply to step j is waiting before step j sends: it is taken because it echoes j.
    o->target.reply(j, 0.001 * j, 100.0 * j, 0, 0.002 * j);
    const Measurement m = step(*o->driver, 0.002 * j, ok);
    EXPECT_TRUE(ok);
    EXPECT_DOUBLE_EQ(m.displacement_m, 0.001 * j);
    EXPECT_EQ(m.force_n, 100.0 * j);
    EXPECT_EQ(o->driver->status(0), 0U);
    BridgeChannel command;
    const BridgeFrame sent = o->target.next(command);
    EXPECT_EQ(sent.counter, j);
    EXPECT_TRUE(sent.enable);
    EXPECT_DOUBLE_EQ(command.command_m, 0.002 * j);
  }
  EXPECT_EQ(report(*o->driver).replies(), 3U);
}

TEST(UdpBridge, WithoutAVelocityFieldTheVelocityIsTheBackwardDifference) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.012 + 0.0005, 0.0);
  const Measurement m = step(*o->driver, 0.0, ok);
  ASSERT_TRUE(ok);
  EXPECT_NEAR(m.velocity_m_per_s, 0.0005 / kDt, 1e-9);  // from the position read at open
}

TEST(UdpBridge, AStaleReplyIsDiscardedAndCounted) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.001, 1.0);
  step(*o->driver, 0.0, ok);
  // Step 2 finds an echo of step 1 (a duplicate) and of the probe before its own.
  o->target.reply(1, 0.5, 5.0);
  o->target.reply(0, 0.6, 6.0);
  o->target.reply(2, 0.002, 2.0);
  const Measurement m = step(*o->driver, 0.0, ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(m.displacement_m, 0.002);
  EXPECT_EQ(o->driver->status(0), driver_status::kReplyLate);
  EXPECT_EQ(report(*o->driver).late(), 1U);
  EXPECT_EQ(report(*o->driver).probe_echoes(), 1U);
  // The late bit is the step's own: the next step, answered in time, has it clear.
  o->target.reply(3, 0.003, 3.0);
  step(*o->driver, 0.0, ok);
  EXPECT_EQ(o->driver->status(0), 0U);
}

// A target slower than the probe interval answers every probe open() sent: the answers after the
// first concern no step and flag none (a step flagged late for them would be a false alarm).
TEST(UdpBridge, AnswersToFurtherProbesAreDiscardedWithoutFlaggingTheStep) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(0, 0.7, 7.0);
  o->target.reply(0, 0.8, 8.0);
  o->target.reply(1, 0.001, 1.0);
  const Measurement m = step(*o->driver, 0.0, ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(m.displacement_m, 0.001);
  EXPECT_EQ(o->driver->status(0), 0U);
  EXPECT_EQ(report(*o->driver).probe_echoes(), 2U);
  EXPECT_EQ(report(*o->driver).late(), 0U);
}

TEST(UdpBridge, AMissingReplyHoldsTheLastMeasurementAndIsCounted) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.004, 40.0);
  step(*o->driver, 0.0, ok);
  const Measurement held = step(*o->driver, 0.0, ok);  // no reply to step 2
  EXPECT_TRUE(ok);
  EXPECT_EQ(held.displacement_m, 0.004);
  EXPECT_EQ(held.force_n, 40.0);
  EXPECT_TRUE(held.held);  // marked, so that no controller learns from it
  EXPECT_EQ(o->driver->status(0), driver_status::kReplyMissing);
  // Step 2's reply comes late, during step 3: it is discarded, step 3's is taken.
  o->target.reply(2, 0.7, 7.0);
  o->target.reply(3, 0.006, 60.0);
  const Measurement m = step(*o->driver, 0.0, ok);
  EXPECT_EQ(m.displacement_m, 0.006);
  EXPECT_FALSE(m.held);
  EXPECT_EQ(o->driver->status(0), driver_status::kReplyLate);
  const results::UdpBridgePlant r = report(*o->driver);
  EXPECT_EQ(r.missed(), 1U);
  EXPECT_EQ(r.late(), 1U);
  EXPECT_EQ(r.replies(), 2U);
  EXPECT_EQ(r.longest_missed_run(), 1U);
}

TEST(UdpBridge, MaxMissedRepliesInARowStopTheSite) {
  const auto o = open_bridge(3);
  bool ok = false;
  // Two misses, a reply, two misses: never three in a row.
  step(*o->driver, 0.0, ok);
  step(*o->driver, 0.0, ok);
  o->target.reply(3, 0.001, 1.0);
  step(*o->driver, 0.0, ok);
  step(*o->driver, 0.0, ok);
  step(*o->driver, 0.0, ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(o->driver->fault(), "");
  const Measurement last = step(*o->driver, 0.0, ok);  // the third in a row
  EXPECT_FALSE(ok);
  EXPECT_EQ(last.displacement_m, 0.001);  // the last measurement, held
  EXPECT_EQ(o->driver->fault(), "no reply from target " + o->target.bridge().target() +
                                    " for 3 steps in a row (max_missed_replies 3, reply_timeout_s 0.0004 s)");
  EXPECT_EQ(report(*o->driver).longest_missed_run(), 3U);
  // Once stopped it stays stopped.
  step(*o->driver, 0.0, ok);
  EXPECT_FALSE(ok);
}

TEST(UdpBridge, AReplyOfTheWrongSizeStopsTheSiteAtOnceNamingBothSizes) {
  const auto o = open_bridge(100);
  bool ok = false;
  o->target.reply(1, 0.001, 1.0);
  step(*o->driver, 0.0, ok);
  const std::vector<std::byte> short_reply(20, std::byte{0});
  o->target.send_raw(short_reply);
  const Measurement held = step(*o->driver, 0.0, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(held.displacement_m, 0.001);
  EXPECT_EQ(o->driver->fault(), "target " + o->target.bridge().target() +
                                    " sent a 20-byte datagram, expected 36 bytes (the reply layout, "
                                    "udp_bridge.reply): refused");
}

TEST(UdpBridge, DatagramsFromAnotherAddressAreIgnoredAndCounted) {
  const auto o = open_bridge();
  // The bytes of a right reply to step 1, from another port of the same host.
  const BridgeLayout reply(o->target.bridge().reply(), 1);
  BridgeChannel forged;
  forged.displacement_m = 0.099;
  std::vector<std::byte> datagram(reply.bytes());
  reply.pack(BridgeFrame{1, true, std::span(&forged, 1)}, datagram);
  asio::io_context io;
  UdpLink stranger(io, "127.0.0.1", 0);
  stranger.set_peer("127.0.0.1", o->target.driver_port());
  stranger.send(datagram);
  o->target.reply(1, 0.002, 2.0);
  bool ok = false;
  const Measurement m = step(*o->driver, 0.0, ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(m.displacement_m, 0.002);
  EXPECT_EQ(o->driver->status(0), 0U);  // neither late nor missing: it was nobody's reply
  EXPECT_EQ(report(*o->driver).foreign(), 1U);
}

TEST(UdpBridge, NoTargetIsADriverErrorNamingItsAddress) {
  std::uint16_t port = 0;
  {
    asio::io_context io;
    const UdpLink taken(io, "127.0.0.1", 0);
    port = taken.local_port();
  }  // closed: nothing listens there now
  const auto driver = make_udp_bridge(bridge_to(port, 0.2), one_channel_site(), 1024);
  std::array<Measurement, 1> measured{};
  try {
    driver->open(measured);
    FAIL() << "open() returned without a target";
  } catch (const DriverError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("no reply from target 127.0.0.1:" + std::to_string(port) + " within 0.2 s", 0), 0U)
        << e.what();
  }
}

TEST(UdpBridge, AProbeAnsweredWithTheWrongSizeIsADriverErrorNamingBothSizes) {
  FakeTarget target;
  const auto driver = make_udp_bridge(target.bridge(), one_channel_site(), 1024);
  std::thread answer([&target] {
    BridgeChannel ignored;
    (void)target.next(ignored);
    const std::vector<std::byte> long_reply(30, std::byte{0});
    target.send_raw(long_reply);
  });
  std::array<Measurement, 1> measured{};
  EXPECT_THROW(
      {
        try {
          driver->open(measured);
        } catch (const DriverError& e) {
          EXPECT_STREQ(e.what(), ("target " + target.bridge().target() +
                                  " answered the probe with a 30-byte datagram, expected 36 bytes (the reply layout, "
                                  "udp_bridge.reply)")
                                     .c_str());
          throw;
        }
      },
      DriverError);
  answer.join();
}

TEST(UdpBridge, TheTargetsStatusWordIsInTheUpperSixteenBits) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.0, 0.0, 0x8001U);  // no fault bit (the default fault_bits are bits 1 and 2)
  step(*o->driver, 0.0, ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(o->driver->status(0), 0x8001U << 16);
  step(*o->driver, 0.0, ok);  // missed: the word is held, the driver's bit added
  EXPECT_EQ(o->driver->status(0), (0x8001U << 16) | driver_status::kReplyMissing);
}

// A target that reports a fault (rths-target: its watchdog tripped, bit 1) no longer obeys: the
// site stops instead of commanding an actuator that holds.
TEST(UdpBridge, AReplyWithAFaultBitStopsTheSiteNamingTheWord) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.001, 10.0, 0x1U, 0.001);  // bit 0 (a stroke clamp) is not a fault
  step(*o->driver, 0.001, ok);
  EXPECT_TRUE(ok);
  o->target.reply(2, 0.002, 20.0, 0x3U, 0.002);
  const Measurement held = step(*o->driver, 0.002, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(o->driver->fault(), "target " + o->target.bridge().target() +
                                    " reports status 0x3 on channel 0: a fault bit (udp_bridge.fault_bits 0x6) is "
                                    "set, the equipment no longer obeys");
  EXPECT_EQ(held.displacement_m, 0.002);  // what the sensors read is still reported
  step(*o->driver, 0.0, ok);
  EXPECT_FALSE(ok);  // and it stays stopped
}

TEST(UdpBridge, AStepAllocatesNothing) {
  const auto o = open_bridge(1000);
  bool ok = false;
  o->target.reply(1, 0.001, 1.0);
  step(*o->driver, 0.0, ok);  // the first step, outside the count
  std::array<InterfaceMotion, 1> commands{};
  std::array<Measurement, 1> measured{};
  const std::uint64_t before = test::allocations_on_this_thread();
  for (std::uint32_t j = 2; j < 200; ++j) {
    o->target.reply(j, 0.001, 1.0, 0, 1e-5 * j);
    commands[0].displacement_m = 1e-5 * j;
    ok = o->driver->exchange(commands, measured, kDt) && ok;
    o->target.drain();
  }
  // Misses and late replies take the same path; and a reply that says another command is in force.
  for (int j = 0; j < 5; ++j) {
    o->target.reply(1, 0.001, 1.0);
    ok = o->driver->exchange(commands, measured, kDt) && ok;
  }
  o->target.reply(205, 0.001, 1.0, 0, 0.5);
  const bool refused = !o->driver->exchange(commands, measured, kDt);
  (void)o->driver->refused();
  EXPECT_EQ(test::allocations_on_this_thread(), before);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(refused);
}

// Bridge protocol 2: the reply says which counter the target holds in force. A reply that echoes the
// step's counter but holds another one (a stranger's newer counter, a command the target refused) trips
// the site's interlock at once, and the site stays stopped.
TEST(UdpBridge, AReplyHoldingAnotherCounterTripsTheInterlock) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.001, 1.0, 0, 0.003);
  step(*o->driver, 0.003, ok);
  ASSERT_TRUE(ok);
  o->target.reply(2, 0.002, 2.0, 0, 0.09, 2U + (1U << 31) - 1U);
  const Measurement read = step(*o->driver, 0.004, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(read.displacement_m, 0.002);  // what the sensors read is still reported
  const InterlockTrip trip = o->driver->refused();
  EXPECT_EQ(trip.what, InterlockTrip::What::kAppliedCounter);
  EXPECT_EQ(trip.describe(),
            "the equipment holds command 2147483649 in force, not command 2 that the site just sent: it does not "
            "obey this site (another sender drives it, or it refused the command)");
  EXPECT_EQ(o->driver->fault(), "target " + o->target.bridge().target() + ": " + trip.describe());
  o->target.reply(3, 0.003, 3.0, 0, 0.005);
  step(*o->driver, 0.005, ok);
  EXPECT_FALSE(ok);
}

// The same counter with another value (a stranger that sent the site's next counter first) trips it
// too; a value that differs only by the wire's rounding does not: a double's last bits here, a whole
// unit of an integer field (1 um in an INT32 field of micrometres).
TEST(UdpBridge, AnAppliedCommandThatIsNotTheOneSentTripsTheInterlock) {
  config::UdpBridge micrometres = bridge_to(1);
  micrometres.mutable_reply(5)->set_type(config::BridgeField::INT32);
  micrometres.mutable_reply(5)->set_scale(1e6);
  const double unit = BridgeLayout(micrometres.reply(), 1).resolution(config::BridgeField::APPLIED_COMMAND, 0, 0.001);
  EXPECT_GE(unit, 1e-6);
  EXPECT_LE(unit, 1.001e-6);

  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.0, 0.0, 0, 0.0012344 + 0.4e-12);  // a double's last bits
  step(*o->driver, 0.0012344, ok);
  ASSERT_TRUE(ok) << o->driver->fault();
  o->target.reply(2, 0.0, 0.0, 0, 0.0123);
  step(*o->driver, 0.0023, ok);
  EXPECT_FALSE(ok);
  const InterlockTrip trip = o->driver->refused();
  EXPECT_EQ(trip.what, InterlockTrip::What::kAppliedCommand);
  EXPECT_DOUBLE_EQ(trip.value, 0.0123);
  EXPECT_DOUBLE_EQ(trip.limit, 0.0023);
  EXPECT_NE(trip.describe().find("the equipment applied 0.0123"), std::string::npos) << trip.describe();
  EXPECT_NE(trip.describe().find("on its channel 0 (from 0: the bridge's, a setup's actuator), not the 0.0023"),
            std::string::npos)
      << trip.describe();
}

// A target that reports a fault bit in its answer to the probe (rths-target: its watchdog tripped, or
// the last test disarmed it) ignores commands: the start is refused before anything moves.
TEST(UdpBridge, AProbeAnsweredWithAFaultBitRefusesTheStart) {
  FakeTarget target;
  const auto driver = make_udp_bridge(target.bridge(), one_channel_site(), 1024);
  std::thread answer([&target] {
    BridgeChannel ignored;
    (void)target.next(ignored);
    target.reply(0, 0.0, 0.0, 0x4U);
  });
  std::array<Measurement, 1> measured{};
  try {
    driver->open(measured);
    ADD_FAILURE() << "open() accepted a target that reports a fault bit";
  } catch (const DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("answers the probe with status 0x4 on channel 0: a fault bit "
                                         "(udp_bridge.fault_bits 0x6) is set"),
              std::string::npos)
        << e.what();
  }
  answer.join();
}

// The disarm after the stop ramp: ENABLE 0 with the next counter and the last command, until the
// answer echoing it holds that counter; then "confirmed". Unanswered: "not confirmed", naming why.
TEST(UdpBridge, TheDisarmSendsEnableZeroWithTheNextCounterUntilTheTargetHoldsIt) {
  const auto o = open_bridge();
  bool ok = false;
  o->target.reply(1, 0.0, 0.0, 0, 0.004);
  step(*o->driver, 0.004, ok);
  ASSERT_TRUE(ok);
  o->target.drain();
  BridgeFrame disarm{};
  BridgeChannel held;
  std::thread answer([&o, &disarm, &held] {
    disarm = o->target.next(held);
    o->target.reply(disarm.counter, 0.004, 0.0, 0x4U, 0.004);
  });
  EXPECT_EQ(o->driver->disarm(), "");
  answer.join();
  EXPECT_EQ(disarm.counter, 2U);
  EXPECT_FALSE(disarm.enable);
  EXPECT_DOUBLE_EQ(held.command_m, 0.004);
  EXPECT_EQ(report(*o->driver).disarm(), "confirmed");
}

TEST(UdpBridge, AnUnansweredDisarmIsNotConfirmed) {
  FakeTarget target;
  config::UdpBridge bridge = target.bridge();
  bridge.set_open_timeout_s(0.2);
  const auto driver = make_udp_bridge(bridge, one_channel_site(), 1024);
  std::thread answer([&target] {
    BridgeChannel ignored;
    (void)target.next(ignored);
    target.reply(0, 0.0, 0.0);
  });
  std::array<Measurement, 1> measured{};
  driver->open(measured);
  answer.join();
  target.reply(1, 0.0, 0.0);
  std::array<InterfaceMotion, 1> commands{};
  ASSERT_TRUE(driver->exchange(commands, measured, kDt));
  target.drain();
  // The target takes no disarm: it answers it holding step 1's counter.
  std::thread refuse([&target] {
    BridgeChannel ignored;
    const BridgeFrame d = target.next(ignored);
    target.reply(d.counter, 0.0, 0.0, 0, 0.0, 1);
  });
  EXPECT_EQ(driver->disarm(), "not confirmed: target " + bridge.target() +
                                  " answered the disarm (counter 2) holding command 1: it did not take it");
  refuse.join();
  EXPECT_EQ(driver->disarm().rfind(
                "not confirmed: no answer from target " + bridge.target() + " to the disarm within 0.2 s", 0),
            0U);
}

}  // namespace
}  // namespace rths::test_udp_bridge
