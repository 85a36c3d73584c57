// Telemetry (TelemetryPublisher, a node's side), its sealed frames, and the console's hub of it
// (TelemetryHub): what it takes, what it drops and counts, where the stop request goes.
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

#include <sodium.h>
#include <asio/io_context.hpp>

#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/records/recorder.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/udp_link.hpp"
#include "console/hub/hub.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_telemetry {
namespace {

using namespace std::chrono_literals;
namespace frame = telemetry_frame;

SecretKey random_key() {
  ensure_crypto();
  std::array<unsigned char, SecretKey::kBytes> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  return SecretKey{std::span<const unsigned char, SecretKey::kBytes>(bytes)};
}

TelemetryOptions options(const std::string& address, double rate_hz, const SecretKey& key) {
  TelemetryOptions o;
  o.console = address;
  o.rate_hz = rate_hz;
  o.key = key;
  return o;
}

std::string_view text(std::span<const std::byte> bytes) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): bytes read as the characters they are
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// A console's socket on 127.0.0.1 holding the key: what a publisher sends it, opened, and requests back.
struct FakeConsole {
  explicit FakeConsole(const SecretKey& key) : keys(frame::derive_keys(key)) {}
  frame::Keys keys;
  asio::io_context io;
  UdpLink link{io, "127.0.0.1", 0};
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(link.local_port()); }
  // The next frame within timeout, opened (nullopt when none came or it did not open).
  std::optional<frame::Opened> next(std::chrono::milliseconds timeout = 2000ms) {
    std::array<std::byte, 65536> rx{};
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (const std::size_t n = link.receive(rx); n != 0) {
        return frame::open(keys.to_console, text(std::span(rx).first(n)));
      }
      link.wait_readable(10'000'000);
    }
    return std::nullopt;
  }
  void send(const std::string& bytes) { link.send(std::as_bytes(std::span(bytes.data(), bytes.size()))); }
};

TEST(TelemetryFrame, OpensOnlyUnderItsKeyAndUnaltered) {
  const SecretKey key = random_key();
  const frame::Header h{frame::Kind::kTelemetry, frame::random_run(), 7, {}};
  const std::string sealed = frame::seal(key, h, R"({"node":"numerical"})");
  const auto opened = frame::open(key, sealed);
  ASSERT_TRUE(opened);
  EXPECT_EQ(opened->body, R"({"node":"numerical"})");
  EXPECT_EQ(opened->header.sequence, 7U);
  EXPECT_EQ(opened->header.run, h.run);
  EXPECT_FALSE(frame::open(random_key(), sealed));
  for (const std::size_t at : {std::size_t{5}, std::size_t{8}, std::size_t{24}, std::size_t{32}, sealed.size() - 1}) {
    std::string altered = sealed;
    altered[at] = static_cast<char>(altered[at] ^ 1);
    EXPECT_FALSE(frame::open(key, altered)) << "byte " << at;
  }
  EXPECT_FALSE(frame::open(key, R"({"node":"numerical","token":"x","state":"running"})"));
}

TEST(Telemetry, ADatagramCarriesTheNewestRowByNameTheStateAndNaNAsNull) {
  const SecretKey key = random_key();
  FakeConsole console(key);
  Recorder rec({{"t", "s"}, {"x1", "m"}, {"force", "N"}}, 10);
  rec.record(std::array{0.0, 0.001, 5.0});
  rec.record(std::array{0.5, 0.002, std::numeric_limits<double>::quiet_NaN()});
  TelemetryPublisher pub("site lab", options(console.address(), 50.0, key));
  pub.add_stream("site", rec);
  pub.add_figure("held_steps", [] { return 3.0; });
  pub.set_experiment("two sites");
  pub.set_state(NodeState::kStopped, "exit 5: the \"numerical\" node aborted");
  const std::string d = pub.datagram(0);
  EXPECT_NE(d.find(R"("node":"site lab")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("state":"stopped","reason":"exit 5: the \"numerical\" node aborted")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("experiment":"two sites")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("figures":{"held_steps":3})"), std::string::npos) << d;
  EXPECT_NE(d.find(R"("rows":2,"columns":["t_s","x1_m","force_N"],"values":[0.5,0.002,null])"), std::string::npos) << d;
  EXPECT_EQ(console::json_string_field(d, "reason"), "exit 5: the \"numerical\" node aborted");
}

// A frame is one datagram of at most 1400 bytes, as every rths datagram: a record with more columns
// than fit (a 300-DOF model) sends its first ones, and a long reason and experiment's name are cut,
// so that the frame is sent at all (UdpLink refuses a longer datagram).
TEST(Telemetry, AWideRecordAndLongTextsStillFitOneDatagram) {
  const SecretKey key = random_key();
  FakeConsole console(key);
  std::vector<Column> columns{{"t", "s"}};
  for (int i = 1; i <= 300; ++i) {
    std::string name = "x";
    name += std::to_string(i);
    columns.push_back({name, "m"});
  }
  Recorder rec(columns, 4);
  std::vector<double> row(columns.size(), 0.00123456789);
  rec.record(row);
  TelemetryPublisher pub("numerical", options(console.address(), 100.0, key));
  pub.add_stream("numerical", rec);
  pub.set_experiment(std::string(1000, 'e'));
  std::string reason = "exit 1: ";
  reason.append(1000, '\x01');  // control characters: escaped six bytes each
  pub.set_state(NodeState::kStopped, reason);
  const std::string d = pub.datagram(0);
  EXPECT_LE(d.size(), TelemetryPublisher::kMaxBodyBytes);
  EXPECT_TRUE(console::strict_json_object(d)) << d;
  EXPECT_NE(d.find(R"("columns":["t_s","x1_m","x2_m")"), std::string::npos) << d;
  EXPECT_NE(d.find(R"(...","sent")"), std::string::npos) << "the reason was not cut: " << d;
  pub.start();
  const auto got = console.next();
  ASSERT_TRUE(got) << "no frame arrived: over 1400 bytes, it was never sent";
  EXPECT_EQ(got->body.substr(0, 40), d.substr(0, 40));
  EXPECT_EQ(pub.send_errors(), 0U);
}

TEST(Telemetry, ALatestRowStreamSendsTheRowLastSetAndNothingBefore) {
  const SecretKey key = random_key();
  FakeConsole console(key);
  LatestRow latest({"t_s", "command_m"});
  TelemetryPublisher pub("target lab", options(console.address(), 50.0, key));
  pub.add_stream("target", latest);
  EXPECT_NE(pub.datagram(0).find(R"("stream":"target","rows":0})"), std::string::npos) << pub.datagram(0);
  latest.set(std::array{0.1, 0.004});
  latest.set(std::array{0.2, 0.005});
  EXPECT_NE(pub.datagram(0).find(R"("rows":2,"columns":["t_s","command_m"],"values":[0.2,0.005])"), std::string::npos)
      << pub.datagram(0);
}

TEST(Telemetry, ThePublisherSendsSealedFramesAtItsRateWithIncreasingSequence) {
  const SecretKey key = random_key();
  FakeConsole console(key);
  Recorder rec({{"t", "s"}}, 10);
  rec.record(std::array{0.25});
  TelemetryPublisher pub("numerical", options(console.address(), 100.0, key));
  pub.add_stream("numerical", rec);
  pub.start();
  std::vector<frame::Opened> got;
  const auto began = std::chrono::steady_clock::now();
  while (got.size() < 10) {
    const auto d = console.next();
    ASSERT_TRUE(d) << "no frame that opens under the key within 2 s";
    got.push_back(*d);
  }
  // Ten frames at 100 Hz take about 90 ms; a publisher that sent as fast as it could would take
  // none, one at 10 Hz would take 900 ms (a rate, not a timing test: bounds 5x apart).
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_GT(elapsed_s, 0.045);
  EXPECT_LT(elapsed_s, 0.6);
  EXPECT_NE(got.back().body.find(R"("values":[0.25])"), std::string::npos) << got.back().body;
  for (std::size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i].header.sequence, got[i - 1].header.sequence + 1);
    EXPECT_EQ(got[i].header.run, pub.run());
  }
}

