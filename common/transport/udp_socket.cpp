#include "common/transport/udp_socket.hpp"

#include <netinet/in.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include <asio/ip/address_v6.hpp>

namespace rths::udp {
namespace {

using asio::ip::udp;

// The kernel caps these at net.core.{r,w}mem_max without an error; a larger queue only matters when a
// step overruns, and then dropping old packets is what the protocol expects anyway.
constexpr int kSocketBufferBytes = 1 << 20;
// ICMP error reports read off the error queue at once; more wait for the next error.
constexpr int kMaxErrorsDrained = 64;

static_assert(CMSG_SPACE(sizeof(timespec)) <= sizeof(ControlBuffer), "ControlBuffer too small for SCM_TIMESTAMPNS");
static_assert(alignof(ControlBuffer) >= alignof(cmsghdr));

std::string described_host(const std::string& host, std::uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Options whose refusal costs a feature, not the socket: each is tried and the outcome ignored.
void set_int_option(int fd, int level, int name, int value) {
  (void)::setsockopt(fd, level, name, &value, sizeof value);
}

}  // namespace

std::string describe(const udp::endpoint& endpoint) {
  const std::string address = endpoint.address().to_string();
  const std::string port = std::to_string(endpoint.port());
  return endpoint.address().is_v6() ? "[" + address + "]:" + port : address + ":" + port;
}

udp::endpoint open_and_bind(udp::socket& socket, const std::string& host, std::uint16_t port) {
  udp::resolver resolver(socket.get_executor());
  std::error_code ec;
  const auto results =
      resolver.resolve(host, std::to_string(port), udp::resolver::passive | udp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw std::runtime_error("cannot bind UDP " + described_host(host, port) +
                             ": cannot resolve the host: " + (ec ? ec.message() : "no address"));
  }
  const udp::endpoint endpoint = results.begin()->endpoint();
  const std::string where =
      describe(endpoint) + (endpoint.address().to_string() == host || host.empty() ? "" : " (\"" + host + "\")");

  if (socket.open(endpoint.protocol(), ec); ec) {
    throw std::runtime_error("cannot open UDP socket for " + where + ": " + ec.message());
  }
  const int fd = socket.native_handle();
  // Belt and braces: every call also passes MSG_DONTWAIT.
  if (socket.non_blocking(true, ec); ec) {
    throw std::runtime_error("cannot make UDP socket for " + where + " non-blocking: " + ec.message());
  }
  set_int_option(fd, SOL_SOCKET, SO_RCVBUF, kSocketBufferBytes);
  set_int_option(fd, SOL_SOCKET, SO_SNDBUF, kSocketBufferBytes);
  // The kernel stamps each datagram as it arrives; without it the latency would include the wait
  // until the next step drained the socket. receive_time() falls back to the clock if this is refused.
  set_int_option(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1);
  // Linux reports ICMP errors (port unreachable: the peer is not running) on an unconnected UDP socket
  // only with IP_RECVERR. The reports also go to the error queue, which drain_error_queue() empties
  // because it shares the receive buffer's memory. On IPv6 sockets IP_RECVERR covers mapped peers.
  set_int_option(fd, IPPROTO_IP, IP_RECVERR, 1);
  if (endpoint.address().is_v6()) {
    set_int_option(fd, IPPROTO_IPV6, IPV6_RECVERR, 1);
  }

  if (socket.bind(endpoint, ec); ec) {
    throw std::runtime_error("cannot bind UDP " + where + ": " + ec.message());
  }
  const udp::endpoint local = socket.local_endpoint(ec);
  if (ec) {
    throw std::runtime_error("cannot read the local address of UDP " + where + ": " + ec.message());
  }
  return local;
}

udp::endpoint resolve_peer(const asio::any_io_executor& executor, const std::string& host, std::uint16_t port,
                           const udp::endpoint& local) {
  if (port == 0) {
    throw std::runtime_error("UDP peer " + described_host(host, port) + ": port 0 cannot be sent to");
  }
  udp::resolver resolver(executor);
  std::error_code ec;
  const auto results = resolver.resolve(host, std::to_string(port), udp::resolver::numeric_service, ec);
  if (ec) {
    throw std::runtime_error("cannot resolve UDP peer " + described_host(host, port) + ": " + ec.message());
  }
  // A name may resolve to both families; the socket can only reach its own (or, on IPv6, IPv4 mapped).
  const bool v6_socket = local.address().is_v6();
  const udp::endpoint* mappable = nullptr;
  for (const auto& entry : results) {
    const udp::endpoint& candidate = entry.endpoint();
    if (candidate.address().is_v6() == v6_socket) {
      return candidate;
    }
    if (v6_socket && mappable == nullptr) {
      mappable = &candidate;
    }
  }
  if (mappable != nullptr) {
    return {asio::ip::make_address_v6(asio::ip::v4_mapped, mappable->address().to_v4()), port};
  }
  throw std::runtime_error("UDP peer " + described_host(host, port) + " has no " + (v6_socket ? "IPv6" : "IPv4") +
                           " address, and the link is bound to " + describe(local));
}

ReceiveTime receive_time(const msghdr& msg) {
  // CMSG_NXTHDR takes a non-const header; nothing is written through it.
  auto& header = const_cast<msghdr&>(msg);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
      timespec ts{};
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      return {static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, true};
    }
  }
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return {static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, false};
}

void set_receive_buffer(int fd, int bytes) {
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0) {
    set_int_option(fd, SOL_SOCKET, SO_RCVBUF, bytes);
  }
}

void drain_error_queue(int fd, ControlBuffer& control) {
  for (int i = 0; i < kMaxErrorsDrained; ++i) {
    // The report's payload (the start of our own datagram) and its details are not needed: the
    // errno already told what happened. MSG_TRUNC/MSG_CTRUNC simply discard them.
    msghdr msg{};
    msg.msg_control = control.bytes.data();
    msg.msg_controllen = control.bytes.size();
    if (::recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      return;
    }
  }
}

int send_datagram(int fd, const asio::ip::udp::endpoint& peer, std::span<const std::byte> datagram) {
  const ssize_t n = ::sendto(fd, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL, peer.data(),
                             static_cast<socklen_t>(peer.size()));
  return n < 0 ? errno : 0;
}

void count_refused_send(int fd, ControlBuffer& control, int error, std::uint64_t& send_errors,
                        std::error_code& last_error) {
  ++send_errors;
  last_error = std::error_code(error, std::system_category());
  if (error != EAGAIN && error != EWOULDBLOCK && error != ENOBUFS) drain_error_queue(fd, control);
}

}  // namespace rths::udp
