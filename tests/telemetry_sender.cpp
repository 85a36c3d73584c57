// rths_test_telemetry KEY_FILE HOST:PORT: a node of the console's tests that publishes any JSON body
// the test writes, sealed with the console's key as TelemetryPublisher seals (a run of its own,
// increasing sequence numbers, the console's challenge echoed). Each line on standard input replaces
// the body; the newest is sent 50 times a second until SIGINT or SIGTERM. It lets the browser test
// show the page telemetry no node of rths sends: script in every string, rotations and moments.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <asio/io_context.hpp>

#include "rths/common/address.hpp"
#include "rths/common/command_line.hpp"
#include "rths/common/secret_key.hpp"
#include "rths/common/telemetry.hpp"
#include "rths/common/udp_link.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rths_test_telemetry KEY_FILE HOST:PORT (JSON bodies on standard input)\n");
    return 2;
  }
  const auto& stop = rths::install_stop_signals();
  const auto keys = rths::telemetry_frame::derive_keys(rths::load_key_file(argv[1]));
  const rths::HostPort console = rths::parse_host_port(argv[2]);
  asio::io_context io;
  rths::UdpLink link(io, "127.0.0.1", 0);
  link.set_peer(console.host, console.port);

  std::mutex mutex;
  std::string body;
  std::atomic<bool> have{false};
  std::thread reader([&] {
    for (std::string line; std::getline(std::cin, line);) {
      const std::scoped_lock lock(mutex);
      body = line;
      have = true;
    }
  });
  reader.detach();  // blocked in getline until the test closes our input; the process ends anyway

  rths::telemetry_frame::Header header{
      rths::telemetry_frame::Kind::kTelemetry, rths::telemetry_frame::random_run(), 0, {}};
  std::array<std::byte, 2048> rx{};
  while (!stop.load()) {
    if (have.load()) {
      std::string text;
      {
        const std::scoped_lock lock(mutex);
        text = body;
      }
      ++header.sequence;
      const std::string frame = rths::telemetry_frame::seal(keys.to_console, header, text);
      link.send(std::as_bytes(std::span(frame.data(), frame.size())));
    }
    link.wait_readable(20'000'000);
    for (std::size_t n = 0; (n = link.receive(rx)) != 0;) {
      const auto opened = rths::telemetry_frame::open(
          keys.to_node, std::string_view(reinterpret_cast<const char*>(rx.data()),
                                         n));  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
      if (opened && opened->header.run == header.run &&
          opened->header.kind == rths::telemetry_frame::Kind::kChallenge) {
        header.echo = opened->header.echo;
      }
    }
  }
  return 0;
}