// A numerical node's publisher at 200 Hz, started towards a fake console that holds its key, counting
// the stops it takes.
struct StartedPublisher {
  StartedPublisher() {
    pub.on_stop([this] { ++stops; });
    pub.start();
  }
  SecretKey key = random_key();
  FakeConsole console{key};
  std::atomic<int> stops{0};
  TelemetryPublisher pub{"numerical", options(console.address(), 200.0, key)};
};

// The stop request counts only sealed with the console's key, addressed to this run, echoing the
// challenge the publisher holds, from the console's address; it is acknowledged in the next frame.
TEST(Telemetry, AStopCountsOnlyAuthenticatedForThisRunFreshAndFromTheConsole) {
  StartedPublisher started;
  FakeConsole& console = started.console;
  TelemetryPublisher& pub = started.pub;
  std::atomic<int>& stops = started.stops;
  ASSERT_TRUE(console.next());
  console.link.adopt_last_source();  // answer the publisher, as rths-console does
  frame::Challenge challenge{};
  challenge[0] = 42;
  std::uint64_t sequence = 0;  // the console's frames count up
  const auto stop_frame = [&](const SecretKey& k, const frame::RunId& run, const frame::Challenge& echo) {
    return frame::seal(k, {frame::Kind::kStop, run, ++sequence, echo}, R"({"stop":"operator"})");
  };
  // Before any challenge: a stop echoing nothing (zeros) is no stop.
  console.send(stop_frame(console.keys.to_node, pub.run(), {}));
  console.send(frame::seal(console.keys.to_node, {frame::Kind::kChallenge, pub.run(), ++sequence, challenge}, ""));
  console.send(stop_frame(random_key(), pub.run(), challenge));                    // another key
  console.send(stop_frame(console.keys.to_console, pub.run(), challenge));         // the other direction's key
  console.send(stop_frame(console.keys.to_node, frame::random_run(), challenge));  // another run (a recording)
  frame::Challenge other = challenge;
  other[1] = 1;
  console.send(stop_frame(console.keys.to_node, pub.run(), other));  // a challenge it never held
  console.send(R"({"stop":"00000000000000000000000000000000"})");    // the old plain request
  // The right stop from another port of this host: not the console.
  asio::io_context io;
  UdpLink intruder(io, "127.0.0.1", 0);
  const std::string source = console.link.peer_description();
  intruder.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(source.substr(source.rfind(':') + 1))));
  const std::string right = stop_frame(console.keys.to_node, pub.run(), challenge);
  intruder.send(std::as_bytes(std::span(right.data(), right.size())));
  for (int i = 0; i < 50 && pub.refused_requests() < 6; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(stops.load(), 0);
  EXPECT_EQ(pub.refused_requests(), 6U);
  console.send(right);
  std::optional<frame::Opened> acked;
  const std::string ack = R"("stop_ack":)" + std::to_string(sequence);
  for (int i = 0; i < 200 && !acked; ++i) {
    const auto d = console.next(100ms);
    if (d && d->body.find(ack) != std::string::npos) acked = d;
  }
  EXPECT_EQ(stops.load(), 1);
  ASSERT_TRUE(acked) << "no frame acknowledged the stop";
  EXPECT_EQ(acked->header.echo, challenge);
}

