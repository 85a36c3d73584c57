#include "common/transport/udp_link.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <ctime>

namespace rths {
namespace {

// Skipped datagrams (oversized, foreign, empty) and errors one receive() call works through before
// it gives up until the next step.
constexpr int kMaxSkipsPerReceive = 256;

}  // namespace

UdpLink::UdpLink(asio::io_context& io, const std::string& bind_host, std::uint16_t bind_port)
    : socket_(io), local_(udp::open_and_bind(socket_, bind_host, bind_port)), fd_(socket_.native_handle()) {}

void UdpLink::set_peer(const std::string& host, std::uint16_t port) {
  peer_ = udp::resolve_peer(socket_.get_executor(), host, port, local_);
  has_peer_ = true;
}

void UdpLink::adopt_last_source() {
  peer_ = last_source_;
  has_peer_ = true;
}

std::string UdpLink::last_source_description() const {
  return udp::describe(last_source_);
}

std::string UdpLink::peer_description() const {
  return has_peer_ ? udp::describe(peer_) : std::string("none");
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
  if (const int error = udp::send_datagram(fd_, peer_, datagram); error != 0) {
    udp::count_refused_send(fd_, control_, error, counters_.send_errors, last_error_);
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
    msg.msg_control = control_.bytes.data();
    msg.msg_controllen = control_.bytes.size();
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
        udp::drain_error_queue(fd_, control_);
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

    const udp::ReceiveTime arrived = udp::receive_time(msg);
    last_receive_ns_ = arrived.ns;
    last_receive_kernel_stamped_ = arrived.kernel_stamped;
    ++counters_.received;
    return static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace rths
