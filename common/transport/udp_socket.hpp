#pragma once

// What every rths UDP socket shares, one socket per peer (UdpLink) or one for many (UdpHub): how it is
// opened and bound, how a peer's name becomes an address, the kernel's receive timestamp and the
// ICMP error queue. Everything here that can allocate runs at set-up, never in a step.

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>

#include <asio/any_io_executor.hpp>
#include <asio/ip/udp.hpp>

namespace rths::udp {

// Ancillary data of one recvmsg() (the timestamp, or an ICMP error report), aligned for cmsghdr.
struct alignas(std::max_align_t) ControlBuffer {
  std::array<std::byte, 256> bytes{};
};

// Opens socket for host:port (an IPv4 or IPv6 address or a host name, resolved once; port 0: an
// ephemeral one), non-blocking, with 1 MiB buffers, kernel receive timestamps (SO_TIMESTAMPNS) and
// ICMP error reports (IP_RECVERR), and binds it. Returns the address it is bound to. Throws
// std::runtime_error naming the address and the reason when it cannot resolve, open or bind.
asio::ip::udp::endpoint open_and_bind(asio::ip::udp::socket& socket, const std::string& host, std::uint16_t port);

// The address a socket bound to `local` sends to for host:port: one of the socket's own family, or
// on IPv6 an IPv4 address mapped. Throws std::runtime_error naming the peer when there is none.
asio::ip::udp::endpoint resolve_peer(const asio::any_io_executor& executor, const std::string& host, std::uint16_t port,
                                     const asio::ip::udp::endpoint& local);

// "127.0.0.1:5000", "[::1]:5000"; for logs and error messages.
std::string describe(const asio::ip::udp::endpoint& endpoint);

// When the datagram of msg arrived: the kernel's timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME ns) with
// true, or clock_gettime(CLOCK_REALTIME) with false when the kernel gave none. The kernel stamps on
// arrival once receive stamping is on host-wide, which the first socket asking for it turns on through
// deferred work; a datagram queued in the moment before is stamped when read, still with true (a
// node's first datagrams at most, on a host where no other socket had it on).
struct ReceiveTime {
  std::int64_t ns = 0;
  bool kernel_stamped = false;
};
ReceiveTime receive_time(const msghdr& msg);

// Asks for a receive buffer of `bytes` (the kernel doubles it for its bookkeeping): beyond
// net.core.rmem_max where the process may (CAP_NET_ADMIN), else as much as that allows. Set-up only.
void set_receive_buffer(int fd, int bytes);

// Empties the socket's error queue (ICMP reports share the receive buffer's memory), up to a bound.
void drain_error_queue(int fd, ControlBuffer& control);

// One non-blocking sendto() of `datagram` to `peer` (no SIGPIPE): 0 when the kernel took it, else the
// errno. In the step: no allocation.
int send_datagram(int fd, const asio::ip::udp::endpoint& peer, std::span<const std::byte> datagram);

// A send the kernel refused with `error`: counted in send_errors and kept in last_error; unless the
// socket's buffer was only full, its error queue is drained (an ICMP error from an earlier datagram can
// surface in a send instead of a read).
void count_refused_send(int fd, ControlBuffer& control, int error, std::uint64_t& send_errors,
                        std::error_code& last_error);

}  // namespace rths::udp
