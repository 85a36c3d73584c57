// The real-time loop (common/realtime/realtime_loop.hpp) on the wall clock. No assertion on how late the loop
// is: the machine is shared; only on what must hold however loaded it is. (Its latency histogram and
// the acquisition of real-time resources: unit/test_realtime_loop.cpp.)
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigaction/pthread_kill
#include <sys/mman.h>
#include <time.h>  // NOLINT(modernize-deprecated-headers): POSIX clock_gettime/CLOCK_REALTIME

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/realtime/latency_histogram.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "support/alloc_counter.hpp"

namespace rths::test_realtime_loop {
namespace {

constexpr std::int64_t kLead = 2'000'000;  // start 2 ms ahead so that step 0 is not late by construction

// round(k 1e9 / 1024) in integers, half up.
std::int64_t expected_offset(std::int64_t k) {
  return (2 * k * 1'000'000'000 + 1024) / 2048;
}

// Records when each step ran; optionally sleeps on one step, stops, or raises the stop flag.
class Recorder final : public TickHandler {
 public:
  explicit Recorder(std::size_t capacity) {
    steps.reserve(capacity);
    times.reserve(capacity);
  }
  bool tick(std::int64_t k) override {
    times.push_back(monotonic_ns());
    steps.push_back(k);
    if (k == sleep_at) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
    }
    if (k == raise_stop_at) {
      stop_flag->store(true);
    }
    return k != return_false_at;
  }
  std::vector<std::int64_t> steps;
  std::vector<std::int64_t> times;
  std::int64_t sleep_at = -1;
  std::int64_t sleep_ns = 0;
  std::int64_t return_false_at = -1;
  std::int64_t raise_stop_at = -1;
  std::atomic<bool>* stop_flag = nullptr;
};

class Empty final : public TickHandler {
 public:
  bool tick(std::int64_t /*k*/) override { return true; }
};

TEST(RealtimeLoop, DeadlinesAreExactForTenMillionSteps) {
  const RealtimeLoop loop(RealtimeOptions{});
  for (std::int64_t k = 0; k <= 10'000'000; ++k) {
    if (loop.step_offset_ns(k) != expected_offset(k)) {
      FAIL() << "step " << k << ": " << loop.step_offset_ns(k) << " ns, expected " << expected_offset(k);
    }
  }
  EXPECT_EQ(loop.step_offset_ns(1), 976'563);  // 976562.5 rounded half up, per step, not summed
  EXPECT_EQ(loop.step_offset_ns(1024), 1'000'000'000);
  EXPECT_EQ(loop.step_offset_ns(10'000'000), 9'765'625'000'000);
}

TEST(RealtimeLoop, FractionalRateIsExact) {
  RealtimeOptions options;
  options.rate_hz = 333.3;  // 3333 / 10 Hz
  const RealtimeLoop loop(options);
  EXPECT_EQ(loop.step_offset_ns(3333), 10'000'000'000);
  EXPECT_EQ(loop.step_offset_ns(1), 3'000'300);  // 1e10 / 3333 = 3000300.03
}

TEST(RealtimeLoop, RejectsBadOptions) {
  RealtimeOptions options;
  options.rate_hz = 0;
  EXPECT_THROW(RealtimeLoop{options}, std::invalid_argument);
  options.rate_hz = 1024;
  options.spin_ns = -1;
  EXPECT_THROW(RealtimeLoop{options}, std::invalid_argument);
}

TEST(RealtimeLoop, CallsEveryStepOnceAndNeverBeforeItsDeadline) {
  RealtimeLoop loop(RealtimeOptions{});
  constexpr std::int64_t kSteps = 200;
  constexpr std::int64_t kFirst = 7;  // the grid is anchored at step 0
  Recorder rec(kSteps);
  std::atomic<bool> stop{false};
  const std::int64_t start = monotonic_ns() + kLead - expected_offset(kFirst);
  const RunResult r = loop.run(start, kFirst, kSteps, rec, stop);
  EXPECT_EQ(r.end, LoopEnd::kCompleted);
  EXPECT_EQ(r.steps_run, kSteps);
  EXPECT_EQ(r.next_step, kFirst + kSteps);
  ASSERT_EQ(rec.steps.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t i = 0; i < rec.steps.size(); ++i) {
    const std::int64_t k = kFirst + static_cast<std::int64_t>(i);
    EXPECT_EQ(rec.steps[i], k);
    EXPECT_GE(rec.times[i], start + expected_offset(k)) << "step " << k << " ran before its deadline";
  }
  const LoopStats& s = loop.stats();
  EXPECT_EQ(s.steps, kSteps);
  EXPECT_EQ(s.lateness.count(), static_cast<std::uint64_t>(kSteps));
  EXPECT_EQ(s.compute.count(), static_cast<std::uint64_t>(kSteps));
  EXPECT_GE(s.lateness.min_ns(), 0);
}

TEST(RealtimeLoop, SpinningStillNeverRunsEarly) {
  RealtimeOptions options;
  options.spin_ns = 100'000;
  RealtimeLoop loop(options);
  constexpr std::int64_t kSteps = 50;
  Recorder rec(kSteps);
  std::atomic<bool> stop{false};
  const std::int64_t start = monotonic_ns() + kLead;
  EXPECT_EQ(loop.run(start, 0, kSteps, rec, stop).steps_run, kSteps);
  for (std::size_t k = 0; k < rec.times.size(); ++k) {
    EXPECT_GE(rec.times[k], start + expected_offset(static_cast<std::int64_t>(k)));
  }
}

TEST(RealtimeLoop, OverrunningTickStillRunsEachStepOnce) {
  RealtimeLoop loop(RealtimeOptions{});
  constexpr std::int64_t kSteps = 40;
  Recorder rec(kSteps);
  rec.sleep_at = 10;
  rec.sleep_ns = 3 * expected_offset(1);  // three periods
  std::atomic<bool> stop{false};
  const RunResult r = loop.run(monotonic_ns() + kLead, 0, kSteps, rec, stop);
  EXPECT_EQ(r.end, LoopEnd::kCompleted);
  ASSERT_EQ(rec.steps.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t i = 0; i < rec.steps.size(); ++i) {
    EXPECT_EQ(rec.steps[i], static_cast<std::int64_t>(i));
  }
  EXPECT_GE(loop.stats().overruns, 1);
  EXPECT_GE(loop.stats().late, 1);  // step 11 started about two periods late
}

TEST(RealtimeLoop, FarBehindCatchesUpWithoutSkipping) {
  // Start a second in the past: every step is overdue, none is skipped, every one is late and overrun.
  RealtimeLoop loop(RealtimeOptions{});
  constexpr std::int64_t kSteps = 100;
  Recorder rec(kSteps);
  std::atomic<bool> stop{false};
  const RunResult r = loop.run(monotonic_ns() - 1'000'000'000, 0, kSteps, rec, stop);
  EXPECT_EQ(r.steps_run, kSteps);
  EXPECT_EQ(rec.steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(loop.stats().late, kSteps);
  EXPECT_EQ(loop.stats().overruns, kSteps);
  EXPECT_GE(loop.stats().lateness.min_ns(), 1'000'000'000 - expected_offset(kSteps));
}

TEST(RealtimeLoop, StopFlagEndsTheRun) {
  RealtimeLoop loop(RealtimeOptions{});
  Recorder rec(100);
  std::atomic<bool> stop{false};
  rec.raise_stop_at = 10;  // as a signal handler would, between two ticks
  rec.stop_flag = &stop;
  const RunResult r = loop.run(monotonic_ns() + kLead, 0, 100, rec, stop);
  EXPECT_EQ(r.end, LoopEnd::kStopFlag);
  EXPECT_EQ(r.steps_run, 11);
  EXPECT_EQ(r.next_step, 11);
  EXPECT_EQ(loop.stats().steps, 11);
  EXPECT_STREQ(to_string(r.end), "stop requested");

  // Already set: nothing runs, not even the wait for step 0.
  Recorder none(1);
  const RunResult r0 = loop.run(monotonic_ns() + 10'000'000'000, 0, 100, none, stop);
  EXPECT_EQ(r0.end, LoopEnd::kStopFlag);
  EXPECT_EQ(r0.steps_run, 0);
  EXPECT_TRUE(none.steps.empty());
}

TEST(RealtimeLoop, StopFlagInterruptsTheWaitForStart) {
  // A signal during the sleep ends it at once when its handler set the flag (Ctrl-C before the start).
  static std::atomic<bool> stop{false};
  struct sigaction action {};
  action.sa_handler = [](int /*signal*/) { stop.store(true); };
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  RealtimeLoop loop(RealtimeOptions{});
  Empty handler;
  const pthread_t loop_thread = pthread_self();
  std::thread signaller([loop_thread] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pthread_kill(loop_thread, SIGUSR1);
  });
  const std::int64_t t0 = monotonic_ns();
  const RunResult r = loop.run(t0 + 60'000'000'000, 0, 10, handler, stop);
  const std::int64_t waited = monotonic_ns() - t0;
  signaller.join();
  sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_EQ(r.end, LoopEnd::kStopFlag);
  EXPECT_EQ(r.steps_run, 0);
  EXPECT_LT(waited, 30'000'000'000);  // not a timing assertion: only "did not sleep the full minute"
}

TEST(RealtimeLoop, HandlerReturningFalseEndsTheRun) {
  RealtimeLoop loop(RealtimeOptions{});
  Recorder rec(100);
  rec.return_false_at = 5;
  std::atomic<bool> stop{false};
  const RunResult r = loop.run(monotonic_ns() + kLead, 0, 100, rec, stop);
  EXPECT_EQ(r.end, LoopEnd::kHandlerStopped);
  EXPECT_EQ(r.steps_run, 6);
  EXPECT_EQ(r.next_step, 6);
  EXPECT_EQ(rec.steps.back(), 5);
}

TEST(RealtimeLoop, RunDoesNotAllocate) {
  RealtimeOptions options;
  options.spin_ns = 50'000;
  RealtimeLoop loop(options);
  Empty handler;
  std::atomic<bool> stop{false};
  const std::uint64_t before = test::allocations();
  const RunResult r = loop.run(monotonic_ns() + kLead, 0, 50, handler, stop);
  EXPECT_EQ(test::allocations(), before);
  EXPECT_EQ(r.steps_run, 50);
}

TEST(RealtimeLoop, WallClockIsRealtime) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::int64_t before = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  const WallClock clock;
  const std::int64_t now = clock.now_ns();
  EXPECT_GE(now, before);
  EXPECT_LT(now - before, 60'000'000'000);  // same clock, not CLOCK_MONOTONIC (seconds since boot)
}

}  // namespace
}  // namespace rths::test_realtime_loop
