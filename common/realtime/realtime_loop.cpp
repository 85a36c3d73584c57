#include "common/realtime/realtime_loop.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>  // NOLINT(modernize-deprecated-headers): POSIX clock_gettime/clock_nanosleep

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "experiment.pb.h"

namespace rths {

namespace {

constexpr std::int64_t kNsPerS = 1'000'000'000;

std::int64_t read_clock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * kNsPerS + ts.tv_nsec;
}

timespec to_timespec(std::int64_t ns) noexcept {
  ns = std::max<std::int64_t>(ns, 0);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / kNsPerS);
  ts.tv_nsec = static_cast<long>(ns % kNsPerS);
  return ts;
}

// Tells the core that this is a spin-wait: saves power and lets a sibling hyper-thread run.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// A long wait (for an agreed start time) is cut into slices, so that a stop flag raised just before
// the sleep began, which no EINTR reports, still ends it within one slice.
constexpr std::int64_t kSleepSliceNs = 100'000'000;

// Sleeps (then spins for the last spin_ns) until deadline on CLOCK_MONOTONIC. False when the stop flag
// was raised meanwhile (a signal interrupts the sleep), so that a Ctrl-C before the start is prompt.
bool wait_until(std::int64_t deadline, std::int64_t spin_ns, const std::atomic<bool>& stop) noexcept {
  const std::int64_t wake_at = deadline - spin_ns;
  for (std::int64_t now = monotonic_ns(); wake_at - now > kSleepSliceNs; now = monotonic_ns()) {
    const timespec slice = to_timespec(now + kSleepSliceNs);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &slice, nullptr);
    if (stop.load(std::memory_order_relaxed)) {
      return false;
    }
  }
  const timespec wake = to_timespec(wake_at);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr) == EINTR) {
    if (stop.load(std::memory_order_relaxed)) {
      return false;
    }
  }
  if (spin_ns > 0) {
    while (monotonic_ns() < deadline) {
      cpu_relax();
    }
  }
  return true;
}

std::string error_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// Touches the stack the loop will use, so that its pages are resident (and, after mlockall, locked)
// before the first tick instead of faulting inside it.
[[gnu::noinline]] void prefault_stack() noexcept {
  constexpr std::size_t kBytes = std::size_t{256} * 1024;
  constexpr std::size_t kPage = 4096;
  std::array<unsigned char, kBytes> stack;             // deliberately on the stack, uninitialised
  volatile unsigned char* const touch = stack.data();  // volatile: the stores must not be optimised away
  for (std::size_t i = 0; i < kBytes; i += kPage) {
    touch[i] = 0;
  }
}

}  // namespace

std::int64_t monotonic_ns() noexcept {
  return read_clock(CLOCK_MONOTONIC);
}

std::int64_t WallClock::now_ns() const {
  return read_clock(CLOCK_REALTIME);
}

RealtimeOptions realtime_options(const config::Experiment& experiment) {
  RealtimeOptions rt;
  rt.rate_hz = experiment.rate_hz();
  rt.priority = experiment.realtime().priority();
  rt.lock_memory = experiment.realtime().lock_memory();
  rt.spin_ns = static_cast<std::int64_t>(experiment.realtime().spin_s() * 1e9);
  rt.cpu = experiment.realtime().cpu();
  return rt;
}

std::vector<std::string> acquire_realtime(const RealtimeOptions& options) {
  std::vector<std::string> warnings;
  if (options.priority != 0) {
    const int lowest = sched_get_priority_min(SCHED_FIFO);
    const int highest = sched_get_priority_max(SCHED_FIFO);
    if (options.priority < lowest || options.priority > highest) {
      throw std::invalid_argument(
          fmt::format("real-time priority {} is outside SCHED_FIFO's {}..{} (0 leaves the "
                      "scheduler alone)",
                      options.priority, lowest, highest));
    }
  }

  if (options.min_timer_slack) {
    // A SCHED_OTHER thread's sleeps may end up to 50 µs late by default (timer slack); a SCHED_FIFO
    // thread has none, so this matters when the priority is refused.
    if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0) {
      warnings.push_back(
          fmt::format("timer slack of 1 ns refused ({}): sleeps may end up to 50 µs late", error_text(errno)));
    }
  }
  if (options.priority != 0) {
    sched_param param{};
    param.sched_priority = options.priority;
    if (const int error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); error != 0) {
      warnings.push_back(
          fmt::format("real-time priority {} refused ({}): running with normal scheduling; lateness will be higher "
                      "(needs CAP_SYS_NICE or an rtprio limit, ulimit -r)",
                      options.priority, error_text(error)));
    }
  }
  if (options.lock_memory) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
      warnings.push_back(
          fmt::format("memory lock refused ({}): pages may fault inside the loop (needs CAP_IPC_LOCK or a larger "
                      "memlock limit, ulimit -l)",
                      error_text(errno)));
    }
    prefault_stack();  // worth it even unlocked: the pages are then resident unless memory runs short
  }
  if (options.cpu >= 0) {
    if (options.cpu >= CPU_SETSIZE) {
      warnings.push_back(
          fmt::format("CPU {} does not exist (at most {} CPUs): the loop runs on any CPU", options.cpu, CPU_SETSIZE));
    } else {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(static_cast<std::size_t>(options.cpu), &set);
      if (const int error = pthread_setaffinity_np(pthread_self(), sizeof set, &set); error != 0) {
        warnings.push_back(
            fmt::format("affinity to CPU {} refused ({}): the loop runs on any CPU", options.cpu, error_text(error)));
      }
    }
  }
  return warnings;
}

