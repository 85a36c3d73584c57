// UDP links on loopback (127.0.0.1 only): peer learning and locking, drops and their counters, the
// kernel receive timestamp, errors that must not throw, and no allocation per packet.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ip/udp.hpp>

#include "common/transport/udp_link.hpp"
#include "support/alloc_counter.hpp"
#include "support/udp_text.hpp"

namespace rths::test_udp_link {
namespace {

using asio::ip::udp;
using Buffer = test::Datagram;
using test::bytes_of;
using test::realtime_ns;
using test::string_of;

const std::string kLoopback = "127.0.0.1";

// Polls until a datagram arrives or a second has passed: loopback delivery is fast but not
// instantaneous, and a loaded machine must not make the test flaky. Does not allocate.
std::size_t receive_within_1s(UdpLink& link, Buffer& buffer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    if (const std::size_t n = link.receive(buffer)) return n;
    if (std::chrono::steady_clock::now() >= deadline) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

udp::endpoint loopback(std::uint16_t port) {
  return {asio::ip::make_address_v4(kLoopback), port};
}

TEST(UdpLink, FixedPeerReachesListenerWhichLearnsAndReplies) {
  asio::io_context io;
  UdpLink numerical(io, kLoopback, 0);
  UdpLink site(io, kLoopback, 0);
  ASSERT_NE(numerical.local_port(), 0);
  ASSERT_NE(site.local_port(), 0);
  EXPECT_FALSE(site.has_peer());
  EXPECT_EQ(site.peer_description(), "none");

  Buffer buffer{};
  // Non-blocking: with nothing waiting the call comes back (with 0) instead of waiting.
  EXPECT_EQ(site.receive(buffer), 0U);
  EXPECT_EQ(numerical.receive(buffer), 0U);

  numerical.set_peer(kLoopback, site.local_port());
  EXPECT_EQ(numerical.peer_description(), "127.0.0.1:" + std::to_string(site.local_port()));
  constexpr char kHello[] = "hello \x00\xff\x7f binary";  // embedded NUL: sizes, not strlen
  const std::string hello(kHello, sizeof kHello - 1);
  numerical.send(bytes_of(hello));
  const std::size_t n = receive_within_1s(site, buffer);
  ASSERT_EQ(n, hello.size());
  EXPECT_EQ(string_of(buffer, n), hello);
  // A datagram alone never makes its sender the peer: the site adopts it once the hello authenticated.
  EXPECT_FALSE(site.has_peer());
  EXPECT_EQ(site.last_source_description(), "127.0.0.1:" + std::to_string(numerical.local_port()));
  site.adopt_last_source();
  ASSERT_TRUE(site.has_peer());
  EXPECT_EQ(site.peer_description(), "127.0.0.1:" + std::to_string(numerical.local_port()));
  EXPECT_EQ(site.receive(buffer), 0U);

  const std::string welcome = "welcome";
  site.send(bytes_of(welcome));
  const std::size_t m = receive_within_1s(numerical, buffer);
  ASSERT_EQ(m, welcome.size());
  EXPECT_EQ(string_of(buffer, m), welcome);

  EXPECT_EQ(numerical.counters().sent, 1U);
  EXPECT_EQ(numerical.counters().received, 1U);
  EXPECT_EQ(site.counters().sent, 1U);
  EXPECT_EQ(site.counters().received, 1U);
  EXPECT_EQ(site.counters().send_errors + site.counters().receive_errors + site.counters().unsent, 0U);
}

TEST(UdpLink, SendWithoutPeerIsCountedNotSent) {
  asio::io_context io;
  UdpLink site(io, kLoopback, 0);
  site.send(bytes_of("nobody to send to"));
  EXPECT_EQ(site.counters().unsent, 1U);
  EXPECT_EQ(site.counters().sent, 0U);
}

TEST(UdpLink, KernelReceiveTimestampLiesBetweenSendAndReceive) {
  asio::io_context io;
  UdpLink a(io, kLoopback, 0);
  UdpLink b(io, kLoopback, 0);
  a.set_peer(kLoopback, b.local_port());
  Buffer buffer{};
  for (int i = 0; i < 3; ++i) {
    const std::int64_t before_send_ns = realtime_ns();
    a.send(bytes_of("stamp me"));
    ASSERT_GT(receive_within_1s(b, buffer), 0U);
    const std::int64_t after_receive_ns = realtime_ns();
    EXPECT_TRUE(b.last_receive_kernel_stamped());
    EXPECT_GE(b.last_receive_ns(), before_send_ns);
    EXPECT_LE(b.last_receive_ns(), after_receive_ns);
  }
}

TEST(UdpLink, LockedPeerDropsForeignDatagrams) {
  asio::io_context io;
  UdpLink numerical(io, kLoopback, 0);
  UdpLink site(io, kLoopback, 0);
  UdpLink intruder(io, kLoopback, 0);
  numerical.set_peer(kLoopback, site.local_port());
  intruder.set_peer(kLoopback, site.local_port());
  Buffer buffer{};

  numerical.send(bytes_of("hello"));
  ASSERT_EQ(receive_within_1s(site, buffer), 5U);
  site.adopt_last_source();
  site.lock_peer(true);
  EXPECT_TRUE(site.peer_locked());

  intruder.send(bytes_of("intruder"));
  numerical.send(bytes_of("command"));
  // The intruder's datagram is skipped within the same call; the peer's one behind it comes through.
  const std::size_t n = receive_within_1s(site, buffer);
  ASSERT_EQ(n, 7U);
  EXPECT_EQ(string_of(buffer, n), "command");
  EXPECT_EQ(site.counters().foreign, 1U);
  EXPECT_EQ(site.counters().received, 2U);
  EXPECT_EQ(site.peer_description(), "127.0.0.1:" + std::to_string(numerical.local_port()));
}

TEST(UdpLink, UnlockedListenerAcceptsOthersButKeepsTheAdoptedPeer) {
  asio::io_context io;
  UdpLink first(io, kLoopback, 0);
  UdpLink site(io, kLoopback, 0);
  UdpLink second(io, kLoopback, 0);
  first.set_peer(kLoopback, site.local_port());
  second.set_peer(kLoopback, site.local_port());
  Buffer buffer{};
  first.send(bytes_of("one"));
  ASSERT_EQ(receive_within_1s(site, buffer), 3U);
  site.adopt_last_source();
  second.send(bytes_of("two!"));
  ASSERT_EQ(receive_within_1s(site, buffer), 4U);
  EXPECT_EQ(site.counters().foreign, 0U);
  EXPECT_EQ(site.peer_description(), "127.0.0.1:" + std::to_string(first.local_port()));
}

TEST(UdpLink, OversizedDatagramIsDroppedAndTheNextArrives) {
  asio::io_context io;
  UdpLink site(io, kLoopback, 0);
  udp::socket raw(io, udp::endpoint(asio::ip::make_address_v4(kLoopback), 0));
  const std::vector<std::byte> big(2000, std::byte{0x5a});
  raw.send_to(asio::buffer(big), loopback(site.local_port()));
  const std::string normal = "normal";
  raw.send_to(asio::buffer(normal), loopback(site.local_port()));

  Buffer buffer{};
  const std::size_t n = receive_within_1s(site, buffer);
  ASSERT_EQ(n, normal.size());
  EXPECT_EQ(string_of(buffer, n), normal);
  EXPECT_EQ(site.counters().oversized, 1U);
  EXPECT_EQ(site.counters().received, 1U);
  EXPECT_EQ(site.last_source_description(), "127.0.0.1:" + std::to_string(raw.local_endpoint().port()));
}

TEST(UdpLink, SendingLargerThanTheLinkCarriesIsCounted) {
  asio::io_context io;
  UdpLink a(io, kLoopback, 0);
  UdpLink b(io, kLoopback, 0);
  a.set_peer(kLoopback, b.local_port());
  const std::vector<std::byte> big(kMaxDatagramBytes + 1, std::byte{1});
  a.send(big);
  EXPECT_EQ(a.counters().send_errors, 1U);
  EXPECT_EQ(a.counters().sent, 0U);
}

TEST(UdpLink, ClosedPortIsCountedNeverThrownOrBlocking) {
  asio::io_context io;
  std::uint16_t closed_port = 0;
  {
    // An ephemeral port that was just free: nobody listens there once this socket is closed.
    udp::socket probe(io, loopback(0));
    closed_port = probe.local_endpoint().port();
  }
  UdpLink link(io, kLoopback, 0);
  link.set_peer(kLoopback, closed_port);
  Buffer buffer{};
  // Every send draws an ICMP port unreachable, which Linux reports on a later send or receive.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (link.counters().send_errors + link.counters().receive_errors == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    EXPECT_NO_THROW(link.send(bytes_of("anyone there?")));
    EXPECT_NO_THROW(EXPECT_EQ(link.receive(buffer), 0U));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(link.counters().send_errors + link.counters().receive_errors, 0U);
  EXPECT_EQ(link.last_error(), std::errc::connection_refused);
  for (int i = 0; i < 100; ++i) {
    EXPECT_NO_THROW(link.send(bytes_of("still nobody")));
  }
  EXPECT_NO_THROW(EXPECT_EQ(link.receive(buffer), 0U));

  // The error reports were drained: the link still works once someone listens.
  UdpLink site(io, kLoopback, 0);
  link.set_peer(kLoopback, site.local_port());
  link.send(bytes_of("there you are"));
  ASSERT_EQ(receive_within_1s(site, buffer), 13U);
  site.adopt_last_source();
  site.send(bytes_of("here"));
  EXPECT_EQ(receive_within_1s(link, buffer), 4U);
}

TEST(UdpLink, BindConflictNamesTheAddressAndTheReason) {
  asio::io_context io;
  UdpLink first(io, kLoopback, 0);
  const std::string expected = "cannot bind UDP 127.0.0.1:" + std::to_string(first.local_port()) + ": ";
  try {
    UdpLink second(io, kLoopback, first.local_port());
    FAIL() << "binding a taken port succeeded";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(expected, 0), 0U) << message;
    EXPECT_NE(message.find("in use"), std::string::npos) << message;
  }
}

TEST(UdpLink, UnusableHostsAreClearErrors) {
  asio::io_context io;
  UdpLink link(io, kLoopback, 0);
  // An IPv4 socket cannot reach an IPv6 peer.
  EXPECT_THROW(link.set_peer("::1", 5000), std::runtime_error);
  EXPECT_THROW(link.set_peer(kLoopback, 0), std::runtime_error);
  EXPECT_FALSE(link.has_peer());
}

TEST(UdpLink, SteadyStateSendAndReceiveDoNotAllocate) {
  asio::io_context io;
  UdpLink a(io, kLoopback, 0);
  UdpLink b(io, kLoopback, 0);
  a.set_peer(kLoopback, b.local_port());
  Buffer out{};
  Buffer in{};
  // Warm-up: b adopts its peer, and both directions have been used once.
  a.send(out);
  ASSERT_GT(receive_within_1s(b, in), 0U);
  b.adopt_last_source();
  b.send(out);
  ASSERT_GT(receive_within_1s(a, in), 0U);

  int missing = 0;
  const std::uint64_t before = test::allocations();
  for (std::uint32_t i = 0; i < 1000; ++i) {
    std::memcpy(out.data(), &i, sizeof i);
    UdpLink& sender = (i % 2 == 0) ? a : b;
    UdpLink& receiver = (i % 2 == 0) ? b : a;
    sender.send(std::span(out).first(64));
    if (receive_within_1s(receiver, in) != 64 || std::memcmp(in.data(), &i, sizeof i) != 0) {
      ++missing;
    }
  }
  const std::uint64_t after = test::allocations();
  EXPECT_EQ(after - before, 0U);
  EXPECT_EQ(missing, 0);
}

}  // namespace
}  // namespace rths::test_udp_link
