// rths-console under attack, with a genuine test running: a flood of forged telemetry decides nothing
// about where Stop goes. The console's other rules are in unit/test_console_server.cpp.
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

using test::ConsoleServer;
using test::kStop;
using test::Response;

using namespace std::chrono_literals;

using test::http;

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
}  // namespace rths::test_console_server
