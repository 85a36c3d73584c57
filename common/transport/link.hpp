#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rths {

// Largest datagram a link carries; bigger ones are dropped and counted (docs/architecture.md §5). Below the
// Ethernet MTU so that no packet is ever fragmented.
constexpr std::size_t kMaxDatagramBytes = 1400;

// One end of a bidirectional datagram channel between two nodes. The in-memory links of virtual
// time and the UDP links of real time implement it, so a node never knows which it has (docs/architecture.md §4).
// Neither call blocks or allocates.
class Link {
 public:
  Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;
  Link(Link&&) = delete;
  Link& operator=(Link&&) = delete;
  virtual ~Link() = default;

  // Sends one datagram; a datagram that cannot be queued is dropped (and counted by the link).
  virtual void send(std::span<const std::byte> datagram) = 0;
  // Copies the next datagram that has arrived into buffer and returns its size; 0 when none is
  // waiting. A datagram larger than the buffer is dropped.
  virtual std::size_t receive(std::span<std::byte> buffer) = 0;
  // When the datagram receive() last returned arrived (ns on the wall clock: the kernel's receive
  // timestamp on UDP, the simulated time in virtual time).
  [[nodiscard]] virtual std::int64_t last_receive_ns() const = 0;
};

// Monotonic time as a node sees it: the simulated clock in virtual time, the wall clock later.
class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  Clock(Clock&&) = delete;
  Clock& operator=(Clock&&) = delete;
  virtual ~Clock() = default;
  [[nodiscard]] virtual std::int64_t now_ns() const = 0;
};

}  // namespace rths
