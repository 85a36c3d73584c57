// rths-console as a browser and the nodes meet it: the token and the Host header it demands, the
// headers that keep telemetry data on the page, what it refuses to start with, that its Stop answers
// while streams and half-sent requests hold connections, and that a flood of forged telemetry
// decides nothing about where Stop goes. (The page itself, live and in replay, is
// tests/console/console_e2e.mjs.)
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
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

#include "process.hpp"
#include "rths/common/address.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/common/results.hpp"
#include "rths/common/secret_key.hpp"
#include "rths/common/telemetry.hpp"
#include "rths/common/udp_link.hpp"
#include "rths/console/hub.hpp"

namespace rths {
namespace {

using namespace std::chrono_literals;

const std::string kToken = "0123456789abcdef0123";

struct Response {
  int status = -1;  // -1: no answer within the time given
  std::string head;
  std::string body;
  double seconds = 0.0;
  [[nodiscard]] bool has_header(const std::string& line) const { return head.find(line) != std::string::npos; }
};

// One HTTP/1.1 request to host:port, its answer within timeout. host_header: "" for the address.
Response http(const std::string& address, const std::string& target, const std::string& headers = "",
              const std::string& method = "GET", std::chrono::milliseconds timeout = 10s,
              const std::string& host_header = "") {
  const HostPort at = parse_host_port(address);
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  const auto began = std::chrono::steady_clock::now();
  socket.connect({asio::ip::make_address(at.host), at.port});
  const std::string request = method + " " + target +
                              " HTTP/1.1\r\nHost: " + (host_header.empty() ? address : host_header) + "\r\n" + headers +
                              "Connection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string raw;
  std::array<char, 4096> buffer{};
  std::function<void(const asio::error_code&, std::size_t)> on_read = [&](const asio::error_code& ec, std::size_t n) {
    raw.append(buffer.data(), n);
    if (!ec) socket.async_read_some(asio::buffer(buffer), on_read);
  };
  socket.async_read_some(asio::buffer(buffer), on_read);
  io.run_for(timeout);
  Response r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const auto end = raw.find("\r\n\r\n");
  if (raw.starts_with("HTTP/1.1 ") && end != std::string::npos) {
    r.status = std::stoi(raw.substr(9, 3));
    r.head = raw.substr(0, end);
    r.body = raw.substr(end + 4);
  }
  return r;
}

int http_status(const std::string& address, const std::string& target, const std::string& headers = "",
                const std::string& method = "GET") {
  return http(address, target, headers, method).status;
}

const std::string kStop = "Content-Length: 0\r\nX-Rths-Request: stop\r\n";

class ConsoleServer : public test::RunFolderTest {
 protected:
  void SetUp() override {
    RunFolderTest::SetUp();
    key_ = dir_ / "console.key";
    write_key_file(key_);
  }
  // rths-console on free ports with the test's key and extra options; page_ and telemetry_ set.
  std::unique_ptr<test::Process> start_console(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0", "--key", key_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto console = std::make_unique<test::Process>("rths-console", args, dir_ / "console");
    page_ = console->wait_for_line("serving http://", 10s);
    telemetry_ = console->wait_for_line("telemetry on ", 10s);
    EXPECT_FALSE(page_.empty()) << console->err();
    page_ = page_.substr(0, page_.find('/'));
    return console;
  }
  void stop_console(test::Process& console) {
    console.signal(SIGINT);
    EXPECT_EQ(console.wait(10s), kExitCompleted) << console.err();
  }
  std::filesystem::path key_;
  std::string page_;
  std::string telemetry_;
};

TEST_F(ConsoleServer, WithATokenEveryRequestMustCarryIt) {
  auto console = start_console({"--token", kToken});
  EXPECT_EQ(http_status(page_, "/api/mode"), 403);
  EXPECT_EQ(http_status(page_, "/"), 403);
  EXPECT_EQ(http_status(page_, "/api/mode?token=" + kToken.substr(1)), 403);
  EXPECT_EQ(http_status(page_, "/api/mode?token=" + kToken + "x"), 403);
  EXPECT_EQ(http_status(page_, "/api/mode?token=" + kToken), 200);
  EXPECT_EQ(http_status(page_, "/", "X-Rths-Token: " + kToken + "\r\n"), 200);
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
  };
  int i = 0;
  for (const auto& c : cases) {
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0"};
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

// Event streams are capped per client, and a new connection closes the oldest half-sent request
// when the table is full: with 100 streams asked for and 400 half-sent requests held, Stop and the
// page still answer. On a machine that keeps time, within 1 s.
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
  EXPECT_EQ(streams, 4) << "--max-streams-per-client's default";
  EXPECT_EQ(refused_streams, 96);
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

// The acceptance case: a genuine two-process loopback test publishing to the console, a forger on
// this machine sending 1,000 forged numerical-node datagrams a second (plain JSON as telemetry was,
// and frames sealed with a key of its own), and one press of Stop over HTTP. The test stops at that
// press with its documented exit codes (numerical 6, the site 5), the stop went to the genuine node
// only and it acknowledged, and every forged datagram was dropped and counted.
TEST_F(ConsoleServer, AForgedFloodDecidesNothingAndTheFirstStopEndsTheTest) {
  auto console = start_console();
  ASSERT_FALSE(telemetry_.empty());
  const auto run = dir_ / "run";
  test::Process test(
      "rths-numerical",
      {"loopback", test::example("seed002/spring.textproto").string(), "--console", telemetry_, "--console-key",
       key_.string(), "--out", run.string(), "--set", "duration_s=120", "--no-plots", "--quiet"},
      dir_ / "numerical");
  std::atomic<bool> flooding{true};
  std::atomic<std::uint64_t> forged{0};
  std::thread forger([&] {
    asio::io_context io;
    UdpLink link(io, "127.0.0.1", 0);
    const HostPort to = parse_host_port(telemetry_);
    link.set_peer(to.host, to.port);
    ensure_crypto();
    std::array<unsigned char, SecretKey::kBytes> bytes{};
    randombytes_buf(bytes.data(), bytes.size());
    const auto keys = telemetry_frame::derive_keys(SecretKey{std::span<const unsigned char, SecretKey::kBytes>(bytes)});
    const auto run_id = telemetry_frame::random_run();
    auto next = std::chrono::steady_clock::now();
    for (std::uint64_t i = 1; flooding.load(); ++i) {
      const std::string body = R"({"node":"numerical","token":"0123456789abcdef0123456789abcdef","state":"running"})";
      const std::string d =
          i % 2 == 0 ? body
                     : telemetry_frame::seal(keys.to_console, {telemetry_frame::Kind::kTelemetry, run_id, i, {}}, body);
      link.send(std::as_bytes(std::span(d.data(), d.size())));
      forged.fetch_add(1);
      next += 1ms;
      std::this_thread::sleep_until(next);
    }
  });
  // The genuine numerical node running, as the console saw it.
  std::string status;
  for (int i = 0; i < 300; ++i) {
    status = http(page_, "/api/status").body;
    if (status.find(R"("node":"numerical")") != std::string::npos &&
        status.find(R"("state":"running")") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_NE(status.find(R"("state":"running")"), std::string::npos) << status << test.err();
  std::this_thread::sleep_for(2s);  // two seconds more of the flood while the test runs
  const Response stop = http(page_, "/api/stop", kStop, "POST");
  const int code = test.wait(60s);
  flooding = false;
  forger.join();
  std::this_thread::sleep_for(200ms);  // the last forged datagrams counted
  status = http(page_, "/api/status").body;
  ASSERT_EQ(stop.status, 200);
  EXPECT_EQ(code, kExitInterrupted) << test.err();
  // One target: the genuine node (its source is the loopback run's publisher, not the forger).
  EXPECT_EQ(std::count(stop.body.begin(), stop.body.end(), '{') - 1, 1) << stop.body;
  EXPECT_NE(stop.body.find(R"("node":"numerical")"), std::string::npos) << stop.body;
  EXPECT_NE(stop.body.find(R"("acknowledged":true})"), std::string::npos) << stop.body;
  const auto site = read_results_json<results::SiteSummary>(run / "site_spring.json");
  EXPECT_EQ(site.exit_code(), kExitPeerAborted) << site.stop_reason();
  const auto field = [&](const std::string& name) {
    const auto at = status.find("\"" + name + "\":");
    return at == std::string::npos ? -1.0 : std::stod(status.substr(at + name.size() + 3));
  };
  const double refused = field("malformed") + field("unauthenticated");
  EXPECT_LE(refused, static_cast<double>(forged.load())) << status;
  EXPECT_GE(refused, 0.9 * static_cast<double>(forged.load())) << "forged " << forged.load() << ": " << status;
  EXPECT_GT(forged.load(), 1500U) << "the flood ran less than 1.5 s";
  std::printf("forged %llu datagrams; the console: %s\nstop: %s\n", static_cast<unsigned long long>(forged.load()),
              status.c_str(), stop.body.c_str());
  stop_console(*console);
}

}  // namespace
}  // namespace rths
