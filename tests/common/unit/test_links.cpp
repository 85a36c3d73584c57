// In-memory links and the metrics of seed 002 Eqs. 16-19.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "common/metrics/metrics.hpp"
#include "common/transport/virtual_link.hpp"

namespace rths::test_links {
namespace {

std::span<const std::byte> bytes_of(const std::int64_t& v) {
  return std::as_bytes(std::span(&v, 1));
}

std::int64_t value_of(std::span<const std::byte> b) {
  std::int64_t v = 0;
  std::memcpy(&v, b.data(), sizeof v);
  return v;
}

config::Impairment constant(double delay_s) {
  config::Impairment i;
  i.set_delay_s(delay_s);
  return i;
}

// The forward leg: the numerical node sends its step number in every step k; returns, per site
// step j (half a period before numerical step j), what arrived.
std::vector<std::vector<std::int64_t>> run_channel(const config::Impairment& spec, std::int64_t steps) {
  VirtualClock clock(1024.0);
  VirtualChannel channel(clock, Impairment(spec));
  std::vector<std::vector<std::int64_t>> arrivals(static_cast<std::size_t>(steps));
  std::array<std::byte, kMaxDatagramBytes> buf{};
  for (std::int64_t k = 0; k < steps; ++k) {
    clock.set_site_step(k);
    while (const std::size_t n = channel.pop(buf)) {
      arrivals[static_cast<std::size_t>(k)].push_back(value_of(std::span(buf.data(), n)));
    }
    clock.set_numerical_step(k);
    channel.push(bytes_of(k));
  }
  return arrivals;
}

TEST(VirtualChannel, FeedbackWithinHalfAPeriodIsBackForTheSameStep) {
  // The backward leg: site step j runs half a period before numerical step j, so with no network
  // delay its feedback is there when numerical step j drains (zero latency, as in reference-values.md).
  VirtualClock clock(1024.0);
  VirtualChannel channel(clock, Impairment(constant(0.0)));
  std::array<std::byte, kMaxDatagramBytes> buf{};
  for (std::int64_t j = 0; j < 10; ++j) {
    clock.set_site_step(j);
    channel.push(bytes_of(j));
    clock.set_numerical_step(j);
    ASSERT_EQ(channel.pop(buf), sizeof(std::int64_t));
    EXPECT_EQ(value_of(std::span(buf.data(), sizeof(std::int64_t))), j);
  }
}

TEST(VirtualChannel, EmptyDatagramIsDroppedAndTheNextOneStillArrives) {
  // Found by the sanitizers replaying a fuzz input: an empty span (an encode() that failed) was
  // memcpy'd from a null pointer, and then delivered as size 0, which receive() means "none waiting",
  // so it also held back whatever was sent after it until the next step.
  VirtualClock clock(1024.0);
  VirtualChannel channel(clock, Impairment(constant(0.0)));
  std::array<std::byte, kMaxDatagramBytes> buf{};
  clock.set_site_step(0);
  channel.push({});
  channel.push(bytes_of(7));
  clock.set_numerical_step(0);
  ASSERT_EQ(channel.pop(buf), sizeof(std::int64_t));
  EXPECT_EQ(value_of(std::span(buf.data(), sizeof(std::int64_t))), 7);
  EXPECT_EQ(channel.pop(buf), 0U);
  EXPECT_EQ(channel.counters().sent, 2U);
  EXPECT_EQ(channel.counters().dropped_overflow, 1U);
  EXPECT_EQ(channel.counters().delivered, 1U);
}

TEST(VirtualChannel, ZeroDelayCommandArrivesForTheNextStep) {
  // The command computed in numerical step k is the target of step k + 1 (docs/architecture.md §3).
  const auto a = run_channel(constant(0.0), 10);
  EXPECT_TRUE(a[0].empty());
  for (std::int64_t k = 1; k < 10; ++k) {
    ASSERT_EQ(a[static_cast<std::size_t>(k)].size(), 1U);
    EXPECT_EQ(a[static_cast<std::size_t>(k)][0], k - 1);
  }
}

TEST(VirtualChannel, WholeStepDelayArrivesThatManyStepsLater) {
  const auto a = run_channel(constant(25.0 / 1024.0), 100);
  for (std::int64_t k = 0; k < 26; ++k) {
    EXPECT_TRUE(a[static_cast<std::size_t>(k)].empty()) << k;
  }
  for (std::int64_t k = 26; k < 100; ++k) {
    ASSERT_EQ(a[static_cast<std::size_t>(k)].size(), 1U);
    EXPECT_EQ(a[static_cast<std::size_t>(k)][0], k - 26);
  }
}

TEST(VirtualChannel, FractionalDelayRoundsToNearestStep) {
  // 25 ms = 25.6 steps: sent at t_0, it arrives at t_0 + 25.6 dt, after site step 26 began
  // (t_26 - dt/2) and before site step 27: a lag of round(25.6) = 26 steps past its target step 1.
  const auto a = run_channel(constant(0.025), 60);
  EXPECT_TRUE(a[26].empty());
  ASSERT_EQ(a[27].size(), 1U);
  EXPECT_EQ(a[27][0], 0);
  // 25.4 steps rounds down: lag 25.
  const auto b = run_channel(constant(25.4 / 1024.0), 60);
  ASSERT_EQ(b[26].size(), 1U);
  EXPECT_EQ(b[26][0], 0);
}

TEST(VirtualChannel, JitterPreservesOrderUnlessReorderingAllowed) {
  config::Impairment spec = constant(0.02);
  spec.set_jitter_s(0.01);
  spec.set_seed(7);
  std::int64_t last = -1;
  std::size_t count = 0;
  bool gap_or_burst = false;
  for (const auto& step : run_channel(spec, 3000)) {
    gap_or_burst = gap_or_burst || step.size() != 1;
    for (const auto v : step) {
      EXPECT_GT(v, last);
      last = v;
      ++count;
    }
  }
  EXPECT_TRUE(gap_or_burst) << "jitter must vary the arrival pattern";
  EXPECT_GT(count, 2900U);

  spec.set_allow_reorder(true);
  std::size_t inversions = 0;
  last = -1;
  for (const auto& step : run_channel(spec, 3000)) {
    for (const auto v : step) {
      inversions += v < last ? 1U : 0U;
      last = v;
    }
  }
  // +-10 ms of uniform jitter at ~1 ms spacing reorders most neighbours.
  EXPECT_GT(inversions, 500U);
}

TEST(VirtualChannel, SameSeedSameDelays) {
  config::Impairment spec = constant(0.02);
  spec.set_jitter_s(0.005);
  spec.set_seed(3);
  EXPECT_EQ(run_channel(spec, 500), run_channel(spec, 500));
  config::Impairment other = spec;
  other.set_seed(4);
  EXPECT_NE(run_channel(spec, 500), run_channel(other, 500));
}

TEST(Metrics, Seed002Equations16To19AgainstClosedForms) {
  // r_ref = sin over whole periods: peak 1, range 2, SD 1/sqrt(2).
  const std::size_t n = 10000;
  std::vector<double> ref(n);
  std::vector<double> scaled(n);
  std::vector<double> shifted(n);
  for (std::size_t i = 0; i < n; ++i) {
    ref[i] = std::sin(2.0 * std::numbers::pi * 5.0 * static_cast<double>(i) / static_cast<double>(n));
    scaled[i] = 1.1 * ref[i];
    shifted[i] = ref[i] + 0.02;
  }
  const ResponseMetrics s = compare_responses(scaled, ref);
  EXPECT_NEAR(s.j_peak_pct, 10.0, 1e-9);
  EXPECT_NEAR(s.rho, 1.0, 1e-12);
  EXPECT_NEAR(s.sd, 1.1 / std::sqrt(2.0), 1e-9);
  // rms(0.1 sin) / range 2 = 0.1 / sqrt(2) / 2.
  EXPECT_NEAR(s.j_rms_pct, 100.0 * 0.1 / std::sqrt(2.0) / 2.0, 1e-6);
  const ResponseMetrics d = compare_responses(shifted, ref);
  EXPECT_NEAR(d.j_rms_pct, 100.0 * 0.02 / 2.0, 1e-9);
  EXPECT_NEAR(d.rho, 1.0, 1e-12);
  const ResponseMetrics same = compare_responses(ref, ref);
  EXPECT_EQ(same.j_peak_pct, 0.0);
  EXPECT_EQ(same.j_rms_pct, 0.0);
}

}  // namespace
}  // namespace rths::test_links