// The console's frames are taken only in increasing order: an on-path attacker without the key who
// recorded this run's challenges and sends the old ones again cannot make the run echo a challenge
// the console no longer takes (the console would drop every frame of it), nor repeat a stop.
TEST(Telemetry, TheConsolesFramesAreTakenOnlyInIncreasingOrder) {
  StartedPublisher started;
  FakeConsole& console = started.console;
  TelemetryPublisher& pub = started.pub;
  std::atomic<int>& stops = started.stops;
  ASSERT_TRUE(console.next());
  console.link.adopt_last_source();
  frame::Challenge older{};
  older[0] = 1;
  frame::Challenge newer{};
  newer[0] = 2;
  const std::string old_challenge =
      frame::seal(console.keys.to_node, {frame::Kind::kChallenge, pub.run(), 1000, older}, "");
  const std::string new_challenge =
      frame::seal(console.keys.to_node, {frame::Kind::kChallenge, pub.run(), 1001, newer}, "");
  const std::string stop = frame::seal(console.keys.to_node, {frame::Kind::kStop, pub.run(), 1002, newer}, "{}");
  console.send(old_challenge);
  console.send(new_challenge);
  console.send(stop);
  for (int i = 0; i < 200 && stops.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(stops.load(), 1);
  const std::uint64_t refused = pub.refused_requests();
  for (int i = 0; i < 50; ++i) {
    console.send(old_challenge);
    console.send(new_challenge);
    console.send(stop);
  }
  for (int i = 0; i < 200 && pub.refused_requests() < refused + 150; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pub.refused_requests(), refused + 150);
  EXPECT_EQ(stops.load(), 1) << "a replayed stop was taken";
  // Every frame still echoes the newest challenge taken (after those queued before it).
  bool caught_up = false;
  for (int i = 0; i < 1000 && !caught_up; ++i) {
    const auto d = console.next();
    ASSERT_TRUE(d);
    caught_up = d->header.echo == newer;
  }
  ASSERT_TRUE(caught_up);
  for (int i = 0; i < 5; ++i) {
    const auto d = console.next();
    ASSERT_TRUE(d);
    EXPECT_EQ(d->header.echo, newer);
  }
}

// A console that is gone, or one that never reads: the publisher's sends fail or fill the socket's
// buffer, are counted, and never wait. The step is not involved at all (it only records); here the
// publisher itself keeps its rate.
TEST(Telemetry, AnAbsentOrStalledConsoleNeverHoldsThePublisher) {
  const SecretKey key = random_key();
  Recorder rec({{"t", "s"}}, 10);
  rec.record(std::array{0.0});
  std::string absent;
  {
    FakeConsole gone(key);
    absent = gone.address();
  }                          // closed: the kernel answers "port unreachable"
  FakeConsole stalled(key);  // never reads
  for (const std::string& address : {absent, stalled.address()}) {
    TelemetryPublisher pub("numerical", options(address, 1000.0, key));
    pub.add_stream("a", rec);
    pub.add_stream("b", rec);
    pub.start();
    std::this_thread::sleep_for(500ms);
    // 1000 Hz x 2 streams x 0.5 s = 1000 attempts; a publisher that blocked would have made few.
    EXPECT_GT(pub.sent() + pub.send_errors(), 500U) << address;
  }
}

TEST(Telemetry, BadAddressesRatesAndAMissingKeyAreRefused) {
  const SecretKey key = random_key();
  EXPECT_THROW(TelemetryPublisher("n", options("127.0.0.1", 50.0, key)), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", options("127.0.0.1:0", 50.0, key)), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", options("127.0.0.1:47300", 0.0, key)), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", options("127.0.0.1:47300", 0.5, key)), std::invalid_argument);
  EXPECT_THROW(console_address("127.0.0.1"), Expected);
  EXPECT_THROW(console_address("127.0.0.1:0"), Expected);
  EXPECT_THROW(console_address("no-such-host.invalid:47300"), Expected);
  EXPECT_EQ(console_address("localhost:47300"), "localhost:47300");
  EXPECT_THROW(telemetry_rate("0"), Expected);
  EXPECT_THROW(telemetry_rate("1001"), Expected);
  EXPECT_DOUBLE_EQ(telemetry_rate("1"), 1.0);
  EXPECT_THROW(TelemetryPublisher("n", options("127.0.0.1:47300", std::nan(""), key)), std::invalid_argument);
  EXPECT_THROW(TelemetryPublisher("n", TelemetryOptions{"127.0.0.1:47300", 50.0, {}, {}}), std::invalid_argument);
  TelemetryOptions no_key{"127.0.0.1:47300", 50.0, {}, {}};
  EXPECT_THROW(load_telemetry_key(no_key), ConfigError);
  TelemetryOptions missing{"127.0.0.1:47300", 50.0, "/nonexistent/console.key", {}};
  EXPECT_THROW(load_telemetry_key(missing), ConfigError);
}

// ---- The hub ---------------------------------------------------------------------------------------

using Time = console::TelemetryHub::Time;

// A node as the tests play it: its own run, sequence and the challenge it echoes.
struct TestNode {
  TestNode(const SecretKey& key, std::string name, std::string source)
      : keys(frame::derive_keys(key)), run(frame::random_run()), node(std::move(name)), from(std::move(source)) {}
  frame::Keys keys;
  frame::RunId run;
  std::string node;
  std::string from;
  std::uint64_t sequence = 0;
  frame::Challenge echo{};
  std::string state = "running";
  std::vector<console::TelemetryHub::Send>* outbox = nullptr;  // every send the hub answered with

  std::string next(const std::string& extra = {}) {
    return frame::seal(keys.to_console, {frame::Kind::kTelemetry, run, ++sequence, echo},
                       R"({"node":")" + node + R"(","state":")" + state + R"(")" + extra + "}");
  }
  // Takes the challenges among sends that are addressed to this node.
  void adopt(const std::vector<console::TelemetryHub::Send>& sends) {
    for (const auto& s : sends) {
      const auto opened = frame::open(keys.to_node, s.frame);
      if (s.to == from && opened && opened->header.run == run && opened->header.kind == frame::Kind::kChallenge) {
        echo = opened->header.echo;
      }
    }
  }
  // Sends a frame and, answered with a challenge, adopts it and sends again: taken or why not.
  std::optional<console::Dropped> report(console::TelemetryHub& hub, Time now, const std::string& extra = {}) {
    auto out = hub.accept(next(extra), from, now);
    if (outbox != nullptr) outbox->insert(outbox->end(), out.sends.begin(), out.sends.end());
    if (out.dropped == console::Dropped::kUnchallenged && !out.sends.empty()) {
      EXPECT_EQ(out.sends.front().to, from);
      adopt(out.sends);
      out = hub.accept(next(extra), from, now);
      if (outbox != nullptr) outbox->insert(outbox->end(), out.sends.begin(), out.sends.end());
    }
    adopt(out.sends);
    return out.dropped;
  }
};

TEST(ConsoleHub, TakesOnlyAuthenticFreshFramesEachOnce) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  TestNode n(key, "numerical", "127.0.0.1:4000");
  // Not a frame, the old plain JSON, another key's frame: nothing answered, each counted.
  EXPECT_EQ(hub.accept("hello", "127.0.0.1:1", t0).dropped, console::Dropped::kMalformed);
  EXPECT_EQ(hub.accept(R"({"node":"numerical","token":"t1","state":"running"})", "127.0.0.1:1", t0).dropped,
            console::Dropped::kMalformed);
  TestNode forger(random_key(), "numerical", "127.0.0.1:1");
  const auto forged = hub.accept(forger.next(), forger.from, t0);
  EXPECT_EQ(forged.dropped, console::Dropped::kUnauthenticated);
  EXPECT_TRUE(forged.sends.empty());
  // The first authentic frame echoes no challenge: dropped and answered with one.
  const std::string first = n.next();
  const auto unchallenged = hub.accept(first, n.from, t0);
  EXPECT_EQ(unchallenged.dropped, console::Dropped::kUnchallenged);
  ASSERT_EQ(unchallenged.sends.size(), 1U);
  n.echo = frame::open(n.keys.to_node, unchallenged.sends[0].frame)->header.echo;
  const std::string second = n.next();
  const auto taken = hub.accept(second, n.from, t0);
  EXPECT_FALSE(taken.dropped);
  EXPECT_NE(taken.body.find(R"("node":"numerical")"), std::string::npos);
  // The same frame again, and an older one of this run: replays.
  EXPECT_EQ(hub.accept(second, n.from, t0).dropped, console::Dropped::kReplayed);
  const frame::Header older{frame::Kind::kTelemetry, n.run, 1, n.echo};
  EXPECT_EQ(hub.accept(frame::seal(n.keys.to_console, older, R"({"node":"numerical","state":"stopped"})"), n.from, t0)
                .dropped,
            console::Dropped::kReplayed);
  // Authentic but not a node's body: no newline may reach the page's event stream.
  EXPECT_EQ(hub.accept(frame::seal(n.keys.to_console, {frame::Kind::kTelemetry, n.run, 100, n.echo},
                                   "{\"node\":\"numerical\",\n\"state\":\"running\"}"),
                       n.from, t0)
                .dropped,
            console::Dropped::kBadBody);
  EXPECT_EQ(hub.accepted(), 1U);
  EXPECT_EQ(hub.dropped(console::Dropped::kMalformed), 2U);
  EXPECT_EQ(hub.dropped(console::Dropped::kUnauthenticated), 1U);
  EXPECT_EQ(hub.dropped(console::Dropped::kUnchallenged), 1U);
  EXPECT_EQ(hub.dropped(console::Dropped::kReplayed), 2U);
  EXPECT_EQ(hub.dropped(console::Dropped::kBadBody), 1U);
  ASSERT_EQ(hub.nodes().size(), 1U);
  EXPECT_EQ(hub.nodes().front().source, n.from);
  EXPECT_EQ(hub.nodes().front().datagrams, 1U);
}

