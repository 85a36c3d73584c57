#include "common/realtime/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace rths {

namespace {

constexpr int kMantissaBits = LatencyHistogram::kSubBucketBits + 1;  // 7: [64, 128) once shifted
constexpr auto kSubBuckets = static_cast<std::size_t>(LatencyHistogram::kSubBuckets);

// v >> shift keeps the top 7 bits of v, in [64, 128) (or v itself below 128, shift 0). Bin shift * 64 +
// (v >> shift): 0..127 for the exact values, then 64 consecutive bins per shift, i.e. per power of two.
constexpr int shift_of(std::uint64_t v) noexcept {
  return std::max(0, static_cast<int>(std::bit_width(v)) - kMantissaBits);
}

constexpr std::size_t bin_of(std::int64_t ns) noexcept {
  const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0));
  const int shift = shift_of(v);
  return static_cast<std::size_t>(shift) * kSubBuckets + static_cast<std::size_t>(v >> shift);
}

// Bin b holds [lower(b), lower(b) + width(b)).
constexpr int bin_shift(std::size_t b) noexcept {
  return b < 2 * kSubBuckets ? 0 : static_cast<int>(b / kSubBuckets) - 1;
}
constexpr std::int64_t bin_lower(std::size_t b) noexcept {
  const int shift = bin_shift(b);
  return static_cast<std::int64_t>(b - static_cast<std::size_t>(shift) * kSubBuckets) << shift;
}
// The midpoint lower + width / 2: at most width / 2 <= lower / 128 from any value in the bin.
constexpr std::int64_t bin_midpoint(std::size_t b) noexcept {
  const int shift = bin_shift(b);
  return bin_lower(b) + ((std::int64_t{1} << shift) >> 1);
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
static_assert(bin_of(0) == 0 && bin_of(127) == 127 && bin_of(128) == 128 && bin_of(129) == 128);
static_assert(bin_of(255) == 191 && bin_of(256) == 192 && bin_lower(192) == 256);
static_assert(bin_of(kMax) == LatencyHistogram::kBins - 1);
static_assert(bin_lower(LatencyHistogram::kBins - 1) == kMax - ((std::int64_t{1} << 56) - 1));
static_assert(bin_midpoint(LatencyHistogram::kBins - 1) == bin_lower(LatencyHistogram::kBins - 1) + (1LL << 55));

}  // namespace

LatencyHistogram::LatencyHistogram() : bins_(kBins, 0) {}

void LatencyHistogram::record(std::int64_t ns) noexcept {
  ns = std::max<std::int64_t>(ns, 0);
  ++bins_[bin_of(ns)];
  min_ns_ = count_ == 0 ? ns : std::min(min_ns_, ns);
  max_ns_ = std::max(max_ns_, ns);
  const auto v = static_cast<std::uint64_t>(ns);
  sum_lo_ += v;
  sum_hi_ += sum_lo_ < v ? 1 : 0;  // carry
  ++count_;
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  if (other.count_ == 0) {
    return;
  }
  for (std::size_t b = 0; b < kBins; ++b) {
    bins_[b] += other.bins_[b];
  }
  min_ns_ = count_ == 0 ? other.min_ns_ : std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
  const std::uint64_t lo = other.sum_lo_;  // copies: other may be *this
  const std::uint64_t hi = other.sum_hi_;
  sum_lo_ += lo;
  sum_hi_ += hi + (sum_lo_ < lo ? 1 : 0);
  count_ += other.count_;
}

void LatencyHistogram::reset() noexcept {
  std::fill(bins_.begin(), bins_.end(), 0);
  count_ = 0;
  min_ns_ = 0;
  max_ns_ = 0;
  sum_lo_ = 0;
  sum_hi_ = 0;
}

std::int64_t LatencyHistogram::percentile(double p) const noexcept {
  if (count_ == 0) {
    return 0;
  }
  p = std::clamp(p, 0.0, 100.0);
  // Nearest rank ceil(p/100 n), with a relative tolerance so that 99.9 % of 1000 samples is rank 999 and
  // not 1000 through the rounding of 99.9 / 100.
  const double exact = p / 100.0 * static_cast<double>(count_);
  const auto rank = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(exact * (1.0 - 1e-12))), 1, count_);
  // The first and last ranks are the exact min and max.
  if (rank == 1) {
    return min_ns_;
  }
  if (rank == count_) {
    return max_ns_;
  }
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < kBins; ++b) {
    seen += bins_[b];
    if (seen >= rank) {
      return std::clamp(bin_midpoint(b), min_ns_, max_ns_);
    }
  }
  return max_ns_;  // not reached: the bins hold count_ samples
}

double LatencyHistogram::mean_ns() const noexcept {
  if (count_ == 0) {
    return 0.0;
  }
  const double sum = std::ldexp(static_cast<double>(sum_hi_), 64) + static_cast<double>(sum_lo_);
  return sum / static_cast<double>(count_);
}

std::uint64_t LatencyHistogram::count_above(std::int64_t ns) const noexcept {
  if (count_ == 0 || ns >= max_ns_) {
    return 0;
  }
  if (ns < min_ns_) {
    return count_;
  }
  // The bins wholly above ns: those after ns's own bin, whose lower edge is <= ns.
  std::uint64_t above = 0;
  for (std::size_t b = bin_of(ns) + 1; b < kBins; ++b) {
    above += bins_[b];
  }
  return std::max<std::uint64_t>(above, 1);  // the max is above ns
}

std::vector<LatencyHistogram::Bin> LatencyHistogram::nonempty_bins() const {
  std::vector<Bin> bins;
  for (std::size_t b = 0; b < kBins; ++b) {
    if (bins_[b] == 0) continue;
    const std::int64_t width = std::int64_t{1} << bin_shift(b);
    // The last bin's upper edge would lie past the int64 range: it is clamped to the maximum.
    const std::int64_t lower = bin_lower(b);
    bins.push_back({lower, lower > kMax - width ? kMax : lower + width, bins_[b]});
  }
  return bins;
}

}  // namespace rths
