#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "rths/common/impairment.hpp"
#include "rths/common/link.hpp"

namespace rths {

// Simulated time advanced step by step by the virtual-time runner.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(double rate_hz) : rate_hz_(rate_hz) {}
  void set_step(std::int64_t step) { step_ = step; }
  [[nodiscard]] std::int64_t step() const { return step_; }
  [[nodiscard]] double rate_hz() const { return rate_hz_; }
  [[nodiscard]] std::int64_t now_ns() const override;

 private:
  double rate_hz_;
  std::int64_t step_ = 0;
};

struct LinkCounters {
  std::uint64_t sent = 0;
  std::uint64_t delivered = 0;
  std::uint64_t dropped_overflow = 0;
};

// One direction of an in-memory link. A datagram sent during step k with impairment delay D is
// delivered to the receiver's step k + 1 + floor(D * rate): as on a real network, nothing sent
// during a step reaches the other node before its next step (DESIGN §3 "one-step return latency").
// Pre-sized for the largest delay, so send and receive never allocate.
class VirtualChannel {
 public:
  VirtualChannel(const VirtualClock& clock, Impairment impairment);

  void push(std::span<const std::byte> datagram);
  std::size_t pop(std::span<std::byte> buffer);
  [[nodiscard]] const LinkCounters& counters() const { return counters_; }

 private:
  struct InFlight {
    std::int64_t deliver_step;
    std::uint64_t order;  // send order: ties and order-preserving delivery
    std::uint32_t slot;
  };
  const VirtualClock& clock_;
  Impairment impairment_;
  std::vector<std::array<std::byte, kMaxDatagramBytes>> slots_;
  std::vector<std::uint32_t> slot_size_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<InFlight> heap_;  // min-heap on (deliver_step, order)
  std::int64_t last_deliver_step_ = 0;
  std::uint64_t next_order_ = 0;
  LinkCounters counters_;
};

// A node's end of a virtual link: sends into one channel, receives from the other.
class VirtualLinkEnd final : public Link {
 public:
  VirtualLinkEnd(VirtualChannel& outgoing, VirtualChannel& incoming) : out_(outgoing), in_(incoming) {}
  void send(std::span<const std::byte> datagram) override { out_.push(datagram); }
  std::size_t receive(std::span<std::byte> buffer) override { return in_.pop(buffer); }

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