// A frame recorded in an earlier test is refused: by a console started since (its challenge is
// new), by the same console after the challenge was renewed twice, and, while its run is still
// remembered, after the run left the table.
TEST(ConsoleHub, AFrameOfAnEarlierTestIsRefused) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub first(key, {}, t0);
  TestNode old(key, "numerical", "127.0.0.1:4000");
  ASSERT_FALSE(old.report(first, t0));
  const std::string recorded = old.next();
  EXPECT_FALSE(first.accept(recorded, old.from, t0).dropped);

  console::TelemetryHub restarted(key, {}, t0);
  EXPECT_EQ(restarted.accept(recorded, "127.0.0.1:6666", t0).dropped, console::Dropped::kUnchallenged);
  EXPECT_EQ(restarted.accepted(), 0U);

  // The same console: the old test stops, a new one starts, and the old run's frames come again.
  old.state = "stopped";
  ASSERT_FALSE(old.report(first, t0));
  const std::string stopped_frame = old.next();
  TestNode next_test(key, "numerical", "127.0.0.1:5000");
  ASSERT_FALSE(next_test.report(first, t0));
  ASSERT_EQ(first.nodes().size(), 1U);  // the finished test's node left
  EXPECT_EQ(first.nodes().front().source, next_test.from);
  EXPECT_EQ(first.accept(recorded, old.from, t0).dropped, console::Dropped::kReplayed);
  EXPECT_FALSE(first.accept(stopped_frame, old.from, t0).dropped)
      << "a frame never delivered before is this run's newest: taken once";
  EXPECT_EQ(first.accept(stopped_frame, old.from, t0).dropped, console::Dropped::kReplayed);

  // Two challenge periods on, whatever was recorded echoes a challenge the console no longer takes.
  const Time later = t0 + 2 * console::HubLimits{}.challenge_every;
  first.tick(t0 + console::HubLimits{}.challenge_every);
  first.tick(later);
  TestNode fresh_old = old;
  EXPECT_EQ(first.accept(fresh_old.next(), old.from, later).dropped, console::Dropped::kUnchallenged);
}

