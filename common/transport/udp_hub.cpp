#include "common/transport/udp_hub.hpp"

#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rths {

void HubLink::send(std::span<const std::byte> datagram) {
  if (datagram.size() > kMaxDatagramBytes) {
    // Larger datagrams would be fragmented on the way, and the peer drops them anyway (link.hpp).
    ++counters_.send_errors;
    last_error_ = std::make_error_code(std::errc::message_size);
    return;
  }
  if (hub_.in_step_) {
    hub_.hold(*this, datagram);
  } else {
    hub_.send_now(*this, datagram);
  }
}

std::size_t HubLink::receive(std::span<std::byte> buffer) {
  if (head_ < 0 && !hub_.in_step_) {
    hub_.read_waiting();
  }
  return hub_.take(*this, buffer);
}

UdpHub::UdpHub(asio::io_context& io, const std::string& bind_host, std::uint16_t bind_port, int max_reads_per_step)
    : socket_(io),
      local_(udp::open_and_bind(socket_, bind_host, bind_port)),
      fd_(socket_.native_handle()),
      max_reads_per_step_(max_reads_per_step),
      slots_(kBatch * static_cast<std::size_t>(std::max(max_reads_per_step, 1))),
      reading_(kBatch),
      in_iov_(kBatch),
      in_headers_(kBatch),
      held_(kBatch),
      out_iov_(kBatch),
      out_headers_(kBatch) {
  if (max_reads_per_step < 1) {
    throw std::invalid_argument("a UdpHub reads at least one batch per step");
  }
  free_.reserve(slots_.size());
  for (std::size_t i = slots_.size(); i-- > 0;) free_.push_back(static_cast<std::int32_t>(i));
}

asio::ip::udp::endpoint UdpHub::resolve(const std::string& host, std::uint16_t port) {
  return udp::resolve_peer(socket_.get_executor(), host, port, local_);
}

HubLink& UdpHub::add_peer(const asio::ip::udp::endpoint& peer) {
  const auto at = std::lower_bound(by_address_.begin(), by_address_.end(), peer,
                                   [](const auto& entry, const asio::ip::udp::endpoint& e) { return entry.first < e; });
  if (at != by_address_.end() && at->first == peer) {
    throw std::invalid_argument("UDP peer " + udp::describe(peer) + " is already a peer of this socket");
  }
  // NOLINTNEXTLINE(modernize-make-unique): the constructor is the hub's alone
  links_.push_back(std::unique_ptr<HubLink>(new HubLink(*this, peer)));
  by_address_.insert(at, {peer, links_.back().get()});
  udp::set_receive_buffer(fd_, static_cast<int>(std::min(links_.size(), kMaxBufferedPeers)) * kBufferPerPeerBytes);
  return *links_.back();
}

int UdpHub::receive_buffer_bytes() const {
  int bytes = 0;
  socklen_t size = sizeof bytes;
  return ::getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, &size) == 0 ? bytes : 0;
}

HubLink* UdpHub::link_of(const asio::ip::udp::endpoint& source) const {
  const auto at = std::lower_bound(by_address_.begin(), by_address_.end(), source,
                                   [](const auto& entry, const asio::ip::udp::endpoint& e) { return entry.first < e; });
  return at != by_address_.end() && at->first == source ? at->second : nullptr;
}

void UdpHub::begin_step() {
  read_waiting();
  in_step_ = true;
}

void UdpHub::end_step() {
  flush();
  in_step_ = false;
}

