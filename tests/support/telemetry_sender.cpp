// rths_test_telemetry KEY_FILE HOST:PORT: nodes of the console's tests that publish any JSON body the
// test writes, sealed with the console's key as TelemetryPublisher seals (a run of its own per node
// name, increasing sequence numbers, the console's challenge echoed). Each line on standard input
// replaces the body of the node it names ("node"); the newest body of every node is sent 50 times a
// second until SIGINT or SIGTERM. It lets the browser test show the page telemetry no node of rths
// sends: script in every string, rotations and moments, more sites and channels than the page draws.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <asio/io_context.hpp>

#include "common/core/address.hpp"
#include "common/core/command_line.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/udp_link.hpp"
#include "console/hub/hub.hpp"

namespace {

struct Node {
  rths::telemetry_frame::Header header{
      rths::telemetry_frame::Kind::kTelemetry, rths::telemetry_frame::random_run(), 0, {}};
  std::string body;
};

// What the reader thread shares with the sender loop.
struct Nodes {
  std::mutex mutex;
  std::map<std::string, Node> by_name;
};

int run(int argc, char** argv, Nodes& nodes) {
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

  std::thread reader([&] {
    for (std::string line; std::getline(std::cin, line);) {
      const std::string name = rths::console::json_string_field(line, "node").value_or("");
      const std::scoped_lock lock(nodes.mutex);
      nodes.by_name[name].body = line;
    }
  });
  reader.detach();  // blocked in getline until the test closes our input; the process ends anyway

  std::array<std::byte, 2048> rx{};
  while (!stop.load()) {
    {
      const std::scoped_lock lock(nodes.mutex);
      for (auto& [name, node] : nodes.by_name) {
        ++node.header.sequence;
        const std::string frame = rths::telemetry_frame::seal(keys.to_console, node.header, node.body);
        link.send(std::as_bytes(std::span(frame.data(), frame.size())));
      }
    }
    link.wait_readable(20'000'000);
    for (std::size_t n = 0; (n = link.receive(rx)) != 0;) {
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the datagram's bytes as characters
      const std::string_view datagram(reinterpret_cast<const char*>(rx.data()), n);
      const auto opened = rths::telemetry_frame::open(keys.to_node, datagram);
      if (!opened || opened->header.kind != rths::telemetry_frame::Kind::kChallenge) continue;
      const std::scoped_lock lock(nodes.mutex);
      for (auto& [name, node] : nodes.by_name) {
        if (node.header.run == opened->header.run) node.header.echo = opened->header.echo;
      }
    }
  }
  return 0;
}

}  // namespace

// The reader thread stays blocked in getline to the end, so what it shares is never destroyed: the
// process ends by _Exit, which runs no destructor, also after an error.
int main(int argc, char** argv) {
  Nodes nodes;
  int code = 1;
  try {
    code = run(argc, argv, nodes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rths_test_telemetry: %s\n", e.what());
  }
  std::fflush(nullptr);
  std::_Exit(code);
}