// A retired run is forgotten only once the challenge was renewed twice since it left, so that a
// recorded frame of it cannot come back. Runs leaving faster than that force renewals, at most one a
// second, and every live run gets its new challenge with the renewal: a genuine node is not dropped.
TEST(ConsoleHub, ARunIsForgottenOnlyOnceItsFramesAreStaleAndRenewalsComeAtMostOnceASecond) {
  const SecretKey key = random_key();
  const Time t0{};
  console::HubLimits limits;
  limits.retired = 8;
  limits.new_runs_per_s = 1000.0;  // far faster than `retired` can cover: renewals must be forced
  limits.new_runs_burst = 10;
  console::TelemetryHub hub(key, limits, t0);
  TestNode genuine(key, "numerical", "127.0.0.1:4000");
  ASSERT_FALSE(genuine.report(hub, t0));
  TestNode first(key, "site a", "127.0.0.1:4001");
  ASSERT_FALSE(first.report(hub, t0));
  const std::string recorded = first.next();
  ASSERT_FALSE(hub.accept(recorded, first.from, t0).dropped);
  std::uint64_t genuine_dropped = 0;
  std::vector<console::TelemetryHub::Send> outbox;
  for (int ms = 1; ms <= 5000; ++ms) {
    const Time now = t0 + std::chrono::milliseconds(ms);
    TestNode other(key, "site " + std::to_string(ms), "127.0.0.1:" + std::to_string(5000 + ms % 1000));
    other.outbox = &outbox;
    other.report(hub, now);
    genuine.adopt(outbox);  // the new challenges a forced renewal sent to the live runs
    genuine.adopt(hub.tick(now));
    outbox.clear();
    if (ms % 20 == 0) genuine_dropped += hub.accept(genuine.next(), genuine.from, now).dropped.has_value() ? 1 : 0;
  }
  EXPECT_EQ(genuine_dropped, 0U) << "the genuine node was dropped while runs churned";
  EXPECT_GE(hub.forced_renewals(), 4U);
  EXPECT_LE(hub.forced_renewals(), 6U) << "more than one forced renewal a second";
  EXPECT_LE(hub.retired_runs(), 8U + 10U + 2U * 1000U);
  const auto again = hub.accept(recorded, first.from, t0 + 5s);
  EXPECT_TRUE(again.dropped) << "a forgotten run's recorded frame was taken";
}

// New runs are admitted at most new_runs_per_s (and new_runs_burst at once): a key holder churning
// runs cannot empty the table of the genuine nodes, nor make the hub forget runs while their frames
// could still be fresh (with the defaults, 4096 runs remembered cover 128 s of admissions).
TEST(ConsoleHub, ChurnedRunsAreAdmittedAtTheirRateAndTheGenuineNodesStayTaken) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  TestNode genuine(key, "numerical", "127.0.0.1:4000");
  TestNode site(key, "site lab", "127.0.0.1:4001");
  ASSERT_FALSE(genuine.report(hub, t0));
  ASSERT_FALSE(site.report(hub, t0));
  std::uint64_t genuine_dropped = 0;
  for (int ms = 1; ms <= 60000; ++ms) {
    const Time now = t0 + std::chrono::milliseconds(ms);
    TestNode churn(key, "numerical", "127.0.0.1:6000");  // a new run every millisecond
    churn.report(hub, now);
    const auto sends = hub.tick(now);
    genuine.adopt(sends);
    site.adopt(sends);
    if (ms % 20 == 0) {
      genuine_dropped += hub.accept(genuine.next(), genuine.from, now).dropped.has_value() ? 1 : 0;
      genuine_dropped += hub.accept(site.next(), site.from, now).dropped.has_value() ? 1 : 0;
    }
  }
  EXPECT_EQ(genuine_dropped, 0U);
  const console::HubLimits limits;
  EXPECT_LE(hub.dropped(console::Dropped::kNewRunLimit), 60000U);
  EXPECT_GE(hub.dropped(console::Dropped::kNewRunLimit), 60000U - limits.new_runs_burst - std::size_t{32} * 60 - 1U);
  EXPECT_EQ(hub.forced_renewals(), 0U);
  EXPECT_EQ(hub.renewals(), 6U) << "one renewal per challenge period";
  std::vector<console::TelemetryHub::StopTarget> targets;
  hub.request_stop(t0 + 60s, targets);
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.back().source, genuine.from);
}

