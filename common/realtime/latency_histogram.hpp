#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rths {

// Distribution of durations (tick lateness, compute time, network delay) in fixed memory, plus the exact
// minimum, maximum and sum. The bins are log-linear (as in HdrHistogram): 0..127 ns one bin per
// nanosecond, then each power of two [2^k, 2^(k+1)), k >= 7, split into 64 equal sub-buckets of 2^(k-6)
// ns. A bin is thus at most 1/64 (1.6 %) of its lower edge wide, from nanoseconds to the whole
// non-negative int64 range (292 years): microsecond lateness and 250 ms Internet round trips alike,
// with no overflow bin. The kBins (3712, 29.7 KB) bins are allocated once in the constructor, so
// record() can run inside the real-time loop (STYLE: the step loop allocates nothing).
class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 6;
  static constexpr std::int64_t kSubBuckets = std::int64_t{1} << kSubBucketBits;  // bins per power of two
  static constexpr std::int64_t kExactBelowNs = 2 * kSubBuckets;                  // values below this have a bin each
  // Bins 0..127 are the exact values; then 64 per power of two for 2^7 .. 2^62 (56 of them).
  static constexpr std::size_t kBins = static_cast<std::size_t>(kExactBelowNs + (63 - 7) * kSubBuckets);

  LatencyHistogram();

  // Negative durations (a clock step, a peer's clock ahead of ours) count as 0. O(1), no allocation.
  void record(std::int64_t ns) noexcept;
  // Adds other's samples, e.g. to pool several runs or sites.
  void merge(const LatencyHistogram& other) noexcept;
  void reset() noexcept;

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  // Nearest-rank percentile, p in [0, 100] (clamped): percentile(0) is the exact min, percentile(100)
  // the exact max. Otherwise the midpoint of the bin holding that rank, clamped to the exact [min, max]:
  // within half a bin, i.e. at most value / 128 (0.8 %), of the true nearest-rank sample, and exact
  // below 128 ns. Monotone in p. 0 when empty.
  [[nodiscard]] std::int64_t percentile(double p) const noexcept;
  [[nodiscard]] std::int64_t min_ns() const noexcept { return count_ == 0 ? 0 : min_ns_; }
  [[nodiscard]] std::int64_t max_ns() const noexcept { return max_ns_; }
  [[nodiscard]] double mean_ns() const noexcept;
  // Samples above ns, at bin resolution: samples in ns's own bin are not counted, so a sample at most
  // ns / 64 (1.6 %) above ns may be missed. The result lies between the true counts above ns + ns / 64
  // and above ns. Exact when ns < 128, when ns + 1 starts a bin, when ns < min (all samples) or
  // ns >= max (none); and never 0 when the max is above ns.
  [[nodiscard]] std::uint64_t count_above(std::int64_t ns) const noexcept;

  // One bin: the samples in [lower_ns, upper_ns).
  struct Bin {
    std::int64_t lower_ns = 0;
    std::int64_t upper_ns = 0;
    std::uint64_t count = 0;
  };
  // Every bin that holds a sample, in order (allocates: off the step, for the records).
  [[nodiscard]] std::vector<Bin> nonempty_bins() const;

 private:
  std::vector<std::uint64_t> bins_;  // kBins
  std::uint64_t count_ = 0;
  std::int64_t min_ns_ = 0;
  std::int64_t max_ns_ = 0;
  // The exact sum as 128 bits, so that any samples, even near the int64 limit, cannot overflow it.
  std::uint64_t sum_lo_ = 0;
  std::uint64_t sum_hi_ = 0;
};

}  // namespace rths