void release_realtime() {
  int policy = SCHED_OTHER;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) != 0 || (policy != SCHED_FIFO && policy != SCHED_RR)) {
    return;
  }
  param.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &param);  // dropping a privilege is never refused
}

const char* to_string(LoopEnd end) noexcept {
  switch (end) {
    case LoopEnd::kCompleted:
      return "completed";
    case LoopEnd::kHandlerStopped:
      return "stopped by the handler";
    case LoopEnd::kStopFlag:
      return "stop requested";
  }
  return "unknown";
}

RealtimeLoop::RealtimeLoop(RealtimeOptions options) : options_(options) {
  if (!(options_.rate_hz > 0.0) || !std::isfinite(options_.rate_hz)) {
    throw std::invalid_argument(fmt::format("rate_hz must be positive, got {}", options_.rate_hz));
  }
  if (options_.spin_ns < 0) {
    throw std::invalid_argument(fmt::format("spin_ns must not be negative, got {}", options_.spin_ns));
  }
  // Write the rate as num / den with den = 10^d, d <= 6, so that deadlines are exact integer arithmetic;
  // num < 4.6e9 keeps the rounding in step_offset_ns within int64.
  for (std::int64_t den = 1; den <= 1'000'000; den *= 10) {
    const double scaled = options_.rate_hz * static_cast<double>(den);
    const double num = std::round(scaled);
    if (num >= 1.0 && num < 4.6e9 && std::abs(scaled - num) <= 1e-9 * scaled) {
      rate_num_ = static_cast<std::int64_t>(num);
      rate_den_ = den;
      break;
    }
  }
  late_threshold_ns_ = std::llround(0.5e9 / options_.rate_hz);
}

std::int64_t RealtimeLoop::step_offset_ns(std::int64_t k) const noexcept {
  if (rate_num_ > 0 && k >= 0 && k <= std::numeric_limits<std::int64_t>::max() / rate_den_) {
    // k / rate = k den / num seconds: whole seconds, then the remainder rounded half up.
    const std::int64_t n = k * rate_den_;
    const std::int64_t whole_s = n / rate_num_;
    const std::int64_t rest = n % rate_num_;
    return whole_s * kNsPerS + (2 * rest * kNsPerS + rate_num_) / (2 * rate_num_);
  }
  return static_cast<std::int64_t>(std::llround(static_cast<long double>(k) * 1e9L / options_.rate_hz));
}

RunResult RealtimeLoop::run(std::int64_t start_monotonic_ns, std::int64_t first_step, std::int64_t steps,
                            TickHandler& handler, const std::atomic<bool>& stop) {
  if (first_step < 0 || steps < 0) {
    throw std::invalid_argument(
        fmt::format("run needs first_step >= 0 and steps >= 0, got first_step {} and steps {}", first_step, steps));
  }
  stats_.lateness.reset();
  stats_.compute.reset();
  stats_.steps = 0;
  stats_.late = 0;
  stats_.overruns = 0;

  RunResult result;
  result.next_step = first_step;
  std::int64_t deadline = start_monotonic_ns + step_offset_ns(first_step);
  for (std::int64_t k = first_step; k < first_step + steps; ++k) {
    if (stop.load(std::memory_order_relaxed) || !wait_until(deadline, options_.spin_ns, stop)) {
      result.end = LoopEnd::kStopFlag;
      break;
    }
    const std::int64_t woke = monotonic_ns();
    const bool more = handler.tick(k);
    const std::int64_t done = monotonic_ns();

    const std::int64_t next_deadline = start_monotonic_ns + step_offset_ns(k + 1);
    const std::int64_t lateness = woke - deadline;
    stats_.lateness.record(lateness);
    stats_.compute.record(done - woke);
    stats_.late += lateness > late_threshold_ns_ ? 1 : 0;
    // Step k+1 will start late; it still runs (no skipped step) and the loop catches up.
    stats_.overruns += done > next_deadline ? 1 : 0;
    ++stats_.steps;
    ++result.steps_run;
    deadline = next_deadline;
    if (!more) {
      result.end = LoopEnd::kHandlerStopped;
      break;
    }
  }
  result.next_step = first_step + result.steps_run;
  return result;
}

}  // namespace rths