// A run is held to the address of its first taken frame. A key holder who reads the genuine
// numerical node's run (GET /api/status) and sends frames of it from its own address with a huge
// sequence number is dropped (foreign) and answered with nothing; so is a copy of each genuine frame
// sent ahead of it from another address (an on-path attacker without the key). The genuine frames
// are still taken, and Stop goes to the genuine node.
TEST(ConsoleHub, ARunIsHeldToTheAddressOfItsFirstTakenFrame) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  TestNode genuine(key, "numerical", "127.0.0.1:4000");
  // On the path from the start: a copy of the genuine node's frame, from another address, ahead of
  // it. The challenge is made for a run and its address: the copy does not verify, the original does.
  const std::string hello = genuine.next();
  EXPECT_EQ(hub.accept(hello, "127.0.0.1:6666", t0).dropped, console::Dropped::kUnchallenged);
  const auto challenged = hub.accept(hello, genuine.from, t0);
  EXPECT_EQ(challenged.dropped, console::Dropped::kUnchallenged);
  ASSERT_EQ(challenged.sends.size(), 1U) << "the genuine node's challenge was held back by the copy's";
  genuine.adopt(challenged.sends);
  const std::string first = genuine.next();
  EXPECT_EQ(hub.accept(first, "127.0.0.1:6666", t0).dropped, console::Dropped::kUnchallenged);
  EXPECT_FALSE(hub.accept(first, genuine.from, t0).dropped);
  // Copies of later frames, ahead of each: foreign.
  for (int i = 0; i < 10; ++i) {
    const std::string d = genuine.next();
    const auto copy = hub.accept(d, "127.0.0.1:6666", t0);
    EXPECT_EQ(copy.dropped, console::Dropped::kForeign);
    EXPECT_TRUE(copy.sends.empty());
    EXPECT_FALSE(hub.accept(d, genuine.from, t0).dropped);
  }
  // The insider: the run's id, the key, its own address, sequence 2^62.
  TestNode insider = genuine;
  insider.from = "127.0.0.1:7777";
  insider.sequence = std::uint64_t{1} << 62U;
  for (int i = 0; i < 3; ++i) {
    const auto out = hub.accept(insider.next(R"(,"stop_ack":1)"), insider.from, t0);
    EXPECT_EQ(out.dropped, console::Dropped::kForeign);
    EXPECT_TRUE(out.sends.empty()) << "a foreign address was answered with the run's challenge";
  }
  EXPECT_FALSE(genuine.report(hub, t0 + 20ms));
  EXPECT_EQ(hub.dropped(console::Dropped::kForeign), 13U);
  ASSERT_EQ(hub.nodes().size(), 1U);
  EXPECT_EQ(hub.nodes().front().source, genuine.from);
  std::vector<console::TelemetryHub::StopTarget> targets;
  for (const auto& s : hub.request_stop(t0 + 20ms, targets)) EXPECT_EQ(s.to, genuine.from);
  ASSERT_EQ(targets.size(), 1U);
  EXPECT_EQ(targets[0].source, genuine.from);
  EXPECT_FALSE(hub.stop_acknowledged(targets[0].run));
}

// A run's sequence number rises at most 2 x 8000 a second past its last taken one, plus 256: a key
// holder who could send from the run's own address still cannot jump it out of reach (2^62) and lock
// out the genuine frames.
TEST(ConsoleHub, ASequenceBeyondWhatTheRunCanHaveSentIsRefused) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  TestNode n(key, "numerical", "127.0.0.1:4000");
  ASSERT_FALSE(n.report(hub, t0));
  TestNode jump = n;
  jump.sequence = n.sequence + console::kSequenceSlack;  // next() adds 1: one past the bound
  EXPECT_EQ(hub.accept(jump.next(), n.from, t0).dropped, console::Dropped::kTooFarAhead);
  jump.sequence = std::uint64_t{1} << 62U;
  EXPECT_EQ(hub.accept(jump.next(), n.from, t0 + 1s).dropped, console::Dropped::kTooFarAhead);
  n.sequence += console::kSequenceSlack - 1;  // frames lost on the way: within the bound
  EXPECT_FALSE(n.report(hub, t0));
  n.sequence += 8000;  // half a second later, 8,000 more: within 256 + 2 x 8000 x 0.5
  EXPECT_FALSE(n.report(hub, t0 + 500ms));
  EXPECT_EQ(hub.dropped(console::Dropped::kTooFarAhead), 2U);
}

// What the page is sent is what the hub read: one strict JSON object that fits one datagram (1312
// bytes, what a publisher sends at most). A duplicate key (the hub would read the first, the page's
// JSON.parse the last), NaN, Infinity or 1e999 (which JSON.parse turns into Infinity), invalid UTF-8
// or a longer body is a bad body.
TEST(ConsoleHub, OnlyStrictJsonBodiesThatFitOneDatagramAreTaken) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  TestNode n(key, "numerical", "127.0.0.1:4000");
  ASSERT_FALSE(n.report(hub, t0));
  const auto sealed = [&](const std::string& body) {
    return frame::seal(n.keys.to_console, {frame::Kind::kTelemetry, n.run, ++n.sequence, n.echo}, body);
  };
  const std::string pad(
      TelemetryPublisher::kMaxBodyBytes - std::string(R"({"node":"numerical","state":"running","p":""})").size(), 'x');
  EXPECT_FALSE(hub.accept(sealed(R"({"node":"numerical","state":"running","p":")" + pad + R"("})"), n.from, t0).dropped)
      << "a body of exactly 1312 bytes";
  for (const std::string& bad : {
           R"({"node":"numerical","state":"running","p":")" + pad + R"(x"})",  // 1313 bytes
           std::string(R"({"node":"numerical","node":"site x","state":"running"})"),
           std::string(R"({"node":"numerical","state":"running","\u006eode":"site x"})"),
           std::string(R"({"node":"numerical","state":"running","figures":{"a":1,"a":2}})"),
           std::string(R"({"node":"numerical","state":"running","figures":{"lateness_us":NaN}})"),
           std::string(R"({"node":"numerical","state":"running","figures":{"lateness_us":Infinity}})"),
           std::string(R"({"node":"numerical","state":"running","values":[1e999]})"),
           std::string(R"({"node":"numerical","state":"running","values":[01]})"),
           std::string(R"({"node":"numerical","state":"running"} )") + "{}",
           std::string("{\"node\":\"numerical\",\"state\":\"running\",\"reason\":\"\xff\"}"),
           std::string("{\"node\":\"numerical\",\"state\":\"running\",\"reason\":\"\xed\xa0\x80\"}"),
       }) {
    EXPECT_EQ(hub.accept(sealed(bad), n.from, t0).dropped, console::Dropped::kBadBody) << bad.substr(0, 120);
  }
  for (const std::string& good : {
           std::string(
               R"({"node":"numerical","state":"running","reason":"\u00e9 \ud83d\ude00 é","values":[-0.5e-3,0,null]})"),
           std::string(R"({"node":"numerical","state":"running","figures":{"a":1,"A":2,"b":{"a":1}}})"),
       }) {
    EXPECT_FALSE(hub.accept(sealed(good), n.from, t0).dropped) << good;
  }
  EXPECT_EQ(hub.dropped(console::Dropped::kBadBody), 11U);
  EXPECT_FALSE(console::strict_json_object(R"({"a":"\u0041","\u0061":1})"));
  EXPECT_TRUE(console::strict_json_object(R"({"a":"\u0041","A":1})"));
}