void UdpHub::read_waiting() {
  for (int read = 0; read < max_reads_per_step_; ++read) {
    const std::size_t batch = std::min(kBatch, free_.size());
    if (batch == 0) {
      return;  // every slot holds a datagram no link took yet: the rest waits in the kernel
    }
    for (std::size_t i = 0; i < batch; ++i) {
      reading_[i] = free_.back();
      free_.pop_back();
      Slot& slot = slots_[static_cast<std::size_t>(reading_[i])];
      in_iov_[i] = {slot.bytes.data(), slot.bytes.size()};
      msghdr& msg = in_headers_[i].msg_hdr;
      msg = msghdr{};
      msg.msg_name = slot.source.data();
      msg.msg_namelen = static_cast<socklen_t>(slot.source.capacity());
      msg.msg_iov = &in_iov_[i];
      msg.msg_iovlen = 1;
      msg.msg_control = slot.control.bytes.data();
      msg.msg_controllen = slot.control.bytes.size();
      in_headers_[i].msg_len = 0;
    }
    const int n = ::recvmmsg(fd_, in_headers_.data(), static_cast<unsigned>(batch), MSG_DONTWAIT, nullptr);
    const std::size_t got = n > 0 ? static_cast<std::size_t>(n) : 0;
    for (std::size_t i = got; i < batch; ++i) free_.push_back(reading_[i]);
    if (n < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        return;
      }
      if (error != EINTR) {
        // ECONNREFUSED and friends: an ICMP report about something sent earlier. The datagrams
        // behind it are still good, so carry on reading.
        ++counters_.receive_errors;
        udp::drain_error_queue(fd_, error_control_);
      }
      continue;
    }
    ++counters_.reads;
    for (std::size_t i = 0; i < got; ++i) {
      const std::int32_t index = reading_[i];
      Slot& slot = slots_[static_cast<std::size_t>(index)];
      const msghdr& msg = in_headers_[i].msg_hdr;
      slot.source.resize(msg.msg_namelen);
      slot.size = in_headers_[i].msg_len;
      HubLink* link = link_of(slot.source);
      if (link == nullptr) {
        ++counters_.foreign;
      } else if ((msg.msg_flags & MSG_TRUNC) != 0) {
        ++link->counters_.oversized;
      } else if (slot.size == 0) {
        // Indistinguishable from "nothing waiting" for the caller, and no envelope is empty.
        ++counters_.receive_errors;
      } else {
        slot.arrived = udp::receive_time(msg);
        append(*link, index);
        continue;
      }
      free_.push_back(index);
    }
    if (got < batch) {
      return;  // the socket is empty: a full batch may have left more
    }
  }
}

void UdpHub::append(HubLink& link, std::int32_t index) {
  slots_[static_cast<std::size_t>(index)].next = -1;
  if (link.tail_ < 0) {
    link.head_ = index;
  } else {
    slots_[static_cast<std::size_t>(link.tail_)].next = index;
  }
  link.tail_ = index;
}

std::size_t UdpHub::take(HubLink& link, std::span<std::byte> buffer) {
  while (link.head_ >= 0) {
    const std::int32_t index = link.head_;
    const Slot& slot = slots_[static_cast<std::size_t>(index)];
    link.head_ = slot.next;
    if (link.head_ < 0) {
      link.tail_ = -1;
    }
    free_.push_back(index);
    if (slot.size > buffer.size()) {
      ++link.counters_.oversized;
      continue;
    }
    std::memcpy(buffer.data(), slot.bytes.data(), slot.size);
    link.last_receive_ns_ = slot.arrived.ns;
    link.last_receive_kernel_stamped_ = slot.arrived.kernel_stamped;
    ++link.counters_.received;
    return slot.size;
  }
  return 0;
}

void UdpHub::send_now(HubLink& link, std::span<const std::byte> datagram) {
  if (const int error = udp::send_datagram(fd_, link.peer_, datagram); error != 0) {
    refused(link, error);
    return;
  }
  ++link.counters_.sent;
}

void UdpHub::refused(HubLink& link, int error) {
  udp::count_refused_send(fd_, error_control_, error, link.counters_.send_errors, link.last_error_);
}

void UdpHub::hold(HubLink& link, std::span<const std::byte> datagram) {
  if (held_count_ == held_.size()) {
    flush();
  }
  Held& held = held_[held_count_++];
  held.link = &link;
  std::memcpy(held.bytes.data(), datagram.data(), datagram.size());
  held.size = datagram.size();
}

void UdpHub::flush() {
  for (std::size_t i = 0; i < held_count_; ++i) {
    Held& held = held_[i];
    out_iov_[i] = {held.bytes.data(), held.size};
    msghdr& msg = out_headers_[i].msg_hdr;
    msg = msghdr{};
    msg.msg_name = held.link->peer_.data();
    msg.msg_namelen = static_cast<socklen_t>(held.link->peer_.size());
    msg.msg_iov = &out_iov_[i];
    msg.msg_iovlen = 1;
    out_headers_[i].msg_len = 0;
  }
  // sendmmsg stops at the first datagram the kernel refuses (it returns how many went before it, or
  // -1 when it was the first): that one is counted as its link's send error and the rest go on.
  std::size_t next = 0;
  while (next < held_count_) {
    ++counters_.writes;
    const int n =
        ::sendmmsg(fd_, &out_headers_[next], static_cast<unsigned>(held_count_ - next), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      for (std::size_t i = next; i < next + static_cast<std::size_t>(n); ++i) {
        ++held_[i].link->counters_.sent;
      }
      next += static_cast<std::size_t>(n);
      continue;
    }
    const int error = n < 0 ? errno : EAGAIN;
    if (error == EINTR) {
      continue;
    }
    refused(*held_[next].link, error);
    ++next;
  }
  held_count_ = 0;
}

}  // namespace rths
