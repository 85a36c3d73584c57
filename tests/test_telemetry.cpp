// Telemetry (TelemetryPublisher, a node's side) and the console's hub of it (TelemetryHub).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "process.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/common/recorder.hpp"
#include "rths/common/telemetry.hpp"
#include "rths/common/udp_link.hpp"
#include "rths/console/hub.hpp"
#include "test_support.hpp"

namespace rths {
namespace {

using namespace std::chrono_literals;

// A console's socket on 127.0.0.1: what a publisher sends it, and requests back.
struct FakeConsole {
  asio::io_context io;
  UdpLink link{io, "127.0.0.1", 0};
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(link.local_port()); }
  // The next datagram within timeout ("" when none came).
  std::string next(std::chrono::milliseconds timeout = 2000ms) {
    std::array<std::byte, 65536> rx{};
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (const std::size_t n = link.receive(rx); n != 0) {
        return {reinterpret_cast<const char*>(rx.data()), n};
      }
      link.wait_readable(10'000'000);
    }
    return {};
  }
};

TEST(Telemetry, ADatagramCarriesTheNewestRowByNameTheStateAndNaNAsNull) {
  FakeConsole console;
  Recorder rec({{"t", "s"}, {"x1", "m"}, {"force", "N"}}, 10);
  rec.record(std::array{0.0, 0.001, 5.0});
  rec.record(std::array{0.5, 0.002, std::numeric_limits<double>::quiet_NaN()});
  TelemetryPublisher pub("site lab", {console.address(), 50.0});
  pub.add_stream("site", rec);
  pub.add_figure("held_steps", [] { return 3.0; });
  pub.set_state(NodeState::kStopped, "exit 5: the \"numerical\" node aborted");
  const std::string d = pub.datagram(0);
  EXPECT_NE(d.find(R"("node":"site lab")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("state":"stopped","reason":"exit 5: the \"numerical\" node aborted")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("figures":{"held_steps":3})"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("rows":2,"columns":["t_s","x1_m","force_N"],"values":[0.5,0.002,null])"), std::string::npos) << d;
  EXPECT_EQ(console::json_string_field(d, "token"), pub.token());
  EXPECT_EQ(pub.token().size(), 32U);
}

TEST(Telemetry, ALatestRowStreamSendsTheRowLastSetAndNothingBefore) {
  FakeConsole console;
  LatestRow latest({"t_s", "command_m"});
  TelemetryPublisher pub("target lab", {console.address(), 50.0});
  pub.add_stream("target", latest);
  EXPECT_NE(pub.datagram(0).find(R"("stream":"target","rows":0})"), std::string::npos) << pub.datagram(0);
  latest.set(std::array{0.1, 0.004});
  latest.set(std::array{0.2, 0.005});
  EXPECT_NE(pub.datagram(0).find(R"("rows":2,"columns":["t_s","command_m"],"values":[0.2,0.005])"), std::string::npos)
      << pub.datagram(0);
}

TEST(Telemetry, ThePublisherSendsAtItsRateFromItsOwnThread) {
  FakeConsole console;
  Recorder rec({{"t", "s"}}, 10);
  rec.record(std::array{0.25});
  TelemetryPublisher pub("numerical", {console.address(), 100.0});
  pub.add_stream("numerical", rec);
  pub.start();
  std::vector<std::string> got;
  const auto began = std::chrono::steady_clock::now();
  while (got.size() < 10) {
    const std::string d = console.next();
    ASSERT_FALSE(d.empty()) << "no telemetry within 2 s";
    got.push_back(d);
  }
  // Ten datagrams at 100 Hz take about 90 ms; a publisher that sent as fast as it could would take
  // none, one at 10 Hz would take 900 ms (a rate, not a timing test: bounds 5x apart).
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_GT(elapsed_s, 0.045);
  EXPECT_LT(elapsed_s, 0.6);
  EXPECT_NE(got.back().find(R"("values":[0.25])"), std::string::npos) << got.back();
}

TEST(Telemetry, AStopRequestCountsOnlyWithTheTokenAndFromTheConsole) {
  FakeConsole console;
  std::atomic<int> stops{0};
  TelemetryPublisher pub("numerical", {console.address(), 200.0});
  pub.on_stop([&] { ++stops; });
  pub.start();
  ASSERT_FALSE(console.next().empty());
  console.link.adopt_last_source();  // answer the publisher, as rths-console does
  const auto send = [](UdpLink& link, const std::string& text) {
    link.send(std::as_bytes(std::span(text.data(), text.size())));
  };
  send(console.link, R"({"stop":"00000000000000000000000000000000"})");  // a guessed token
  send(console.link, R"({"stop":")" + pub.token() + R"(","x":1})");      // not the request
  // The right request from another port of this host: not the console.
  asio::io_context io;
  UdpLink other(io, "127.0.0.1", 0);
  const std::string source = console.link.peer_description();
  const auto colon = source.rfind(':');
  other.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(source.substr(colon + 1))));
  send(other, R"({"stop":")" + pub.token() + R"("})");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(stops.load(), 0);
  send(console.link, R"({"stop":")" + pub.token() + R"("})");
  for (int i = 0; i < 100 && stops.load() == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(stops.load(), 1);
}

