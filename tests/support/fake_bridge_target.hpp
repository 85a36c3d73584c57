// A fake real-time target for the UDP bridge's tests: what test_udp_bridge.cpp and the driver
// contract tests (test_driver_contract.cpp, support/driver_equipment.hpp) drive the bridge against.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <asio/io_context.hpp>

#include "common/transport/link.hpp"
#include "common/transport/udp_link.hpp"
#include "experiment.pb.h"
#include "node_physical/drivers/bridge_layout.hpp"
#include "support/bridge_layouts.hpp"

namespace rths::test {

using Buffer = std::array<std::byte, kMaxDatagramBytes>;
// The one-channel bridge to a target on 127.0.0.1:port, waiting 0.4 ms for each reply.
inline config::UdpBridge bridge_to(std::uint16_t port, double open_timeout_s = 2.0, std::uint32_t max_missed = 3) {
  config::UdpBridge bridge;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kOneChannelBridgeLayout, &bridge));
  bridge.set_target("127.0.0.1:" + std::to_string(port));
  bridge.set_bind("127.0.0.1:0");
  bridge.set_reply_timeout_s(0.0004);
  bridge.set_max_missed_replies(max_missed);
  bridge.set_open_timeout_s(open_timeout_s);
  return bridge;
}

// Waits up to two seconds for a datagram (the driver's, on loopback).
inline std::size_t receive_within_2s(UdpLink& link, Buffer& buffer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  do {
    if (const std::size_t n = link.receive(buffer)) return n;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  return 0;
}

// A real-time target played by a test, on 127.0.0.1 with the one-channel layout: it reads the
// driver's datagrams and sends replies. Replies sent before the driver's step waits for them are
// already in its socket (loopback delivers within sendto()), so a test needs no thread or clock.
class FakeTarget {
 public:
  FakeTarget()
      : link_(io_, "127.0.0.1", 0),
        bridge_(bridge_to(link_.local_port())),
        command_(bridge_.command(), 1),
        reply_(bridge_.reply(), 1) {}

  [[nodiscard]] std::uint16_t port() const { return link_.local_port(); }
  [[nodiscard]] const config::UdpBridge& bridge() const { return bridge_; }
  [[nodiscard]] std::size_t reply_bytes() const { return reply_.bytes(); }

  // The next datagram from the driver (its counter, enable and command), learning where it came from.
  BridgeFrame next(BridgeChannel& channel) {
    Buffer buffer{};
    const std::size_t n = receive_within_2s(link_, buffer);
    EXPECT_EQ(n, command_.bytes());
    link_.adopt_last_source();
    BridgeFrame frame{0xFFFFFFFFU, false, std::span(&channel, 1)};
    EXPECT_TRUE(command_.unpack(std::span<const std::byte>(buffer.data(), n), frame));
    return frame;
  }
  // Sends a reply echoing counter with these sensors, saying it holds the command applied_m with
  // applied_counter (default: counter, the one it answers) in force (without allocating: the
  // allocation test counts the test thread).
  void reply(std::uint32_t counter, double displacement_m, double force_n, std::uint32_t status = 0,
             double applied_m = 0.0, std::int64_t applied_counter = -1) {
    BridgeChannel channel;
    channel.displacement_m = displacement_m;
    channel.force_n = force_n;
    channel.status = status;
    channel.applied_m = applied_m;
    const std::span<std::byte> datagram(tx_.data(), reply_.bytes());
    const auto applied = applied_counter < 0 ? counter : static_cast<std::uint32_t>(applied_counter);
    reply_.pack(BridgeFrame{counter, true, std::span(&channel, 1), applied}, datagram);
    link_.send(datagram);
  }
  // The driver's port, learned from its first datagram.
  [[nodiscard]] std::uint16_t driver_port() const {
    const std::string peer = link_.peer_description();
    return static_cast<std::uint16_t>(std::stoi(peer.substr(peer.rfind(':') + 1)));
  }
  void send_raw(std::span<const std::byte> datagram) { link_.send(datagram); }
  // Reads and discards the driver's datagrams waiting in the socket.
  void drain() {
    Buffer buffer{};
    while (link_.receive(buffer) != 0) {
    }
  }

 private:
  asio::io_context io_;
  UdpLink link_;
  config::UdpBridge bridge_;
  BridgeLayout command_;
  BridgeLayout reply_;
  Buffer tx_{};
};

}  // namespace rths::test
