#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ip/udp.hpp>

#include "common/transport/link.hpp"
#include "common/transport/udp_link.hpp"
#include "common/transport/udp_socket.hpp"

// For mmsghdr: the batches of recvmmsg() and sendmmsg().
#include <sys/socket.h>

namespace rths {

class UdpHub;

// One peer's end of a UdpHub: a Link to one remote site over the hub's shared socket. Within a step
// (between the hub's begin_step() and end_step()) it makes no system call: receive() takes the
// datagrams the hub read for this peer, send() hands its datagram to the hub's batch. Outside a
// step (the handshake, the start, the stop) it acts at once, as a UdpLink does.
class HubLink final : public Link {
 public:
  void send(std::span<const std::byte> datagram) override;
  // The oldest datagram the hub read for this peer, copied into buffer; 0 when none is waiting. A
  // datagram larger than buffer is dropped and counted as oversized.
  std::size_t receive(std::span<std::byte> buffer) override;
  [[nodiscard]] std::int64_t last_receive_ns() const override { return last_receive_ns_; }
  [[nodiscard]] bool last_receive_kernel_stamped() const { return last_receive_kernel_stamped_; }

  [[nodiscard]] const UdpCounters& counters() const { return counters_; }
  [[nodiscard]] std::string peer_description() const { return udp::describe(peer_); }
  [[nodiscard]] const asio::ip::udp::endpoint& peer() const { return peer_; }
  [[nodiscard]] std::error_code last_error() const { return last_error_; }

 private:
  friend class UdpHub;
  HubLink(UdpHub& hub, asio::ip::udp::endpoint peer) : hub_(hub), peer_(std::move(peer)) {}

  UdpHub& hub_;
  asio::ip::udp::endpoint peer_;
  // The datagrams read for this peer and not yet received: a list through the hub's slots.
  std::int32_t head_ = -1;
  std::int32_t tail_ = -1;
  std::int64_t last_receive_ns_ = 0;
  bool last_receive_kernel_stamped_ = false;
  UdpCounters counters_;
  std::error_code last_error_;
};

// What the hub's socket saw that belongs to no peer.
struct UdpHubCounters {
  std::uint64_t foreign = 0;         // from an address that is none of the peers': dropped
  std::uint64_t receive_errors = 0;  // ICMP errors (nobody listens at a peer), empty datagrams
  std::uint64_t reads = 0;           // recvmmsg() calls that returned datagrams
  std::uint64_t writes = 0;          // sendmmsg() calls
};

// One UDP socket for all the remote sites of a numerical node in real time (docs/architecture.md §4).
// A step's exchange costs two system calls whatever the number of sites: begin_step() reads every
// waiting datagram in batches (recvmmsg) and hands each to the link of its source; the links' sends
// are held until end_step() hands them to the kernel in one batch (sendmmsg). With a socket per site
// a step made three calls per site (the command's sendto, the feedback's recvmsg and the empty
// socket's EAGAIN). Datagrams from any other address are dropped and counted: a peer is fixed when
// it is added, as a locked UdpLink's is.
//
// The kernel's receive buffer grows with the peers (1 MiB each, up to 64 MiB), as much as a socket
// per peer would hold, so that a stall of the node loses no more datagrams than it did then.
//
// The datagrams read wait in a pool of slots shared by the links, as many as one begin_step() reads
// at most (kBatch x max_reads_per_step): nothing read is ever dropped for want of room. When the
// pool is full (links that are not drained), reading stops and the rest waits in the kernel's
// buffer, as it waited in a socket per site. All memory is taken at construction and add_peer().
class UdpHub {
 public:
  // Datagrams one system call reads or sends at most.
  static constexpr std::size_t kBatch = 64;
  // The kernel's receive buffer asked for per peer, and the peers it grows for at most.
  static constexpr int kBufferPerPeerBytes = 1 << 20;
  static constexpr std::size_t kMaxBufferedPeers = 64;
  // Batches one begin_step() reads at most by default (1024 datagrams, the pool's slots), so that a
  // flood cannot hold the step here; what is left waits in the kernel for the next step.
  static constexpr int kMaxReadsPerStep = 16;

