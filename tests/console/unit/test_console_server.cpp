// rths-console as a browser and the nodes meet it: the token and the Host header it demands, the
// headers that keep telemetry data on the page, what it refuses to start with, that its Stop answers
// while streams and half-sent requests hold connections, and that a flood of forged telemetry
// decides nothing about where Stop goes (realtime/test_console_server.cpp). (The page itself, live
// and in replay, is console/realtime/serial/console_e2e.mjs.)
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sodium.h>
#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include "common/core/address.hpp"
#include "common/core/exit_codes.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/records/results.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/udp_link.hpp"
#include "console/hub/hub.hpp"
#include "support/console_server.hpp"
#include "support/process.hpp"

namespace rths::test_console_server {
namespace {

using namespace std::chrono_literals;

const std::string kToken = "0123456789abcdef0123";

using test::ConsoleServer;
using test::http;
using test::kStop;
using test::Response;

int http_status(const std::string& address, const std::string& target, const std::string& headers = "",
                const std::string& method = "GET") {
  return http(address, target, headers, method).status;
}

// With --token, everything that reads or acts on the test (/api/*, and /run/* in a replay) needs the
// token; the page's own files do not (index.html loads them by plain paths: the page must run).
TEST_F(ConsoleServer, WithATokenTheTestsDataAndStopNeedItThePageFilesDoNot) {
  auto console = start_console({"--token", kToken});
  for (const char* file : {"/", "/index.html", "/charts.js", "/console.js", "/console.css", "/uplot/uPlot.iife.min.js",
                           "/uplot/uPlot.min.css"}) {
    EXPECT_EQ(http_status(page_, file), 200) << file;
  }
  for (const char* api : {"/api/mode", "/api/status", "/api/events", "/api/nothing", "/run/summary.json"}) {
    EXPECT_EQ(http_status(page_, api), 403) << api;
  }
  EXPECT_EQ(http_status(page_, "/api/stop", kStop, "POST"), 403);
  EXPECT_EQ(http_status(page_, "/api/mode?token=" + kToken.substr(1)), 403);
  EXPECT_EQ(http_status(page_, "/api/mode?token=" + kToken + "x"), 403);
  EXPECT_EQ(http_status(page_, "/api/mode?token=" + kToken), 200);
  EXPECT_EQ(http_status(page_, "/api/status", "X-Rths-Token: " + kToken + "\r\n"), 200);
  // The stop request is a POST with its own header and no other origin; a GET, a POST a cross-site
  // form could send, or one from another origin stops nothing, even with the token.
  EXPECT_EQ(http_status(page_, "/api/stop?token=" + kToken), 405);
  EXPECT_EQ(http_status(page_, "/api/stop?token=" + kToken, "Content-Length: 0\r\n", "POST"), 403);
  EXPECT_EQ(http_status(page_, "/api/stop?token=" + kToken, kStop + "Origin: http://evil.example\r\n", "POST"), 403);
  const Response stop = http(page_, "/api/stop?token=" + kToken, kStop + "Origin: http://" + page_ + "\r\n", "POST");
  EXPECT_EQ(stop.status, 200);
  EXPECT_EQ(stop.body, R"({"sent_to":[],"acknowledged":false})");
  stop_console(*console);
}

// Every answer forbids inline script and other origins' script; the page's own files are the only
// script it runs (the page then treats telemetry as text: console_e2e.mjs).
TEST_F(ConsoleServer, ALoopbackPageIsServedWithAPolicyThatForbidsInlineScript) {
  auto console = start_console();
  const Response page = http(page_, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_TRUE(page.has_header("Content-Security-Policy: default-src 'none'; script-src 'self';")) << page.head;
  EXPECT_FALSE(page.has_header("unsafe-inline")) << page.head;
  EXPECT_TRUE(page.has_header("X-Content-Type-Options: nosniff")) << page.head;
  EXPECT_NE(page.body.find("<script src=\"console.js\">"), std::string::npos);
  EXPECT_EQ(page.body.find("<script>"), std::string::npos) << "an inline script the policy would block";
  EXPECT_EQ(http_status(page_, "/api/mode"), 200);
  EXPECT_EQ(http_status(page_, "/uplot/uPlot.iife.min.js"), 200);
  EXPECT_EQ(http_status(page_, "/../CMakeLists.txt"), 404);
  EXPECT_EQ(http_status(page_, "/run/numerical.csv"), 404);  // not a replay
  EXPECT_EQ(http_status(page_, "/api/mode", "", "DELETE"), 405);
  stop_console(*console);
}

// A page of another site whose name was rebound to 127.0.0.1 sends its own name as Host: refused,
// Stop included. IP literals and localhost are this console; other names only with --allow-host.
TEST_F(ConsoleServer, TheHostHeaderMustNameThisConsole) {
  auto console = start_console({"--allow-host", "Console.Lab"});
  const std::string port = page_.substr(page_.rfind(':') + 1);
  EXPECT_EQ(http(page_, "/api/mode", "", "GET", 10s, "evil.example:" + port).status, 403);
  EXPECT_EQ(http(page_, "/api/stop", kStop, "POST", 10s, "evil.example:" + port).status, 403);
  EXPECT_EQ(http(page_, "/api/mode", "", "GET", 10s, "127.0.0.1.evil.example:" + port).status, 403);
  EXPECT_EQ(http(page_, "/api/mode", "", "GET", 10s, "localhost:" + port).status, 200);
  EXPECT_EQ(http(page_, "/api/mode", "", "GET", 10s, "[::1]:" + port).status, 200);
  EXPECT_EQ(http(page_, "/api/mode", "", "GET", 10s, "console.lab:" + port).status, 200);
  EXPECT_EQ(http(page_, "/api/mode", "", "GET", 10s, "127.0.0.1").status, 200);
  stop_console(*console);
}

TEST_F(ConsoleServer, ARefusedStartIsExitCodeTwoWithOneLineNamingTheOption) {
  const auto open_key = dir_ / "open.key";
  write_key_file(open_key);
  std::filesystem::permissions(open_key, std::filesystem::perms::others_read, std::filesystem::perm_options::add);
  const std::vector<std::string> key{"--key", key_.string()};
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--listen", "0.0.0.0:0", "--key", key_.string()},
       "--listen 0.0.0.0:0: a console other machines can reach needs --token"},
      {{"--token", "short"}, "--token: expected a secret of at least 16 characters"},
      {{"--replay", (dir_ / "nothing").string()}, "not a run folder"},
      {{"--web", dir_.string(), "--key", key_.string()}, "no index.html there"},
      {{}, "--key: missing"},
      {{"--key", (dir_ / "none.key").string()}, "--key: key file"},
      {{"--key", open_key.string()}, "lets group or others read or write it"},
      {{"--key", key_.string(), "--request-timeout-s", "0"}, "--request-timeout-s"},
      {{"--key", key_.string(), "--max-streams", "0"}, "--max-streams"},
      {{"--key", key_.string(), "--bogus"}, "--bogus"},
      {{"--key", key_.string(), "--key", key_.string()}, "--key: expected it once (it was given twice)"},
      {{"--key", key_.string(), "--max-streams", "5", "--max-streams", "6"}, "--max-streams: expected it once"},
      {{"--key", key_.string(), "--allow-host", ""}, "--allow-host: expected a host name"},
      {{"--key", key_.string(), "--allow-host", "a b"}, "--allow-host: expected a host name"},
      {{"--key", key_.string(), "--listen", "127.0.0.1"}, "--listen: expected HOST:PORT"},
      {{"--key", key_.string(), "--telemetry", "no-such-host.invalid:0"},
       "--telemetry: expected an address of this host"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const bool own_address =
        std::count(c.args.begin(), c.args.end(), "--listen") + std::count(c.args.begin(), c.args.end(), "--telemetry") >
        0;
    std::vector<std::string> args;
    if (!own_address) args = {"--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    test::Process console("rths-console", args, dir_ / ("refused" + std::to_string(i++)));
    EXPECT_EQ(console.wait(10s), kExitBadInput) << c.says;
    const std::string err = console.err();
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

// A half-sent request (slowloris) is closed after --request-timeout-s, holding nothing longer.
TEST_F(ConsoleServer, AHalfSentRequestIsClosedAfterTheRequestTimeout) {
  auto console = start_console({"--request-timeout-s", "0.5"});
  const HostPort at = parse_host_port(page_);
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address(at.host), at.port});
  asio::write(socket, asio::buffer(std::string("GET /api/mode HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")));
  const auto began = std::chrono::steady_clock::now();
  std::array<char, 256> buffer{};
  asio::error_code ec;
  bool closed = false;
  socket.async_read_some(asio::buffer(buffer), [&](const asio::error_code& e, std::size_t) {
    ec = e;
    closed = true;
  });
  io.run_for(10s);
  EXPECT_TRUE(closed) << "the console kept a half-sent request open for 10 s";
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), 0.4);
  stop_console(*console);
}

// Event streams are capped per client (a new one closes the client's oldest), and a new connection
// closes the oldest half-sent request when the table is full: with 100 streams asked for and 400
// half-sent requests held, Stop and the page still answer. On a machine that keeps time, within 1 s.
TEST_F(ConsoleServer, StopAnswersWhileStreamsAndHalfSentRequestsAreHeld) {
  auto console = start_console({"--request-timeout-s", "30"});
  const HostPort at = parse_host_port(page_);
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> held;
  int streams = 0;
  int refused_streams = 0;
  for (int i = 0; i < 100; ++i) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->connect({asio::ip::make_address(at.host), at.port});
    asio::write(*s, asio::buffer("GET /api/events HTTP/1.1\r\nHost: " + page_ + "\r\n\r\n"));
    std::array<char, 12> status{};
    asio::read(*s, asio::buffer(status));
    const std::string line(status.data(), status.size());
    (line == "HTTP/1.1 200" ? streams : refused_streams) += 1;
    held.push_back(std::move(s));
  }
  EXPECT_EQ(streams, 100) << "a new stream closes its client's oldest";
  EXPECT_EQ(refused_streams, 0);
  for (int i = 0; i < 400; ++i) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->connect({asio::ip::make_address(at.host), at.port});
    asio::write(*s, asio::buffer(std::string("POST /api/stop HTTP/1.1\r\nHost: 127.0.0.1\r\n")));
    held.push_back(std::move(s));
  }
  const Response stop = http(page_, "/api/stop", kStop, "POST", 10s);
  const Response page = http(page_, "/", "", "GET", 10s);
  EXPECT_EQ(stop.status, 200) << "Stop did not answer with the connections held";
  EXPECT_EQ(page.status, 200);
  if (stop.seconds > 1.0) {
    GTEST_SKIP() << "this machine cannot keep time: Stop answered in " << stop.seconds << " s";
  }
  const Response status = http(page_, "/api/status");
  EXPECT_NE(status.body.find(R"("streams":4)"), std::string::npos) << status.body;
  stop_console(*console);
}

