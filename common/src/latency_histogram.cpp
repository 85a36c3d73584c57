#include "rths/common/latency_histogram.hpp"

#include <algorithm>
#include <cmath>

namespace rths {

namespace {

std::size_t bin_of(std::int64_t ns) {
  return ns >= LatencyHistogram::kRangeNs ? LatencyHistogram::kBins
                                          : static_cast<std::size_t>(ns / LatencyHistogram::kBinWidthNs);
}

}  // namespace

LatencyHistogram::LatencyHistogram() : bins_(kBins + 1, 0) {}

void LatencyHistogram::record(std::int64_t ns) noexcept {
  ns = std::max<std::int64_t>(ns, 0);
  ++bins_[bin_of(ns)];
  min_ns_ = count_ == 0 ? ns : std::min(min_ns_, ns);
  max_ns_ = std::max(max_ns_, ns);
  sum_ns_ += ns;
  ++count_;
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  if (other.count_ == 0) {
    return;
  }
  for (std::size_t b = 0; b < bins_.size(); ++b) {
    bins_[b] += other.bins_[b];
  }
  min_ns_ = count_ == 0 ? other.min_ns_ : std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
  sum_ns_ += other.sum_ns_;
  count_ += other.count_;
}

void LatencyHistogram::reset() noexcept {
  std::fill(bins_.begin(), bins_.end(), 0);
  count_ = 0;
  min_ns_ = 0;
  max_ns_ = 0;
  sum_ns_ = 0;
}

std::int64_t LatencyHistogram::percentile(double p) const noexcept {
  if (count_ == 0) {
    return 0;
  }
  p = std::clamp(p, 0.0, 100.0);
  // Nearest rank ceil(p/100 n), with a relative tolerance so that 99.9 % of 1000 samples is rank 999 and
  // not 1000 through the rounding of 99.9 / 100.
  const double exact = p / 100.0 * static_cast<double>(count_);
  const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(exact * (1.0 - 1e-12))));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < kBins; ++b) {
    seen += bins_[b];
    if (seen >= rank) {
      return std::clamp(static_cast<std::int64_t>(b) * kBinWidthNs, min_ns_, max_ns_);
    }
  }
  return max_ns_;  // the rank lies in the overflow bin, of which only the max is known
}

double LatencyHistogram::mean_ns() const noexcept {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_) / static_cast<double>(count_);
}

std::uint64_t LatencyHistogram::count_above(std::int64_t ns) const noexcept {
  if (ns >= kRangeNs) {
    return max_ns_ > ns ? 1 : 0;
  }
  // The first bin whose lower edge is above ns.
  const std::size_t first = ns < 0 ? 0 : static_cast<std::size_t>(ns / kBinWidthNs) + 1;
  std::uint64_t above = 0;
  for (std::size_t b = first; b < bins_.size(); ++b) {
    above += bins_[b];
  }
  return above;
}

}  // namespace rths
