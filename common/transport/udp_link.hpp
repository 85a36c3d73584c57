#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>

#include <asio/io_context.hpp>
#include <asio/ip/udp.hpp>

#include "common/transport/link.hpp"
#include "common/transport/udp_socket.hpp"

namespace rths {

// What happened to the datagrams of one UdpLink. Nothing on the network is ever thrown: bad or
// unexpected datagrams are dropped and counted (docs/architecture.md §5), and these counters say where they went.
struct UdpCounters {
  std::uint64_t sent = 0;            // handed to the kernel
  std::uint64_t send_errors = 0;     // refused by the kernel (EAGAIN, ENOBUFS, an ICMP error reported late), too big
  std::uint64_t unsent = 0;          // send() before any peer was known
  std::uint64_t received = 0;        // returned by receive()
  std::uint64_t oversized = 0;       // larger than the receive buffer: dropped
  std::uint64_t foreign = 0;         // from another address while the peer is locked: dropped
  std::uint64_t receive_errors = 0;  // ICMP errors (ECONNREFUSED: nobody listens at the peer), empty datagrams
};

// A Link over a UDP socket for the real-time modes (docs/architecture.md §4). The socket is non-blocking and the
// node drains it once per step, so send() and receive() are single system calls that never block
// and never allocate; everything that can allocate (resolving names, binding) happens in the
// constructor and set_peer().
//
// A sender that knows where its peer is calls set_peer() (the numerical node reaches its sites through
// one socket instead: UdpHub, udp_hub.hpp). A site does not know: it listens,
// and answers the source of a hello that authenticates (adopt_last_source()); once a start
// authenticates it locks that peer, and datagrams from anyone else are dropped. Nothing that has
// not authenticated ever becomes the peer.
class UdpLink final : public Link {
 public:
  // Binds to bind_host:bind_port (port 0: an ephemeral port, see local_port()). bind_host is an IPv4
  // or IPv6 address or a host name, resolved once here; "0.0.0.0" or "::" listen on every interface.
  // Throws std::runtime_error naming the address and the reason when it cannot resolve or bind.
  UdpLink(asio::io_context& io, const std::string& bind_host, std::uint16_t bind_port);

  // Sends to host:port from now on. Resolved once, here; an IPv4 peer on an IPv6 socket is reached
  // through its IPv4-mapped address. Throws std::runtime_error if the host has no usable address.
  void set_peer(const std::string& host, std::uint16_t port);
  // Sends to the source of the datagram receive() last returned from now on.
  void adopt_last_source();
  // While locked, datagrams from any address but the peer's are dropped and counted as foreign.
  void lock_peer(bool locked) { peer_locked_ = locked; }
  [[nodiscard]] bool has_peer() const { return has_peer_; }
  [[nodiscard]] bool peer_locked() const { return peer_locked_; }
  // "127.0.0.1:5000", "[::1]:5000", or "none" while listening; for logs and error messages.
  [[nodiscard]] std::string peer_description() const;
  // The source of the datagram receive() last returned, for logs.
  [[nodiscard]] std::string last_source_description() const;
  // The source of the datagram receive() last returned (a receiver that tells senders apart).
  [[nodiscard]] const asio::ip::udp::endpoint& last_source() const { return last_source_; }
  [[nodiscard]] std::uint16_t local_port() const { return local_.port(); }

  // One non-blocking sendto() to the peer. Failures are counted (and kept in last_error()), never thrown.
  void send(std::span<const std::byte> datagram) override;
  // One non-blocking recvmsg(): the size of the datagram copied into buffer, or 0 when none is waiting.
  // Oversized, foreign and empty datagrams and reported ICMP errors are counted and skipped, up to a
  // bound per call so that a flood cannot hold the step loop here (the rest waits for the next step).
  std::size_t receive(std::span<std::byte> buffer) override;

  // Sleeps until a datagram is waiting or timeout_ns passed (ppoll): true when one is waiting. A
  // bounded wait for a request/reply exchange that leaves the CPU to the peer meanwhile.
  bool wait_readable(std::int64_t timeout_ns);

  // When the datagram last returned by receive() arrived: the kernel's receive timestamp
  // (SO_TIMESTAMPNS, CLOCK_REALTIME ns) so that the one-way network latency excludes the time it
  // waited in the socket for the next step; clock_gettime(CLOCK_REALTIME) when the kernel gave none.
  [[nodiscard]] std::int64_t last_receive_ns() const override { return last_receive_ns_; }
  // Whether last_receive_ns() came from the kernel rather than the fallback clock.
  [[nodiscard]] bool last_receive_kernel_stamped() const { return last_receive_kernel_stamped_; }

  [[nodiscard]] const UdpCounters& counters() const { return counters_; }
  // The most recent send or receive error, for diagnostics ("send to site: Connection refused").
  [[nodiscard]] std::error_code last_error() const { return last_error_; }

 private:
  asio::ip::udp::socket socket_;
  asio::ip::udp::endpoint local_;  // opens the socket: before fd_
  int fd_ = -1;
  asio::ip::udp::endpoint peer_;
  asio::ip::udp::endpoint source_;       // scratch: sender of the datagram being read
  asio::ip::udp::endpoint last_source_;  // sender of the datagram receive() last returned
  bool has_peer_ = false;
  bool peer_locked_ = false;
  std::int64_t last_receive_ns_ = 0;
  bool last_receive_kernel_stamped_ = false;
  UdpCounters counters_;
  std::error_code last_error_;
  // Ancillary data of recvmsg(), a member so that receiving does not allocate.
  udp::ControlBuffer control_;
};

}  // namespace rths