// A console that is gone, or one that never reads: the publisher's sends fail or fill the socket's
// buffer, are counted, and never wait. The step is not involved at all (it only records); here the
// publisher itself keeps its rate.
TEST(Telemetry, AnAbsentOrStalledConsoleNeverHoldsThePublisher) {
  Recorder rec({{"t", "s"}}, 10);
  rec.record(std::array{0.0});
  std::string absent;
  {
    FakeConsole gone;
    absent = gone.address();
  }                     // closed: the kernel answers "port unreachable"
  FakeConsole stalled;  // never reads
  for (const std::string& address : {absent, stalled.address()}) {
    TelemetryPublisher pub("numerical", {address, 1000.0});
    pub.add_stream("a", rec);
    pub.add_stream("b", rec);
    pub.start();
    std::this_thread::sleep_for(500ms);
    // 1000 Hz x 2 streams x 0.5 s = 1000 attempts; a publisher that blocked would have made few.
    EXPECT_GT(pub.sent() + pub.send_errors(), 500U) << address;
  }
}

TEST(Telemetry, BadAddressesAndRatesAreRefused) {
  EXPECT_THROW(TelemetryPublisher("n", {"127.0.0.1", 50.0}), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", {"127.0.0.1:0", 50.0}), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", {"127.0.0.1:47300", 0.0}), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", {"127.0.0.1:47300", std::nan("")}), std::invalid_argument);
}

TEST(ConsoleHub, KeepsTheNewestOfEachNodeAndStreamAndRefusesWhatIsNotTelemetry) {
  console::TelemetryHub hub;
  EXPECT_TRUE(
      hub.accept(R"({"node":"numerical","token":"t1","state":"running","stream":"numerical","rows":1})", "a:1"));
  EXPECT_TRUE(
      hub.accept(R"({"node":"numerical","token":"t1","state":"running","stream":"numerical","rows":2})", "a:1"));
  EXPECT_TRUE(hub.accept(R"({"node":"site lab","token":"t2","state":"running","stream":"site","rows":7})", "b:2"));
  EXPECT_FALSE(hub.accept("hello", "c:3"));
  EXPECT_FALSE(hub.accept(R"({"node":"x","state":"running"})", "c:3"));  // no token
  EXPECT_EQ(hub.accepted(), 3U);
  EXPECT_EQ(hub.rejected(), 2U);
  const auto latest = hub.latest();
  ASSERT_EQ(latest.size(), 2U);
  EXPECT_NE(latest[0].find(R"("rows":2)"), std::string::npos);
  const auto nodes = hub.nodes();
  ASSERT_EQ(nodes.size(), 2U);
  EXPECT_EQ(nodes[0].node, "numerical");
  EXPECT_EQ(nodes[0].source, "a:1");
  EXPECT_EQ(nodes[0].token, "t1");
  EXPECT_EQ(nodes[0].datagrams, 2U);
}

TEST(ConsoleHub, AClientTooFarBehindSkipsToTheRingAndIsToldHowMany) {
  console::TelemetryHub hub(4);
  for (int i = 0; i < 10; ++i) {
    hub.accept(R"({"node":"n","token":"t","state":"running","i":)" + std::to_string(i) + "}", "a:1");
  }
  const auto batch = hub.after(0, 0ms);
  EXPECT_EQ(batch.skipped, 6U);
  ASSERT_EQ(batch.datagrams.size(), 4U);
  EXPECT_NE(batch.datagrams.front().find(R"("i":6)"), std::string::npos);
  EXPECT_EQ(batch.next, 10U);
  // Nothing new: the wait ends empty.
  const auto none = hub.after(batch.next, 10ms);
  EXPECT_TRUE(none.datagrams.empty());
  EXPECT_EQ(none.next, 10U);
}

TEST(ConsoleHub, AWaitingClientWakesOnTheNextDatagram) {
  console::TelemetryHub hub;
  std::thread sender([&] {
    std::this_thread::sleep_for(50ms);
    hub.accept(R"({"node":"n","token":"t","state":"running"})", "a:1");
  });
  const auto batch = hub.after(0, 5000ms);
  sender.join();
  ASSERT_EQ(batch.datagrams.size(), 1U);
}

}  // namespace
}  // namespace rths

namespace rths {
namespace {

// The relay and the target emulator publish as the nodes do: their first datagram, named, with their
// figures or their tick rows.
class TelemetryNodes : public test::RunFolderTest {
 protected:
  // The first datagram of `node` that `program args --console ...` sends within 10 s; the program is
  // then stopped as a user would (SIGINT) and must end with 0.
  std::string first_datagram(const std::string& program, std::vector<std::string> args, const std::string& node) {
    FakeConsole console;
    args.insert(args.end(), {"--console", console.address(), "--out", (dir_ / program).string()});
    test::Process p(program, args, dir_ / program);
    std::string found;
    for (int i = 0; i < 100 && found.empty(); ++i) {
      const std::string d = console.next(std::chrono::milliseconds(100));
      if (console::json_string_field(d, "node") == node) found = d;
    }
    p.signal(SIGINT);
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), kExitCompleted) << p.err();
    return found;
  }
};

TEST_F(TelemetryNodes, TheRelayPublishesEachDirectionsCounters) {
  const std::string d = first_datagram("rths-relay",
                                       {test::example("seed002/spring.textproto").string(), "--site", "spring",
                                        "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9", "--idle-exit", "0"},
                                       "relay spring");
  ASSERT_FALSE(d.empty()) << "no telemetry from the relay";
  EXPECT_EQ(console::json_string_field(d, "state"), "running") << d;
  EXPECT_NE(d.find(R"("forward_received":0)"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("backward_lost":0)"), std::string::npos) << d;
}

TEST_F(TelemetryNodes, TheTargetEmulatorPublishesItsTickRows) {
  const std::string d = first_datagram(
      "rths-target",
      {test::example("hardware/spring_bridge.textproto").string(), "--site", "spring", "--listen", "127.0.0.1:0"},
      "target spring");
  ASSERT_FALSE(d.empty()) << "no telemetry from the target";
  EXPECT_NE(d.find(R"("stream":"target")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("watchdog_tripped":)"), std::string::npos) << d;
}

}  // namespace
}  // namespace rths
