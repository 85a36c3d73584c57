// The live status line of a real-time run: its own thread reads what the step thread publishes
// (deploy/check-sanitizers.sh runs these under ThreadSanitizer).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "node_numerical/engine/status_line.hpp"

namespace rths::test_status_line {
namespace {

std::string contents(std::FILE* file) {
  EXPECT_EQ(std::fseek(file, 0, SEEK_SET), 0);
  std::string text;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) {
    text.push_back(static_cast<char>(c));
  }
  return text;
}

TEST(StatusLine, RoundTripIsTheMedianOfTheLast64) {
  LiveFigures live;
  // 1..100 ms: the ring keeps 37..100 ms, whose upper median (element 32 of 64) is 69 ms.
  for (std::int64_t ms = 1; ms <= 100; ++ms) {
    live.add_round_trip(ms * 1'000'000);
  }
  live.steps_done.store(2048);
  live.late_ticks.store(5);
  live.drops.store(2);
  EXPECT_EQ(StatusLine::text(live, 4097, 1024.0),
            "   2.00 / 4.00 s  late ticks 5  round trip p50 69.000 ms  drops 2   ");

  const LiveFigures none;
  EXPECT_EQ(StatusLine::text(none, 1025, 1024.0), "   0.00 / 1.00 s  late ticks 0  round trip p50 -  drops 0   ");
}

// A step thread publishes while the status line prints every millisecond: the last update,
// printed when the status line ends, shows the final figures, and the line is closed.
TEST(StatusLine, LastUpdateShowsTheFinalFiguresWhilePublishedConcurrently) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::tmpfile(), &std::fclose);
  ASSERT_NE(out, nullptr);
  constexpr std::int64_t kSteps = 4096;
  LiveFigures live;
  {
    const StatusLine status(live, kSteps, 1024.0, out.get(), std::chrono::milliseconds(1));
    std::thread step_thread([&live] {
      for (std::int64_t k = 0; k < kSteps; ++k) {
        if (k % 512 == 0) {
          live.late_ticks.fetch_add(1, std::memory_order_relaxed);
        }
        live.add_round_trip(500'000);  // 0.5 ms every step
        live.drops.store(static_cast<std::uint64_t>(k / 1000), std::memory_order_relaxed);
        live.steps_done.store(k + 1, std::memory_order_relaxed);
        if (k % 64 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));  // let the printer interleave
        }
      }
    });
    step_thread.join();
  }
  const std::string text = contents(out.get());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const std::size_t last = text.rfind('\r');
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(text.substr(last + 1), "   4.00 / 4.00 s  late ticks 8  round trip p50 0.500 ms  drops 4   \n");
}

}  // namespace
}  // namespace rths::test_status_line