// A numerical node that went silent (killed, its host gone) may still be running: the stop goes to
// its run's address for a minute after it was last heard, saying how long ago that was.
TEST(ConsoleHub, AStopReachesASilentNumericalRunForAMinute) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  TestNode n(key, "numerical", "127.0.0.1:4000");
  ASSERT_FALSE(n.report(hub, t0));
  std::vector<console::TelemetryHub::StopTarget> targets;
  EXPECT_FALSE(hub.request_stop(t0 + 10s, targets).empty());
  ASSERT_EQ(targets.size(), 1U);
  EXPECT_DOUBLE_EQ(targets[0].heard_s_ago, 10.0);
  targets.clear();
  EXPECT_TRUE(hub.request_stop(t0 + 61s, targets).empty());
  EXPECT_TRUE(targets.empty());
}

// Every name a forger sends, and every run a key holder invents, leaves the table bounded.
TEST(ConsoleHub, TheNodeTableIsBounded) {
  const SecretKey key = random_key();
  const Time t0{};
  console::HubLimits limits;
  limits.max_nodes = 64;
  limits.retired = 256;
  console::TelemetryHub hub(key, limits, t0);
  for (int i = 0; i < 60000; ++i) {
    hub.accept(R"({"node":"forged )" + std::to_string(i) + R"(","token":"t","state":"running"})", "127.0.0.1:1", t0);
  }
  EXPECT_TRUE(hub.nodes().empty());
  for (int i = 0; i < 2000; ++i) {  // 20 new runs a second: within the rate the hub admits them at
    TestNode n(key, "site " + std::to_string(i), "127.0.0.1:2000");
    n.report(hub, t0 + std::chrono::milliseconds(50 * i));
  }
  EXPECT_EQ(hub.nodes().size(), 64U);
  EXPECT_LE(hub.retired_runs(), 256U);
  EXPECT_EQ(hub.nodes().back().node, "site 1999");  // the newest stay, the oldest went
}

// Where the stop goes: to the numerical node whose telemetry authenticated, at the address it came
// from, sealed for its run; nowhere when none is running. Its acknowledgement is recorded.
TEST(ConsoleHub, StopGoesOnlyToTheAuthenticatedNumericalNodeAndIsAcknowledged) {
  const SecretKey key = random_key();
  const Time t0{};
  console::TelemetryHub hub(key, {}, t0);
  std::vector<console::TelemetryHub::StopTarget> targets;
  EXPECT_TRUE(hub.request_stop(t0, targets).empty());
  TestNode genuine(key, "numerical", "127.0.0.1:4000");
  TestNode site(key, "site lab", "127.0.0.1:4001");
  TestNode forger(random_key(), "numerical", "127.0.0.1:6666");
  ASSERT_FALSE(genuine.report(hub, t0));
  ASSERT_FALSE(site.report(hub, t0));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(forger.report(hub, t0));
    hub.accept(R"({"node":"numerical","token":"t","state":"running"})", forger.from, t0);
  }
  const auto sends = hub.request_stop(t0, targets);
  ASSERT_EQ(targets.size(), 1U);
  EXPECT_EQ(targets[0].source, genuine.from);
  ASSERT_FALSE(sends.empty());
  for (const auto& s : sends) {
    EXPECT_EQ(s.to, genuine.from);
    const auto opened = frame::open(genuine.keys.to_node, s.frame);
    ASSERT_TRUE(opened);
    EXPECT_EQ(opened->header.kind, frame::Kind::kStop);
    EXPECT_EQ(opened->header.run, genuine.run);
    EXPECT_EQ(opened->header.echo, genuine.echo);
  }
  const std::uint64_t sequence = frame::open(genuine.keys.to_node, sends[0].frame)->header.sequence;
  EXPECT_FALSE(hub.stop_acknowledged(targets[0].run));
  EXPECT_FALSE(hub.tick(t0 + 100ms).empty()) << "an unacknowledged stop is sent again";
  ASSERT_FALSE(genuine.report(hub, t0, R"(,"stop_ack":)" + std::to_string(sequence)));
  EXPECT_TRUE(hub.stop_acknowledged(targets[0].run));
  EXPECT_TRUE(hub.tick(t0 + 200ms).empty());
}

