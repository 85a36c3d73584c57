#include "common/transport/virtual_link.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rths {

std::int64_t VirtualClock::now_ns() const {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(phase_) * 0.5e9 / rate_hz_));
}

namespace {
bool later(const auto& a, const auto& b) {
  return a.arrival_phase != b.arrival_phase ? a.arrival_phase > b.arrival_phase : a.order > b.order;
}
}  // namespace

VirtualChannel::VirtualChannel(const VirtualClock& clock, Impairment impairment)
    : clock_(clock), impairment_(std::move(impairment)) {
  // One packet per step in each direction (more with duplicates): the delay bound plus slack bounds
  // what is in flight. Computed in double: a heavy tail's bound may be beyond any integer.
  const double wanted =
      std::ceil(impairment_.max_delay_s() * clock_.rate_hz() * (1.0 + impairment_.duplicate_probability())) + 64.0;
  const auto capacity = static_cast<std::size_t>(std::min(wanted, static_cast<double>(kMaxInFlight)));
  slots_.resize(capacity);
  slot_size_.resize(capacity);
  free_slots_.reserve(capacity);
  for (std::size_t i = capacity; i-- > 0;) {
    free_slots_.push_back(static_cast<std::uint32_t>(i));
  }
  heap_.reserve(capacity);
}

void VirtualChannel::push(std::span<const std::byte> datagram) {
  ++counters_.sent;
  // An empty datagram cannot be received (receive() returning 0 means none waiting; UdpLink skips
  // one), and no envelope is empty: an encoder that failed hands an empty span with no data at all.
  if (datagram.empty() || datagram.size() > kMaxDatagramBytes) {
    ++counters_.dropped_overflow;
    return;
  }
  const PacketFate fate = impairment_.next_packet();
  if (fate.lost()) {
    ++counters_.lost;
    return;
  }
  if (fate.copies > 1) ++counters_.duplicated;
  for (int copy = 0; copy < fate.copies; ++copy) {
    if (free_slots_.empty()) {
      ++counters_.dropped_overflow;
      continue;
    }
    double arrival =
        static_cast<double>(clock_.phase()) + 2.0 * fate.delay_s[static_cast<std::size_t>(copy)] * clock_.rate_hz();
    if (impairment_.preserves_order()) {
      arrival = std::max(arrival, last_arrival_phase_);
      last_arrival_phase_ = arrival;
    }
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    std::memcpy(slots_[slot].data(), datagram.data(), datagram.size());
    slot_size_[slot] = static_cast<std::uint32_t>(datagram.size());
    heap_.push_back(InFlight{arrival, next_order_++, slot});
    std::push_heap(heap_.begin(), heap_.end(), [](const auto& a, const auto& b) { return later(a, b); });
  }
}

std::size_t VirtualChannel::pop(std::span<std::byte> buffer) {
  // A packet arrives just after it was sent: one arriving exactly at a step's start waits for the next.
  while (!heap_.empty() && heap_.front().arrival_phase + 1e-9 < static_cast<double>(clock_.phase())) {
    std::pop_heap(heap_.begin(), heap_.end(), [](const auto& a, const auto& b) { return later(a, b); });
    const InFlight packet = heap_.back();
    heap_.pop_back();
    free_slots_.push_back(packet.slot);
    const std::size_t size = slot_size_[packet.slot];
    if (size > buffer.size()) {
      continue;  // the receiver could not hold it: dropped, as a real socket would truncate
    }
    std::memcpy(buffer.data(), slots_[packet.slot].data(), size);
    ++counters_.delivered;
    return size;
  }
  return 0;
}

}  // namespace rths