  // Binds like UdpLink (bind_host "0.0.0.0" or "::", port 0: ephemeral). Throws std::runtime_error
  // naming the address and the reason when it cannot resolve or bind, std::invalid_argument when
  // max_reads_per_step is below 1.
  UdpHub(asio::io_context& io, const std::string& bind_host, std::uint16_t bind_port,
         int max_reads_per_step = kMaxReadsPerStep);
  UdpHub(const UdpHub&) = delete;
  UdpHub& operator=(const UdpHub&) = delete;
  UdpHub(UdpHub&&) = delete;
  UdpHub& operator=(UdpHub&&) = delete;
  ~UdpHub() = default;

  // The address this socket sends to for host:port, resolved as UdpLink::set_peer resolves. Throws
  // std::runtime_error naming the peer when the host has no address this socket reaches.
  [[nodiscard]] asio::ip::udp::endpoint resolve(const std::string& host, std::uint16_t port);
  // A link to peer (from resolve()). Throws std::invalid_argument when another link has that address.
  HubLink& add_peer(const asio::ip::udp::endpoint& peer);

  // Reads every waiting datagram into its peer's queue; until end_step(), the links' sends are held.
  void begin_step();
  // Sends every held datagram (sendmmsg, in batches of kBatch); sends act at once again.
  void end_step();

  [[nodiscard]] std::uint16_t local_port() const { return local_.port(); }
  [[nodiscard]] const UdpHubCounters& counters() const { return counters_; }
  // The kernel's receive buffer as granted (SO_RCVBUF: twice what was asked, capped).
  [[nodiscard]] int receive_buffer_bytes() const;

 private:
  friend class HubLink;
  // A datagram read: its bytes, where it came from and when, and the next slot of its link's list.
  struct Slot {
    std::array<std::byte, kMaxDatagramBytes> bytes{};
    std::size_t size = 0;
    asio::ip::udp::endpoint source;
    udp::ControlBuffer control;
    udp::ReceiveTime arrived;
    std::int32_t next = -1;
  };
  // A datagram held for end_step(): the link it goes to and its bytes.
  struct Held {
    HubLink* link = nullptr;
    std::array<std::byte, kMaxDatagramBytes> bytes{};
    std::size_t size = 0;
  };

  void read_waiting();
  // The oldest datagram of link's list, its slot returned to the pool: its size, 0 when none.
  std::size_t take(HubLink& link, std::span<std::byte> buffer);
  void append(HubLink& link, std::int32_t index);
  void send_now(HubLink& link, std::span<const std::byte> datagram);
  // Counts a send the kernel refused (errno `error`) against link; reads off a reported ICMP error.
  void refused(HubLink& link, int error);
  void hold(HubLink& link, std::span<const std::byte> datagram);
  void flush();
  [[nodiscard]] HubLink* link_of(const asio::ip::udp::endpoint& source) const;

  asio::ip::udp::socket socket_;
  asio::ip::udp::endpoint local_;
  int fd_ = -1;
  int max_reads_per_step_;
  bool in_step_ = false;
  std::vector<std::unique_ptr<HubLink>> links_;
  // The links by their peer's address, sorted for a binary search per datagram.
  std::vector<std::pair<asio::ip::udp::endpoint, HubLink*>> by_address_;
  UdpHubCounters counters_;
  udp::ControlBuffer error_control_;

  // The pool of read datagrams, its free slots (a stack), and one read's slots and headers.
  std::vector<Slot> slots_;
  std::vector<std::int32_t> free_;
  std::vector<std::int32_t> reading_;
  std::vector<iovec> in_iov_;
  std::vector<mmsghdr> in_headers_;

  // The sending batch: what the links sent during the step.
  std::vector<Held> held_;
  std::size_t held_count_ = 0;
  std::vector<iovec> out_iov_;
  std::vector<mmsghdr> out_headers_;
};

// One step's exchange on the hubs of a node: begin_step() on each when made, end_step() on each when
// it goes, so that nothing thrown in the step leaves a hub holding the sends that follow (a stop).
class HubStep {
 public:
  explicit HubStep(std::span<UdpHub* const> hubs) : hubs_(hubs) {
    for (UdpHub* hub : hubs_) hub->begin_step();
  }
  ~HubStep() {
    for (UdpHub* hub : hubs_) hub->end_step();
  }
  HubStep(const HubStep&) = delete;
  HubStep& operator=(const HubStep&) = delete;
  HubStep(HubStep&&) = delete;
  HubStep& operator=(HubStep&&) = delete;

 private:
  std::span<UdpHub* const> hubs_;
};

}  // namespace rths
