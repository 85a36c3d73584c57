#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/transport/impairment.hpp"
#include "common/transport/link.hpp"

namespace rths {

// Simulated time advanced by the virtual-time runner in half steps. Sites step half a period before
// the numerical node (site step j at t_j - dt/2, numerical step k at t_k), the schedule the real-time
// nodes keep too: a command computed in numerical step k reaches site step k + 1, and the feedback of
// that site step is back for numerical step k + 1 when the network is fast. Phases: numerical step k
// is 2k, site step j is 2j - 1.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(double rate_hz) : rate_hz_(rate_hz) {}
  void set_numerical_step(std::int64_t k) { phase_ = 2 * k; }
  void set_site_step(std::int64_t j) { phase_ = 2 * j - 1; }
  [[nodiscard]] std::int64_t phase() const { return phase_; }
  [[nodiscard]] double rate_hz() const { return rate_hz_; }
  [[nodiscard]] std::int64_t now_ns() const override;

 private:
  double rate_hz_;
  std::int64_t phase_ = 0;
};

struct LinkCounters {
  std::uint64_t sent = 0;              // datagrams handed to the link
  std::uint64_t delivered = 0;         // copies received (a duplicated datagram counts twice)
  std::uint64_t dropped_overflow = 0;  // copies with no free in-flight buffer, too large, or empty
  std::uint64_t lost = 0;              // datagrams the impairment's loss model dropped
  std::uint64_t duplicated = 0;        // datagrams the impairment sent twice
};

// One direction of an in-memory link. A datagram sent at phase p with impairment delay D arrives at
// p + 2 D rate (half steps) and is received by the first step of the receiver that begins after
// that. With the half-period offset of the sites each leg therefore lags by round(D rate) steps and a
// zero delay costs nothing, as in a real-time run whose compute and network fit in half a period.
// Each datagram's fate (lost, delayed, duplicated) comes from Impairment::next_packet(). Pre-sized for
// the delay a packet exceeds with probability 1e-6 (at most kMaxInFlight datagrams), so send and
// receive never allocate; a copy that finds no free buffer is counted in dropped_overflow.
class VirtualChannel {
 public:
  // The in-flight buffers never exceed this many datagrams (8 s at 1024 Hz, 11 MB): a heavy-tailed
  // delay model would otherwise ask for more memory than any run needs.
  static constexpr std::size_t kMaxInFlight = 8192;

  VirtualChannel(const VirtualClock& clock, Impairment impairment);

  void push(std::span<const std::byte> datagram);
  std::size_t pop(std::span<std::byte> buffer);
  [[nodiscard]] const LinkCounters& counters() const { return counters_; }
  [[nodiscard]] std::int64_t now_ns() const { return clock_.now_ns(); }

 private:
  struct InFlight {
    double arrival_phase;
    std::uint64_t order;  // send order: ties and order-preserving delivery
    std::uint32_t slot;
  };
  const VirtualClock& clock_;
  Impairment impairment_;
  std::vector<std::array<std::byte, kMaxDatagramBytes>> slots_;
  std::vector<std::uint32_t> slot_size_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<InFlight> heap_;  // min-heap on (arrival_phase, order)
  double last_arrival_phase_ = -1e300;
  std::uint64_t next_order_ = 0;
  LinkCounters counters_;
};

// A node's end of a virtual link: sends into one channel, receives from the other.
class VirtualLinkEnd final : public Link {
 public:
  VirtualLinkEnd(VirtualChannel& outgoing, VirtualChannel& incoming) : out_(outgoing), in_(incoming) {}
  void send(std::span<const std::byte> datagram) override { out_.push(datagram); }
  std::size_t receive(std::span<std::byte> buffer) override { return in_.pop(buffer); }
  [[nodiscard]] std::int64_t last_receive_ns() const override { return in_.now_ns(); }

 private:
  VirtualChannel& out_;
  VirtualChannel& in_;
};

// Both directions and both ends of a link between the numerical node and one site.
struct VirtualLink {
  VirtualLink(const VirtualClock& clock, Impairment forward_impairment, Impairment backward_impairment)
      : forward(clock, std::move(forward_impairment)),
        backward(clock, std::move(backward_impairment)),
        numerical_end(this->forward, this->backward),
        site_end(this->backward, this->forward) {}
  VirtualChannel forward;   // numerical -> site
  VirtualChannel backward;  // site -> numerical
  VirtualLinkEnd numerical_end;
  VirtualLinkEnd site_end;
};

}  // namespace rths
