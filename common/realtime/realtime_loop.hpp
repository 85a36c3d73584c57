#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/realtime/latency_histogram.hpp"
#include "common/transport/link.hpp"

namespace rths::config {
class Experiment;
}  // namespace rths::config

namespace rths {

// CLOCK_MONOTONIC in ns: the time base of the real-time loop's deadlines (never steps with NTP).
std::int64_t monotonic_ns() noexcept;

// CLOCK_REALTIME in ns. Packets carry this time so that it compares with the kernel's receive
// timestamps (SO_TIMESTAMPNS), which are CLOCK_REALTIME; between hosts it is as good as their NTP/PTP.
class WallClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override;
};

// How a node process asks for real-time service: rate, spinning, SCHED_FIFO, locked memory, CPU.
struct RealtimeOptions {
  double rate_hz = 1024;        // docs/architecture.md §3: dt = 1 / rate_hz
  std::int64_t spin_ns = 0;     // busy-wait this long before each deadline instead of sleeping through it
  int priority = 0;             // SCHED_FIFO priority 1..99; 0 = leave the scheduler alone
  bool lock_memory = false;     // mlockall and a pre-faulted stack: no page fault inside the loop
  int cpu = -1;                 // pin the calling thread to this CPU; -1 = any
  bool min_timer_slack = true;  // 1 ns timer slack instead of the default 50 µs of a normal thread
};

// What an experiment's `realtime` block and rate ask of a node's step loop (both nodes build theirs
// from their config the same way).
RealtimeOptions realtime_options(const config::Experiment& experiment);

// Applies what options ask for and the process may have: timer slack, SCHED_FIFO priority, locked
// memory, CPU affinity. Scheduler and affinity apply to the calling thread, so call it from the thread
// that runs the loop (threads it creates later inherit them). Returns one line per refused item, saying
// what was refused, why, and what the run loses; a refused privilege is not an error (a laptop or an
// unprivileged container still runs, only with more lateness). Throws std::invalid_argument for a
// priority outside the scheduler's range.
std::vector<std::string> acquire_realtime(const RealtimeOptions& options);

// Gives the calling thread back normal scheduling (SCHED_OTHER) once its real-time loop is over, so
// that what a node does after it (a reference run, evaluation, outputs, plots) competes with the other
// processes of the host as any program does instead of holding a CPU against a site's stop ramp or a
// target on the same machine. Nothing to do for a thread that is not real-time.
void release_realtime();

// One step of a node, called once per period by RealtimeLoop.
class TickHandler {
 public:
  TickHandler() = default;
  TickHandler(const TickHandler&) = delete;
  TickHandler& operator=(const TickHandler&) = delete;
  TickHandler(TickHandler&&) = delete;
  TickHandler& operator=(TickHandler&&) = delete;
  virtual ~TickHandler() = default;
  // Runs step k; false ends the run after this step (test finished, safe stop).
  virtual bool tick(std::int64_t k) = 0;
};

enum class LoopEnd { kCompleted, kHandlerStopped, kStopFlag };
const char* to_string(LoopEnd end) noexcept;

struct RunResult {
  std::int64_t steps_run = 0;  // tick() calls made
  std::int64_t next_step = 0;  // first step not run: first_step + steps_run
  LoopEnd end = LoopEnd::kCompleted;
};

// Timing of the last run. Lateness is wake-up time minus deadline; compute is the time spent in tick().
struct LoopStats {
  LatencyHistogram lateness;
  LatencyHistogram compute;
  std::int64_t steps = 0;
  std::int64_t late = 0;      // ticks that woke more than half a period after their deadline
  std::int64_t overruns = 0;  // ticks that ended after the next step's deadline
};

// Periodic loop on absolute deadlines of CLOCK_MONOTONIC: step k is due at start + k / rate_hz,
// computed exactly from k (no accumulated period, so no drift over a long test). The loop sleeps
// with clock_nanosleep(TIMER_ABSTIME) until spin_ns before the deadline, then busy-waits to it.
// A late tick is never skipped or doubled: every step is integrated exactly once (a late tick still
// integrates exactly one step); a loop that fell behind runs its steps back to back until
// it is on time again, and the overrun is counted. Nothing in the loop allocates, locks or logs.
class RealtimeLoop {
 public:
  // Throws std::invalid_argument for a rate that is not positive or a negative spin.
  explicit RealtimeLoop(RealtimeOptions options);

  // Runs steps first_step .. first_step + steps - 1, step k due at start_monotonic_ns + step_offset_ns(k)
  // (start is the time of step 0, so runs resumed at a later first_step keep the same grid). stop is
  // read before every tick and while sleeping (a signal handler may set it). Resets stats().
  RunResult run(std::int64_t start_monotonic_ns, std::int64_t first_step, std::int64_t steps, TickHandler& handler,
                const std::atomic<bool>& stop);

  // Deadline of step k (k >= 0) after step 0: round(k * 1e9 / rate_hz) ns, exact in integers when the
  // rate has at most 6 decimals (1024 Hz: 976562.5 ns per step, rounded half up per step, not summed).
  [[nodiscard]] std::int64_t step_offset_ns(std::int64_t k) const noexcept;
  [[nodiscard]] const LoopStats& stats() const noexcept { return stats_; }
  [[nodiscard]] const RealtimeOptions& options() const noexcept { return options_; }

 private:
  RealtimeOptions options_;
  // rate_hz = rate_num_ / rate_den_ exactly, when rate_num_ > 0; else offsets use long double.
  std::int64_t rate_num_ = 0;
  std::int64_t rate_den_ = 1;
  std::int64_t late_threshold_ns_ = 0;
  LoopStats stats_;
};

}  // namespace rths
