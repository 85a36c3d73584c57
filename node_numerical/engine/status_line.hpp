#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace rths {

// What the step thread of a real-time run publishes for the status line: atomics, never locked, so
// that publishing costs the step (STYLE: the step loop locks nothing) next to nothing.
struct LiveFigures {
  std::atomic<std::int64_t> steps_done{0};
  std::atomic<std::int64_t> late_ticks{0};
  std::atomic<std::uint64_t> drops{0};
  std::atomic<std::uint64_t> held_steps{0};      // steps a remote site's feedback was held, all sites
  std::atomic<std::int64_t> lateness_ns{0};      // the last tick's start after its due time
  std::atomic<std::int64_t> compute_ns{0};       // the last step's own time
  std::atomic<std::int64_t> max_lateness_ns{0};  // the largest since the run began
  std::array<std::atomic<std::int64_t>, 64> round_trips{};
  std::atomic<std::size_t> round_trip_count{0};
  // The delay guard (sites with Site.delay_guard): how many have passed their warning, and the
  // largest smoothed round trip as a fraction of its site's budget (0 without a guard).
  std::atomic<int> delay_guard_warned{0};
  std::atomic<double> delay_guard_use{0.0};

  // One more round trip into the ring of the last 64; from the step thread only.
  void add_round_trip(std::int64_t round_trip_ns);
  // The median of the last 64 round trips in milliseconds; NaN before the first.
  [[nodiscard]] double round_trip_p50_ms() const;
};

// "elapsed / total, late ticks, round-trip p50, drops" on one terminal line, rewritten in place by
// its own thread every period and once more, with the final figures, when it is destroyed. With
// out == nullptr (not a terminal, or --quiet) it starts no thread and prints nothing.
class StatusLine {
 public:
  StatusLine(const LiveFigures& live, std::int64_t steps, double rate_hz, std::FILE* out,
             std::chrono::milliseconds period = std::chrono::milliseconds(500));
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;
  StatusLine(StatusLine&&) = delete;
  StatusLine& operator=(StatusLine&&) = delete;
  ~StatusLine();

  // One update's text from the figures as they are now (without the carriage return before it).
  [[nodiscard]] static std::string text(const LiveFigures& live, std::int64_t steps, double rate_hz);

 private:
  void loop();
  void print() const;

  const LiveFigures& live_;
  std::int64_t steps_;
  double rate_hz_;
  std::FILE* out_;
  std::chrono::milliseconds period_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace rths
