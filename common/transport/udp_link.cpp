#include "common/transport/udp_link.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include <asio/ip/address_v6.hpp>

namespace rths {
namespace {

using asio::ip::udp;

// The kernel caps these at net.core.{r,w}mem_max without an error; a larger queue only matters when a
// step overruns, and then dropping old packets is what the protocol expects anyway.
constexpr int kSocketBufferBytes = 1 << 20;
// Skipped datagrams (oversized, foreign, empty) and errors one receive() call works through before
// it gives up until the next step.
constexpr int kMaxSkipsPerReceive = 256;
// ICMP error reports read off the error queue at once; more wait for the next error.
constexpr int kMaxErrorsDrained = 64;

static_assert(CMSG_SPACE(sizeof(timespec)) <= 256, "control_ too small for SCM_TIMESTAMPNS");
static_assert(alignof(std::max_align_t) >= alignof(cmsghdr));

std::string describe(const udp::endpoint& endpoint) {
  const std::string address = endpoint.address().to_string();
  const std::string port = std::to_string(endpoint.port());
  return endpoint.address().is_v6() ? "[" + address + "]:" + port : address + ":" + port;
}

std::string described_host(const std::string& host, std::uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Options whose refusal costs a feature, not the link: each is tried and the outcome ignored.
void set_int_option(int fd, int level, int name, int value) {
  (void)::setsockopt(fd, level, name, &value, sizeof value);
}

}  // namespace

UdpLink::UdpLink(asio::io_context& io, const std::string& bind_host, std::uint16_t bind_port) : socket_(io) {
  udp::resolver resolver(io);
  std::error_code ec;
  const auto results = resolver.resolve(bind_host, std::to_string(bind_port),
                                        udp::resolver::passive | udp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw std::runtime_error("cannot bind UDP " + described_host(bind_host, bind_port) +
                             ": cannot resolve the host: " + (ec ? ec.message() : "no address"));
  }
  const udp::endpoint endpoint = results.begin()->endpoint();
  const std::string where =
      describe(endpoint) +
      (endpoint.address().to_string() == bind_host || bind_host.empty() ? "" : " (\"" + bind_host + "\")");

  if (socket_.open(endpoint.protocol(), ec); ec) {
    throw std::runtime_error("cannot open UDP socket for " + where + ": " + ec.message());
  }
  fd_ = socket_.native_handle();
  // Belt and braces: every call also passes MSG_DONTWAIT.
  if (socket_.non_blocking(true, ec); ec) {
    throw std::runtime_error("cannot make UDP socket for " + where + " non-blocking: " + ec.message());
  }
  set_int_option(fd_, SOL_SOCKET, SO_RCVBUF, kSocketBufferBytes);
  set_int_option(fd_, SOL_SOCKET, SO_SNDBUF, kSocketBufferBytes);
  // The kernel stamps each datagram as it arrives; without it the latency would include the wait
  // until the next step drained the socket. receive() falls back to the clock if this is refused.
  set_int_option(fd_, SOL_SOCKET, SO_TIMESTAMPNS, 1);
  // Linux reports ICMP errors (port unreachable: the peer is not running) on an unconnected UDP socket
  // only with IP_RECVERR. The reports also go to the error queue, which drain_error_queue() empties
  // because it shares the receive buffer's memory. On IPv6 sockets IP_RECVERR covers mapped peers.
  set_int_option(fd_, IPPROTO_IP, IP_RECVERR, 1);
  if (endpoint.address().is_v6()) {
    set_int_option(fd_, IPPROTO_IPV6, IPV6_RECVERR, 1);
  }

  if (socket_.bind(endpoint, ec); ec) {
    throw std::runtime_error("cannot bind UDP " + where + ": " + ec.message());
  }
  local_ = socket_.local_endpoint(ec);
  if (ec) {
    throw std::runtime_error("cannot read the local address of UDP " + where + ": " + ec.message());
  }
}

void UdpLink::set_peer(const std::string& host, std::uint16_t port) {
  if (port == 0) {
    throw std::runtime_error("UDP peer " + described_host(host, port) + ": port 0 cannot be sent to");
  }
  udp::resolver resolver(socket_.get_executor());
  std::error_code ec;
  const auto results = resolver.resolve(host, std::to_string(port), udp::resolver::numeric_service, ec);
  if (ec) {
    throw std::runtime_error("cannot resolve UDP peer " + described_host(host, port) + ": " + ec.message());
  }
  // A name may resolve to both families; the socket can only reach its own (or, on IPv6, IPv4 mapped).
  const bool v6_socket = local_.address().is_v6();
  const udp::endpoint* mappable = nullptr;
  for (const auto& entry : results) {
    const udp::endpoint& candidate = entry.endpoint();
    if (candidate.address().is_v6() == v6_socket) {
      peer_ = candidate;
      has_peer_ = true;
      return;
    }
    if (v6_socket && mappable == nullptr) {
      mappable = &candidate;
    }
  }
  if (mappable != nullptr) {
    peer_ = udp::endpoint(asio::ip::make_address_v6(asio::ip::v4_mapped, mappable->address().to_v4()), port);
    has_peer_ = true;
    return;
  }
  throw std::runtime_error("UDP peer " + described_host(host, port) + " has no " + (v6_socket ? "IPv6" : "IPv4") +
                           " address, and the link is bound to " + describe(local_));
}

void UdpLink::adopt_last_source() {
  peer_ = last_source_;
  has_peer_ = true;
}

std::string UdpLink::last_source_description() const {
  return describe(last_source_);
}

std::string UdpLink::peer_description() const {
  return has_peer_ ? describe(peer_) : std::string("none");
}

void UdpLink::send(std::span<const std::byte> datagram) {
  if (!has_peer_) {
    ++counters_.unsent;
    return;
  }
  if (datagram.size() > kMaxDatagramBytes) {
    // Larger datagrams would be fragmented on the way, and the peer drops them anyway (link.hpp).
    ++counters_.send_errors;
    last_error_ = std::make_error_code(std::errc::message_size);
    return;
  }
  const ssize_t n = ::sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL, peer_.data(),
                             static_cast<socklen_t>(peer_.size()));
  if (n < 0) {
    const int error = errno;
    ++counters_.send_errors;
    last_error_ = std::error_code(error, std::system_category());
    if (error != EAGAIN && error != EWOULDBLOCK && error != ENOBUFS) {
      // An ICMP error from an earlier datagram can surface here instead of in receive().
      drain_error_queue();
    }
    return;
  }
  ++counters_.sent;
}

bool UdpLink::wait_readable(std::int64_t timeout_ns) {
  pollfd pfd{fd_, POLLIN, 0};
  const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                         static_cast<long>(timeout_ns % 1'000'000'000)};  // NOLINT(google-runtime-int): timespec's type
  return ::ppoll(&pfd, 1, &timeout, nullptr) > 0;
}

std::size_t UdpLink::receive(std::span<std::byte> buffer) {
  for (int attempt = 0; attempt < kMaxSkipsPerReceive; ++attempt) {
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_name = source_.data();
    msg.msg_namelen = static_cast<socklen_t>(source_.capacity());
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control_.data();
    msg.msg_controllen = control_.size();
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        return 0;
      }
      if (error != EINTR) {
        // ECONNREFUSED and friends: an ICMP report about something this link sent earlier. The
        // datagrams behind it are still good, so carry on reading.
        ++counters_.receive_errors;
        last_error_ = std::error_code(error, std::system_category());
        drain_error_queue();
      }
      continue;
    }
    source_.resize(msg.msg_namelen);
    if (has_peer_ && peer_locked_ && source_ != peer_) {
      ++counters_.foreign;
      continue;
    }
    if ((msg.msg_flags & MSG_TRUNC) != 0 || static_cast<std::size_t>(n) > buffer.size()) {
      ++counters_.oversized;
      continue;
    }
    if (n == 0) {
      // Indistinguishable from "nothing waiting" for the caller, and no envelope is empty.
      ++counters_.receive_errors;
      continue;
    }
    last_source_ = source_;

    last_receive_kernel_stamped_ = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
        timespec ts{};
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        last_receive_ns_ = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        last_receive_kernel_stamped_ = true;
      }
    }
    if (!last_receive_kernel_stamped_) {
      last_receive_ns_ = realtime_ns();
    }
    ++counters_.received;
    return static_cast<std::size_t>(n);
  }
  return 0;
}

void UdpLink::drain_error_queue() {
  for (int i = 0; i < kMaxErrorsDrained; ++i) {
    // The report's payload (the start of our own datagram) and its details are not needed: the
    // errno already told what happened. MSG_TRUNC/MSG_CTRUNC simply discard them.
    msghdr msg{};
    msg.msg_control = control_.data();
    msg.msg_controllen = control_.size();
    if (::recvmsg(fd_, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      return;
    }
  }
}

}  // namespace rths