TEST(ConsoleHub, JsonFieldsAreReadAtTheTopLevelOnly) {
  const std::string d =
      R"({"figures":{"node":"inner"},"reason":"a \"quoted\" \u00e9 reason","node":"site <b>x</b>","n":-1.5e3})";
  EXPECT_EQ(console::json_string_field(d, "node"), "site <b>x</b>");
  EXPECT_EQ(console::json_string_field(d, "reason"), "a \"quoted\" \xc3\xa9 reason");
  EXPECT_EQ(console::json_number_field(d, "n"), -1500.0);
  EXPECT_FALSE(console::json_string_field(d, "state"));
  EXPECT_FALSE(console::json_string_field(R"({"node":"unterminated)", "node"));
  EXPECT_FALSE(console::json_string_field(std::string(100, '[') + "1", "node"));
}

}  // namespace
}  // namespace rths::test_telemetry

namespace rths::test_telemetry {
namespace {

// The relay and the target emulator publish as the nodes do: their first frame, named, with their
// figures or their tick rows, sealed with the console's key.
class TelemetryNodes : public test::RunFolderTest {
 protected:
  // The first body of `node` that `program args --console ... --console-key ...` sends within 10 s;
  // the program is then stopped as a user would (SIGINT) and must end with 0.
  std::string first_datagram(const std::string& program, std::vector<std::string> args, const std::string& node) {
    const auto key_file = dir_ / "console.key";
    if (!std::filesystem::exists(key_file)) write_key_file(key_file);
    FakeConsole console(load_key_file(key_file));
    args.insert(args.end(), {"--console", console.address(), "--console-key", key_file.string(), "--out",
                             (dir_ / program).string()});
    test::Process p(program, args, dir_ / program);
    std::string found;
    for (int i = 0; i < 100 && found.empty(); ++i) {
      const auto d = console.next(std::chrono::milliseconds(100));
      if (d && console::json_string_field(d->body, "node") == node) found = d->body;
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

// A command line of each node that takes --console, short of its console options; rths-target last.
struct NodeCommand {
  std::string program;
  std::vector<std::string> args;
};
std::vector<NodeCommand> nodes_taking_console() {
  const std::string config = test::example("seed002/spring.textproto").string();
  return {
      {"rths-numerical", {"loopback", config}},
      {"rths-physical", {"serve", config, "--site", "spring", "--listen", "127.0.0.1:0"}},
      {"rths-relay", {config, "--site", "spring", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"}},
      {"rths-target",
       {test::example("hardware/spring_bridge.textproto").string(), "--site", "spring", "--listen", "127.0.0.1:0"}},
  };
}

// Every node that takes --console refuses it without --console-key, and a key file others can
// read, with one line and exit code 2, before anything runs.
TEST_F(TelemetryNodes, ConsoleWithoutItsKeyIsABadCommandLine) {
  const auto open_key = dir_ / "open.key";
  write_key_file(open_key);
  std::filesystem::permissions(open_key, std::filesystem::perms::group_read, std::filesystem::perm_options::add);
  const std::vector<NodeCommand> nodes = nodes_taking_console();
  int i = 0;
  for (const auto& n : nodes) {
    for (const bool with_open_key : {false, true}) {
      std::vector<std::string> args = n.args;
      args.insert(args.end(), {"--console", "127.0.0.1:47399", "--out", (dir_ / ("out" + std::to_string(i))).string()});
      if (with_open_key) args.insert(args.end(), {"--console-key", open_key.string()});
      test::Process p(n.program, args, dir_ / ("refused" + std::to_string(i++)));
      EXPECT_EQ(p.wait(std::chrono::seconds(20)), kExitBadInput) << n.program << ": " << p.err();
      EXPECT_NE(p.err().find(with_open_key ? "--console-key: key file" : "--console: needs --console-key FILE"),
                std::string::npos)
          << n.program << ": " << p.err();
    }
  }
}

// A bad --console or --telemetry-hz is a bad command line at every node that takes them, found when
// the command line is read (exit 2, one line naming the option), before a site listens or a test
// starts: not at the end of a handshake, when the run would end with exit 1 and its peer with 4.
TEST_F(TelemetryNodes, ABadConsoleAddressOrRateIsRefusedWhenTheCommandLineIsRead) {
  const auto key_file = dir_ / "console.key";
  write_key_file(key_file);
  const std::vector<NodeCommand> nodes = nodes_taking_console();
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--console", "127.0.0.1"}, "--console: expected HOST:PORT"},
      {{"--console", "127.0.0.1:0"}, "--console: expected HOST:PORT"},
      {{"--console", "no-such-host.invalid:47300"}, "--console: expected HOST:PORT of rths-console's telemetry"},
      {{"--console", "127.0.0.1:47399", "--telemetry-hz", "0"},
       "--telemetry-hz: expected a rate in Hz from 1 to 1000, got '0'"},
      {{"--console", "127.0.0.1:47399", "--telemetry-hz", "1e9"},
       "--telemetry-hz: expected a rate in Hz from 1 to 1000"},
  };
  int i = 0;
  for (const auto& n : nodes) {
    for (const auto& c : cases) {
      std::vector<std::string> args = n.args;
      args.insert(args.end(), c.args.begin(), c.args.end());
      args.insert(args.end(),
                  {"--console-key", key_file.string(), "--out", (dir_ / ("out" + std::to_string(i))).string()});
      test::Process p(n.program, args, dir_ / ("bad" + std::to_string(i++)));
      EXPECT_EQ(p.wait(std::chrono::seconds(20)), kExitBadInput)
          << n.program << " " << c.args.back() << ": " << p.err();
      const std::string err = p.err();
      EXPECT_NE(err.find(c.says), std::string::npos) << n.program << ": " << err;
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << n.program << ": " << err;
      EXPECT_EQ(p.out(), "") << n.program << " started before refusing its command line";
    }
  }
}

}  // namespace
}  // namespace rths::test_telemetry
