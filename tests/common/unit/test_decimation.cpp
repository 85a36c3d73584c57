// What a run's plots draw of a history (decimation.hpp): fewer points, the same picture. A spike of a
// single sample must survive, a short history must pass whole, a NaN must stay visible.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "common/records/decimation.hpp"

namespace rths::test_decimation {
namespace {

std::vector<double> sine(std::size_t n) {
  std::vector<double> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = std::sin(0.001 * static_cast<double>(i));
  return y;
}

std::vector<std::size_t> every(std::size_t n) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), 0U);
  return all;
}

bool contains(const std::vector<std::size_t>& kept, std::size_t i) {
  return std::find(kept.begin(), kept.end(), i) != kept.end();
}

// A history with fewer samples than the picture has pixel columns is drawn whole.
TEST(Decimation, AHistoryShorterThanThePictureIsKeptWhole) {
  for (const std::size_t n : {0U, 1U, 2U, 999U, 1000U}) {
    EXPECT_EQ(decimate_min_max(sine(n), 1000), every(n)) << n;
  }
}

// One sample far above (or below) its neighbours, anywhere in a long record, is kept: the picture
// shows the peak the record has.
TEST(Decimation, ASingleSampleSpikeSurvives) {
  constexpr std::size_t kSamples = 55'030;  // seed 002's whole El Centro run at 1024 Hz
  for (const std::size_t at : {0UL, 1UL, 12'345UL, 27'514UL, kSamples - 1}) {
    for (const double spike : {5.0, -5.0}) {
      std::vector<double> y = sine(kSamples);
      y[at] = spike;
      const std::vector<std::size_t> kept = decimate_min_max(y, 1000);
      EXPECT_TRUE(contains(kept, at)) << "spike " << spike << " at " << at;
      EXPECT_LE(kept.size(), 4U * 1000U);
      EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
      EXPECT_EQ(std::adjacent_find(kept.begin(), kept.end()), kept.end()) << "an index twice";
    }
  }
}

// Every pixel column keeps its extremes, so the drawn envelope is the record's: the largest and
// smallest value of each column is among the kept samples.
TEST(Decimation, EachColumnKeepsItsExtremes) {
  std::vector<double> y = sine(10'000);
  for (std::size_t i = 0; i < y.size(); i += 7) y[i] += 0.3 * std::cos(static_cast<double>(i));
  const std::vector<std::size_t> kept = decimate_min_max(y, 100);
  for (std::size_t c = 0; c < 100; ++c) {
    const auto first = y.begin() + static_cast<std::ptrdiff_t>(100 * c);
    const auto last = first + 100;
    EXPECT_TRUE(contains(kept, static_cast<std::size_t>(std::max_element(first, last) - y.begin()))) << c;
    EXPECT_TRUE(contains(kept, static_cast<std::size_t>(std::min_element(first, last) - y.begin()))) << c;
  }
}

TEST(Decimation, ANonFiniteSampleStaysVisible) {
  std::vector<double> y = sine(20'000);
  y[7'777] = std::numeric_limits<double>::quiet_NaN();
  y[15'000] = std::numeric_limits<double>::infinity();
  const std::vector<std::size_t> kept = decimate_min_max(y, 1000);
  EXPECT_TRUE(contains(kept, 7'777));
  EXPECT_TRUE(contains(kept, 15'000));
}

// A force-displacement loop keeps its tips (a spike), its ends, and drops points within half a pixel
// of the last one kept.
TEST(Decimation, APathKeepsItsTipsAndDropsWhatThePictureCannotShow) {
  constexpr std::size_t kSamples = 400'000;  // 10 cycles, 40 000 samples each: many per pixel
  std::vector<double> x(kSamples);
  std::vector<double> y(kSamples);
  for (std::size_t i = 0; i < kSamples; ++i) {
    const double phase = 2.0 * M_PI * 10.0 * static_cast<double>(i) / kSamples;
    x[i] = std::sin(phase);
    y[i] = std::sin(phase + 0.5);
  }
  y[234'567] = 3.0;  // one sample's spike
  const std::vector<std::size_t> kept = decimate_path(x, y, 1000, 650, kSamples);
  EXPECT_TRUE(contains(kept, 0));
  EXPECT_TRUE(contains(kept, kSamples - 1));
  EXPECT_TRUE(contains(kept, 234'567));
  EXPECT_TRUE(contains(kept, 234'568)) << "the way back from the spike";
  EXPECT_LT(kept.size(), kSamples / 4);
  // Every dropped point lies within half a pixel of the last point kept before it.
  const double half_x = 0.5 * 2.0 / 1000.0;
  const double half_y = 0.5 * (3.0 + 1.0) / 650.0;
  std::size_t last = 0;
  for (std::size_t i = 1, k = 1; i < kSamples; ++i) {
    if (k < kept.size() && kept[k] == i) {
      last = i;
      ++k;
      continue;
    }
    ASSERT_LT(std::abs(x[i] - x[last]), half_x * 1.0001) << i;
    ASSERT_LT(std::abs(y[i] - y[last]), half_y * 1.0001) << i;
  }
}

// A path of noise, which moves by more than a pixel at every sample, is thinned to the points asked
// for at most, its ends and its largest spike kept.
TEST(Decimation, ANoisyPathIsThinnedToItsBudgetKeepingItsSpike) {
  constexpr std::size_t kSamples = 42'000;
  std::vector<double> x(kSamples);
  std::vector<double> y(kSamples);
  for (std::size_t i = 0; i < kSamples; ++i) {
    const double t = static_cast<double>(i) / 1024.0;
    // A loop under a noise of 20 % of its amplitude, different at every sample.
    x[i] = std::sin(2.0 * M_PI * 2.3 * t) + 0.2 * std::sin(12345.678 * static_cast<double>(i * i % 977));
    y[i] = std::sin(2.0 * M_PI * 2.3 * t + 0.4) + 0.2 * std::cos(7654.321 * static_cast<double>(i * i % 983));
  }
  y[30'000] = 5.0;
  EXPECT_GT(decimate_path(x, y, 1000, 650, kSamples).size(), kSamples / 2) << "noise moves every sample";
  const std::vector<std::size_t> kept = decimate_path(x, y, 1000, 650, 4000);
  EXPECT_LE(kept.size(), 4000U);
  EXPECT_GT(kept.size(), 1000U) << "thinned no more than it had to be";
  EXPECT_TRUE(contains(kept, 0));
  EXPECT_TRUE(contains(kept, kSamples - 1));
  EXPECT_TRUE(contains(kept, 30'000));
}

}  // namespace
}  // namespace rths::test_decimation
