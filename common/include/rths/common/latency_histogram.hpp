#pragma once

#include <cstdint>
#include <vector>

namespace rths {

// Distribution of durations (tick lateness, compute time, network delay) in fixed memory: 1 µs bins up
// to 20 ms and one overflow bin, plus the exact minimum, maximum and sum. The bins are allocated once in
// the constructor, so record() can run inside the real-time loop (STYLE: the step loop allocates
// nothing). Percentiles are at bin resolution: at most 1 µs below the true value, and never outside
// the exact [min, max].
class LatencyHistogram {
 public:
  static constexpr std::int64_t kBinWidthNs = 1'000;
  static constexpr std::int64_t kRangeNs = 20'000'000;  // above this only the count and the max are kept
  static constexpr std::size_t kBins = static_cast<std::size_t>(kRangeNs / kBinWidthNs);

  LatencyHistogram();

  // Negative durations (a clock step, a peer's clock ahead of ours) count as 0.
  void record(std::int64_t ns) noexcept;
  // Adds other's samples, e.g. to pool several runs or sites.
  void merge(const LatencyHistogram& other) noexcept;
  void reset() noexcept;

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  // Nearest-rank percentile, p in [0, 100] (clamped): percentile(0) is the min, percentile(100) the max.
  // 0 when empty.
  [[nodiscard]] std::int64_t percentile(double p) const noexcept;
  [[nodiscard]] std::int64_t min_ns() const noexcept { return count_ == 0 ? 0 : min_ns_; }
  [[nodiscard]] std::int64_t max_ns() const noexcept { return max_ns_; }
  [[nodiscard]] double mean_ns() const noexcept;
  // Samples wholly above ns at bin resolution: a sample less than 1 µs above ns, in the same bin, is not
  // counted. Exact when ns + 1 starts a bin, or when the samples and ns are whole microseconds.
  // Above the 20 ms range only "at least one" can be told, from the exact max.
  [[nodiscard]] std::uint64_t count_above(std::int64_t ns) const noexcept;

 private:
  std::vector<std::uint64_t> bins_;  // kBins + 1: the last one is the overflow bin
  std::uint64_t count_ = 0;
  std::int64_t min_ns_ = 0;
  std::int64_t max_ns_ = 0;
  std::int64_t sum_ns_ = 0;
};

}  // namespace rths
