#pragma once

#include <algorithm>
#include <cstdint>

namespace rths {

// When a silent peer counts as lost (docs/architecture.md §5), the same rule at both ends: no valid packet for
// longer than the timeout, counted from the later of its last packet and the grace start. A node
// that was itself stalled (a host or VM pause stalls every process alike) restarts the grace, so a
// pause is not mistaken for a dead peer: a step late by more than half the timeout, or more than half
// the timeout between two steps' observations (a pause inside a step's work, which its lateness,
// taken at its start, does not show). No allocation, no clock reads: the caller passes the
// wall-clock times.
class PeerWatchdog {
 public:
  PeerWatchdog(std::int64_t timeout_ns, std::int64_t grace_until_ns)
      : timeout_ns_(timeout_ns), grace_until_ns_(grace_until_ns) {}

  // Called once per step with this step's own lateness, before asking lost().
  void observe_own_lateness(std::int64_t lateness_ns, std::int64_t now_ns) {
    const bool paused_between = last_observed_ns_ >= 0 && 2 * (now_ns - last_observed_ns_) > timeout_ns_;
    if (2 * lateness_ns > timeout_ns_ || paused_between) {
      grace_until_ns_ = std::max(grace_until_ns_, now_ns);
    }
    last_observed_ns_ = now_ns;
  }
  [[nodiscard]] bool lost(std::int64_t last_heard_ns, std::int64_t now_ns) const {
    return now_ns - std::max(last_heard_ns, grace_until_ns_) > timeout_ns_;
  }

 private:
  std::int64_t timeout_ns_;
  std::int64_t grace_until_ns_;
  std::int64_t last_observed_ns_ = -1;  // the previous step's observation (-1: none yet)
};

}  // namespace rths