// The operator's page always gets its event stream: another local user holding streams (from
// 127.0.0.1 or from any other 127.x.y.z, which count as one client) or all --max-streams of them
// cannot lock it out; the oldest stream is closed for the new one.
TEST_F(ConsoleServer, TheNewestEventStreamAlwaysGetsInClosingTheOldest) {
  asio::io_context io;
  const auto open_stream = [&](const std::string& from) {
    const HostPort at = parse_host_port(page_);
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->open(asio::ip::tcp::v4());
    s->bind({asio::ip::make_address(from), 0});
    s->connect({asio::ip::make_address(at.host), at.port});
    asio::write(*s, asio::buffer("GET /api/events HTTP/1.1\r\nHost: " + page_ + "\r\n\r\n"));
    std::array<char, 12> status{};
    asio::read(*s, asio::buffer(status));
    EXPECT_EQ(std::string(status.data(), status.size()), "HTTP/1.1 200") << from;
    return s;
  };
  // Closed by the console: reading ends (after the events it had sent).
  const auto closed = [&](asio::ip::tcp::socket& s) {
    std::array<char, 65536> buffer{};
    asio::error_code ec;
    s.non_blocking(true);
    for (int i = 0; i < 100; ++i) {
      s.read_some(asio::buffer(buffer), ec);
      if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
      if (ec == asio::error::would_block) std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  {
    // Per client (4): every loopback address is one client.
    auto console = start_console();
    std::vector<std::unique_ptr<asio::ip::tcp::socket>> held;
    held.reserve(4);
    for (int i = 0; i < 4; ++i) held.push_back(open_stream("127.0.9." + std::to_string(2 + i)));
    auto operators = open_stream("127.0.0.1");
    EXPECT_TRUE(closed(*held[0])) << "the oldest loopback stream stayed open";
    EXPECT_FALSE(closed(*held[3]));
    EXPECT_FALSE(closed(*operators));
    const Response status = http(page_, "/api/status");
    EXPECT_NE(status.body.find(R"("streams":4)"), std::string::npos) << status.body;
    stop_console(*console);
  }
  {
    // All clients (--max-streams 2): the oldest of all.
    auto console = start_console({"--max-streams", "2"});
    auto first = open_stream("127.0.9.2");
    auto second = open_stream("127.0.9.3");
    auto operators = open_stream("127.0.0.1");
    EXPECT_TRUE(closed(*first));
    EXPECT_FALSE(closed(*second));
    EXPECT_FALSE(closed(*operators));
    stop_console(*console);
  }
}

// A replay serves the run folder's records, never a link in it, wherever it points.
TEST_F(ConsoleServer, AReplayServesRecordsButNoSymbolicLinks) {
  const auto run = dir_ / "run";
  std::filesystem::create_directories(run);
  { std::ofstream(run / "summary.json") << R"({"steps":1})"; }
  { std::ofstream(run / "secret.txt") << "not a record"; }
  std::filesystem::create_symlink(run / "secret.txt", run / "site_link.csv");
  std::filesystem::create_symlink("/etc/hostname", run / "site_host.json");
  test::Process console("rths-console", {"--listen", "127.0.0.1:0", "--replay", run.string()}, dir_ / "replay");
  std::string page = console.wait_for_line("serving http://", 10s);
  ASSERT_FALSE(page.empty()) << console.err();
  page = page.substr(0, page.find('/'));
  const Response mode = http(page, "/api/mode");
  EXPECT_EQ(mode.body, R"({"mode":"replay","run":"run","files":["summary.json"]})");
  EXPECT_EQ(http(page, "/run/summary.json").body, R"({"steps":1})");
  EXPECT_EQ(http_status(page, "/run/site_link.csv"), 404);
  EXPECT_EQ(http_status(page, "/run/site_host.json"), 404);
  EXPECT_EQ(http_status(page, "/run/secret.txt"), 404);
  console.signal(SIGINT);
  EXPECT_EQ(console.wait(10s), kExitCompleted) << console.err();
}

// A name is resolved to the address the console binds and prints (localhost, LOCALHOST: 127.0.0.1,
// loopback, no token needed); an IPv6 address is printed in brackets.
TEST_F(ConsoleServer, ANameIsResolvedToTheAddressItListensOn) {
  for (const std::string name : {"localhost", "LOCALHOST"}) {
    test::Process console("rths-console", {"--listen", name + ":0", "--telemetry", name + ":0", "--key", key_.string()},
                          dir_ / ("named-" + name));
    EXPECT_NE(console.wait_for_line("serving http://127.0.0.1:", 10s), "") << console.err();
    EXPECT_NE(console.wait_for_line("telemetry on 127.0.0.1:", 10s), "") << console.err();
    console.signal(SIGINT);
    EXPECT_EQ(console.wait(10s), kExitCompleted) << console.err();
  }
  std::ifstream inet6("/proc/net/if_inet6");
  if (std::string line; inet6 && std::getline(inet6, line)) {
    test::Process console("rths-console", {"--listen", "[::1]:0", "--telemetry", "[::1]:0", "--key", key_.string()},
                          dir_ / "ipv6");
    EXPECT_NE(console.wait_for_line("serving http://[::1]:", 10s), "") << console.err();
    EXPECT_NE(console.wait_for_line("telemetry on [::1]:", 10s), "") << console.err();
    console.signal(SIGINT);
    EXPECT_EQ(console.wait(10s), kExitCompleted) << console.err();
  }
}

// A node the tests play over UDP: its own run, the console's challenge taken, sealed frames.
struct SealedNode {
  SealedNode(const std::filesystem::path& key_file, const std::string& console)
      : keys(telemetry_frame::derive_keys(load_key_file(key_file))), run(telemetry_frame::random_run()) {
    const HostPort to = parse_host_port(console);
    link.set_peer(to.host, to.port);
  }
  telemetry_frame::Keys keys;
  telemetry_frame::RunId run;
  asio::io_context io;
  UdpLink link{io, "127.0.0.1", 0};
  std::uint64_t sequence = 0;
  telemetry_frame::Challenge echo{};
  void send(const std::string& body) {
    const std::string d =
        telemetry_frame::seal(keys.to_console, {telemetry_frame::Kind::kTelemetry, run, ++sequence, echo}, body);
    link.send(std::as_bytes(std::span(d.data(), d.size())));
  }
  // Sends until the console's challenge arrives.
  bool challenged(const std::string& body) {
    std::array<std::byte, 2048> rx{};
    for (int i = 0; i < 100; ++i) {
      send(body);
      link.wait_readable(50'000'000);
      if (const std::size_t n = link.receive(rx); n != 0) {
        const auto o = telemetry_frame::open(keys.to_node,
                                             std::string_view(reinterpret_cast<const char*>(rx.data()), n));  // NOLINT
        if (o && o->header.kind == telemetry_frame::Kind::kChallenge) {
          echo = o->header.echo;
          return true;
        }
      }
    }
    return false;
  }
};

std::uint64_t status_number(const std::string& status, const std::string& name) {
  const auto at = status.find("\"" + name + "\":");
  return at == std::string::npos ? 0 : std::stoull(status.substr(at + name.size() + 3));
}

// A burst of telemetry (every node of a large test at once) waits in the console's socket buffer,
// raised to 4 MiB or what the kernel allows, instead of being lost; what the kernel still drops is
// counted (kernel_dropped), so that every frame sent is accounted for.
TEST_F(ConsoleServer, ABurstOfTelemetryIsTakenOrCountedAsDroppedByTheKernel) {
  auto console = start_console();
  SealedNode node(key_, telemetry_);
  const std::string body =
      R"({"node":"site burst","state":"running","stream":"site","pad":")" + std::string(600, 'x') + "\"}";
  ASSERT_TRUE(node.challenged(body));
  std::this_thread::sleep_for(200ms);
  const std::string before = http(page_, "/api/status").body;
  const std::uint64_t taken0 = status_number(before, "accepted");
  const std::uint64_t dropped0 = status_number(before, "dropped_total") + status_number(before, "kernel_dropped");
  constexpr std::uint64_t kBurst = 2000;
  for (std::uint64_t i = 0; i < kBurst; ++i) node.send(body);
  std::string after;
  for (int i = 0; i < 100; ++i) {
    after = http(page_, "/api/status").body;
    const std::uint64_t counted = status_number(after, "accepted") - taken0 + status_number(after, "dropped_total") +
                                  status_number(after, "kernel_dropped") - dropped0;
    if (counted >= kBurst) break;
    std::this_thread::sleep_for(50ms);
  }
  const std::uint64_t taken = status_number(after, "accepted") - taken0;
  const std::uint64_t kernel = status_number(after, "kernel_dropped");
  std::printf("a burst of %llu frames of %zu bytes: %llu taken, %llu dropped by the kernel; receive buffer %llu\n",
              static_cast<unsigned long long>(kBurst), body.size() + 88, static_cast<unsigned long long>(taken),
              static_cast<unsigned long long>(kernel),
              static_cast<unsigned long long>(status_number(after, "receive_buffer")));
  EXPECT_EQ(taken + kernel + status_number(after, "dropped_total") - status_number(before, "dropped_total"), kBurst)
      << after;
  std::ifstream rmem("/proc/sys/net/core/rmem_max");
  std::uint64_t rmem_max = 0;
  rmem >> rmem_max;
  EXPECT_GE(status_number(after, "receive_buffer"), std::min<std::uint64_t>(rmem_max, 4U << 20U)) << after;
  if (rmem_max >= (2U << 20U)) {
    EXPECT_EQ(taken, kBurst) << "a burst of 2000 frames fits a 2 MiB buffer whether or not the console runs: " << after;
  }
  stop_console(*console);
}

// A page that connects is sent the newest telemetry of every run, within the 1 MiB an event stream
// may hold, however much the runs sent (here 200 runs x 8 streams of 1.3 KB, 2 MB).
TEST_F(ConsoleServer, AStreamsFirstEventsStayWithinItsBacklog) {
  auto console = start_console({"--max-nodes", "200"});
  std::vector<std::unique_ptr<SealedNode>> nodes;
  const std::string pad(1200, 'p');
  for (int k = 0; k < 200; ++k) {
    auto n = std::make_unique<SealedNode>(key_, telemetry_);
    ASSERT_TRUE(n->challenged(R"({"node":"x","state":"y"})"));
    for (int st = 0; st < 8; ++st) {
      n->send(R"({"node":"site f)" + std::to_string(k) + R"(","state":"running","stream":"s)" + std::to_string(st) +
              R"(","pad":")" + pad + R"("})");
    }
    nodes.push_back(std::move(n));
  }
  // Every frame taken before the page connects: what still arrives after is live, not backlog.
  for (std::uint64_t i = 0, seen = 0, now = 0; i < 200; ++i, seen = now) {
    now = status_number(http(page_, "/api/status").body, "accepted");
    if (now >= std::uint64_t{200} * 8 && now == seen) break;
    std::this_thread::sleep_for(50ms);
  }
  const HostPort at = parse_host_port(page_);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address(at.host), at.port});
  asio::write(s, asio::buffer("GET /api/events HTTP/1.1\r\nHost: " + page_ + "\r\n\r\n"));
  std::string got;
  std::array<char, 65536> buffer{};
  asio::error_code ec;
  s.non_blocking(true);
  for (int quiet = 0; quiet < 30;) {  // until nothing came for 300 ms
    const std::size_t n = s.read_some(asio::buffer(buffer), ec);
    if (ec == asio::error::would_block) {
      ++quiet;
      std::this_thread::sleep_for(10ms);
    } else if (ec) {
      break;
    } else {
      got.append(buffer.data(), n);
      quiet = 0;
    }
  }
  // The first events end where the console's next periodic status event begins (one a second: a
  // slow reader, as under a sanitizer, may see it within the read).
  const std::size_t headers = got.find("\r\n\r\n");
  ASSERT_NE(headers, std::string::npos) << got.substr(0, 200);
  const std::size_t opening = got.find("event: console\n", headers);
  ASSERT_NE(opening, std::string::npos) << got.substr(0, 200);
  const std::size_t next_status = got.find("\n\nevent: console\n", opening);
  const std::string first =
      got.substr(headers + 4, next_status == std::string::npos ? std::string::npos : next_status + 2 - headers - 4);
  const std::size_t events = static_cast<std::size_t>(std::count(first.begin(), first.end(), '\n')) / 2;
  std::printf("first events: %zu bytes, about %zu events (%zu bytes read in all)\n", first.size(), events, got.size());
  EXPECT_GT(first.size(), 512U * 1024U) << "the newest telemetry of the runs was not sent";
  EXPECT_LE(first.size(), (1U << 20U) + 64U) << "beyond the backlog by more than the stream's opening lines";
  stop_console(*console);
}
}  // namespace
}  // namespace rths::test_console_server
