// Impairment models (common/): each delay distribution against its closed form, empirical
// histograms and traces, independent and Gilbert-Elliott loss, duplication, reproducibility,
// order through the virtual channel, no allocation per packet, and bad configs rejected.
// Statistical tolerances are 5 standard errors of the sample size used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/config.hpp"
#include "common/transport/impairment.hpp"
#include "common/transport/virtual_link.hpp"
#include "support/alloc_counter.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_impairment {
namespace {

constexpr int kDraws = 100000;
constexpr double kSigmas = 5.0;

struct Moments {
  double mean = 0;
  double sd = 0;
};

Moments moments(const std::vector<double>& x) {
  double sum = 0;
  for (const double v : x) sum += v;
  const double mean = sum / static_cast<double>(x.size());
  double squares = 0;
  for (const double v : x) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / static_cast<double>(x.size() - 1))};
}

std::vector<double> delays(const config::Impairment& spec, int n = kDraws) {
  Impairment impairment(spec);
  std::vector<double> out(static_cast<std::size_t>(n));
  for (auto& d : out) d = impairment.next_delay_s();
  return out;
}

double fraction_above(const std::vector<double>& x, double threshold) {
  const auto count = std::count_if(x.begin(), x.end(), [threshold](double v) { return v > threshold; });
  return static_cast<double>(count) / static_cast<double>(x.size());
}

// Standard error of an observed frequency of p over n independent trials.
double binomial_se(double p, double n) {
  return std::sqrt(p * (1.0 - p) / n);
}

void measured(const char* what, double value, double expected, double tolerance) {
  std::printf("[ measured ] %s: %.6g (expected %.6g +- %.2g)\n", what, value, expected, tolerance);
  EXPECT_NEAR(value, expected, tolerance) << what;
}

std::filesystem::path write_file(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file) << text;
  return file;
}

// ---------------------------------------------------------------------------------------------
// Delay distributions

TEST(Impairment, ConstantAndUniformDelaysAreTheOriginalSequence) {
  // Existing configs (delay_s, jitter_s only) must replay bit for bit: seed 002 results depend on it.
  config::Impairment spec;
  spec.set_delay_s(0.003);
  spec.set_jitter_s(0.005);
  spec.set_seed(11);
  Impairment impairment(spec);
  Rng rng(11);
  for (int i = 0; i < 10000; ++i) {
    double expected = spec.delay_s();
    expected += spec.jitter_s() * (2.0 * rng.uniform() - 1.0);
    ASSERT_EQ(impairment.next_delay_s(), std::max(expected, 0.0)) << i;
  }
  EXPECT_DOUBLE_EQ(impairment.max_delay_s(), 0.008);
  config::Impairment constant;
  constant.set_delay_s(0.025);
  Impairment fixed(constant);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(fixed.next_packet().delay_s[0], 0.025);
  EXPECT_EQ(fixed.next_packet().copies, 1);
}

TEST(Impairment, NormalJitterMeanAndSd) {
  // delay 50 ms, sd 5 ms: 0 is 10 sd away, the truncation is negligible.
  config::Impairment spec;
  spec.set_delay_s(0.05);
  spec.mutable_normal()->set_sd_s(0.005);
  const auto m = moments(delays(spec));
  const double n = kDraws;
  measured("normal mean (s)", m.mean, 0.05, kSigmas * 0.005 / std::sqrt(n));
  measured("normal sd (s)", m.sd, 0.005, kSigmas * 0.005 / std::sqrt(2.0 * n));
  // 1 - 1e-6 quantile: delay + 4.753 sd.
  EXPECT_NEAR(Impairment(spec).max_delay_s(), 0.05 + 4.7534 * 0.005, 1e-6);
}

TEST(Impairment, NormalJitterNeverNegative) {
  config::Impairment spec;
  spec.set_delay_s(0.001);
  spec.mutable_normal()->set_sd_s(0.002);
  const auto x = delays(spec, 10000);
  EXPECT_GE(*std::min_element(x.begin(), x.end()), 0.0);
}

TEST(Impairment, ParetoJitterMeanAndSurvival) {
  // Shifted Pareto (Lomax): excess mean scale / (shape - 1) = scale shape / (shape - 1) - scale,
  // variance scale^2 shape / ((shape - 1)^2 (shape - 2)) for shape > 2.
  constexpr double kDelay = 0.01;
  constexpr double kScale = 0.002;
  constexpr double kShape = 3.0;
  config::Impairment spec;
  spec.set_delay_s(kDelay);
  spec.mutable_pareto()->set_scale_s(kScale);
  spec.mutable_pareto()->set_shape(kShape);
  const auto x = delays(spec);
  const double n = kDraws;
  const double sd = kScale * std::sqrt(kShape / ((kShape - 1) * (kShape - 1) * (kShape - 2)));
  measured("pareto(shape 3) mean (s)", moments(x).mean, kDelay + kScale * kShape / (kShape - 1) - kScale,
           kSigmas * sd / std::sqrt(n));
  EXPECT_GE(*std::min_element(x.begin(), x.end()), kDelay);
  for (const double at : {1.0, 3.0, 10.0}) {
    const double p = std::pow(1.0 / (1.0 + at), kShape);
    const std::string what = "pareto(shape 3) P(excess > " + std::to_string(static_cast<int>(at)) + " scale)";
    measured(what.c_str(), fraction_above(x, kDelay + at * kScale), p, kSigmas * binomial_se(p, n));
  }
  // A heavier tail (infinite variance): the survival function still holds far out.
  spec.mutable_pareto()->set_shape(1.5);
  const auto heavy = delays(spec);
  for (const double at : {1.0, 10.0, 100.0}) {
    const double p = std::pow(1.0 / (1.0 + at), 1.5);
    const std::string what = "pareto(shape 1.5) P(excess > " + std::to_string(static_cast<int>(at)) + " scale)";
    measured(what.c_str(), fraction_above(heavy, kDelay + at * kScale), p, kSigmas * binomial_se(p, n));
  }
  // Buffers are sized for the 1 - 1e-6 quantile: scale (1e6^(1/shape) - 1) = 9999 scale at shape 1.5.
  EXPECT_NEAR(Impairment(spec).max_delay_s(), kDelay + kScale * 9999.0, 1e-9);
}

TEST(Impairment, GammaJitterMeanAndVariance) {
  // Mean k theta, variance k theta^2, excess kurtosis 6 / k: Var(sample variance) ~ sigma^4 (2 + 6/k) / n.
  // Shape 2 takes Marsaglia-Tsang directly, shape 0.5 its U^(1/k) boost.
  for (const double k : {2.0, 0.5}) {
    constexpr double kTheta = 0.003;
    config::Impairment spec;
    spec.set_delay_s(0.02);
    spec.mutable_gamma()->set_shape(k);
    spec.mutable_gamma()->set_scale_s(kTheta);
    const auto x = delays(spec);
    const auto m = moments(x);
    const double n = kDraws;
    const double variance = k * kTheta * kTheta;
    const std::string mean_name = "gamma(shape " + std::to_string(k) + ") mean (s)";
    const std::string var_name = "gamma(shape " + std::to_string(k) + ") variance (s^2)";
    measured(mean_name.c_str(), m.mean, 0.02 + k * kTheta, kSigmas * std::sqrt(variance / n));
    measured(var_name.c_str(), m.sd * m.sd, variance, kSigmas * variance * std::sqrt((2.0 + 6.0 / k) / n));
    EXPECT_GE(*std::min_element(x.begin(), x.end()), 0.02);
    // The buffer bound (a Chernoff bound of the 1e-6 tail) is beyond every one of 1e5 draws.
    EXPECT_GT(Impairment(spec).max_delay_s(), *std::max_element(x.begin(), x.end()));
  }
}

TEST(Impairment, HistogramReproducesBinProbabilities) {
  config::Impairment spec;
  spec.set_delay_s(0.005);
  auto* histogram = spec.mutable_empirical();
  for (const double edge : {0.0, 0.01, 0.02, 0.05}) histogram->add_bin_edge_s(edge);
  for (const double weight : {1.0, 0.0, 3.0}) histogram->add_bin_weight(weight);
  const auto x = delays(spec);
  std::array<int, 3> counts{};
  double in_last = 0;
  for (const double d : x) {
    const double v = d - 0.005;
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 0.05);
    const int bin = v < 0.01 ? 0 : v < 0.02 ? 1 : 2;
    ++counts[static_cast<std::size_t>(bin)];
    if (bin == 2) in_last += v;
  }
  const double n = kDraws;
  measured("histogram P(bin 0)", counts[0] / n, 0.25, kSigmas * binomial_se(0.25, n));
  EXPECT_EQ(counts[1], 0) << "a bin of weight 0 is never drawn";
  measured("histogram P(bin 2)", counts[2] / n, 0.75, kSigmas * binomial_se(0.75, n));
  // Uniform inside a bin: mean 35 ms, sd 30 ms / sqrt(12).
  measured("histogram mean inside bin 2 (s)", in_last / counts[2], 0.035, kSigmas * 0.03 / std::sqrt(12.0 * counts[2]));
  EXPECT_DOUBLE_EQ(Impairment(spec).max_delay_s(), 0.055);
}

// ---------------------------------------------------------------------------------------------
// Traces

constexpr std::string_view kTrace = R"(# one-way delays measured between two labs (s)
0.031
0.027   # a comment after a value

0.045
0.027
  0.060
)";

TEST(Impairment, TraceReplayIsInFileOrderAndWraps) {
  const test::ScratchFolder scratch("rths_impairment");
  const std::filesystem::path& dir = scratch.path();
  write_file(dir / "trace.txt", std::string(kTrace));
  config::Impairment spec;
  spec.set_delay_s(0.001);
  spec.mutable_empirical()->set_trace_path("trace.txt");  // relative: from the config's folder
  spec.mutable_empirical()->set_order(config::EmpiricalDelay::REPLAY);
  Impairment impairment(spec, dir);
  const std::vector<double> file{0.031, 0.027, 0.045, 0.027, 0.060};
  for (int i = 0; i < 12; ++i) {
    EXPECT_DOUBLE_EQ(impairment.next_delay_s(), 0.001 + file[static_cast<std::size_t>(i) % file.size()]) << i;
  }
  EXPECT_DOUBLE_EQ(impairment.max_delay_s(), 0.061);
  // next_packet() advances the same cursor, lost packets included: packet i gets value i.
  spec.mutable_loss()->set_probability(0.5);
  Impairment lossy(spec, dir);
  for (int i = 0; i < 12; ++i) {
    EXPECT_DOUBLE_EQ(lossy.next_packet().delay_s[0], 0.001 + file[static_cast<std::size_t>(i) % file.size()]) << i;
  }
}

TEST(Impairment, TraceSampleDrawsFileValuesWithTheirFrequencies) {
  const test::ScratchFolder scratch("rths_impairment");
  const std::filesystem::path& dir = scratch.path();
  config::Impairment spec;
  spec.mutable_empirical()->set_trace_path((write_file(dir / "trace.txt", std::string(kTrace))).string());
  Impairment impairment(spec);  // absolute path: no base directory needed
  std::map<double, int> counts;
  for (int i = 0; i < kDraws; ++i) ++counts[impairment.next_delay_s()];
  ASSERT_EQ(counts.size(), 4U) << "only the file's values";
  const double n = kDraws;
  for (const auto& [value, expected] :
       std::map<double, double>{{0.031, 0.2}, {0.027, 0.4}, {0.045, 0.2}, {0.060, 0.2}}) {
    ASSERT_TRUE(counts.contains(value)) << value;
    const std::string what = "trace SAMPLE P(" + std::to_string(value) + ")";
    measured(what.c_str(), counts[value] / n, expected, kSigmas * binomial_se(expected, n));
  }
}

std::string trace_error(const std::filesystem::path& file) {
  config::Impairment spec;
  spec.mutable_empirical()->set_trace_path(file.string());
  return test::error_of<std::runtime_error>(
      [&] { Impairment impairment(spec); },
      "the trace \"" + file.string() + "\" was accepted, but an error was expected");
}

TEST(Impairment, BadTraceNamesFileAndLine) {
  const test::ScratchFolder scratch("rths_impairment");
  const std::filesystem::path& dir = scratch.path();
  const auto word = write_file(dir / "word.txt", "# delays\n0.01\n0.02 ms\n");
  EXPECT_EQ(trace_error(word), word.string() +
                                   ":3: \"0.02 ms\" is not a delay; expected one one-way delay in seconds per line "
                                   "('#' starts a comment)");
  const auto negative = write_file(dir / "negative.txt", "0.01\n\n-0.002\n");
  EXPECT_EQ(trace_error(negative), negative.string() + ":3: delay -0.002 is negative; expected a one-way delay >= 0 s");
  const auto empty = write_file(dir / "empty.txt", "# nothing measured\n\n");
  EXPECT_EQ(trace_error(empty), empty.string() + ": has no delays; expected one one-way delay in seconds per line");
  EXPECT_EQ(trace_error(dir / "missing.txt"),
            "cannot open delay trace " + (dir / "missing.txt").string() + ": No such file or directory");
}

// ---------------------------------------------------------------------------------------------
// Loss and duplication

TEST(Impairment, IndependentLossRateAndUnchangedDelays) {
  config::Impairment spec;
  spec.set_delay_s(0.02);
  spec.set_jitter_s(0.005);
  spec.set_duplicate_probability(0.05);
  spec.set_seed(5);
  Impairment clean(spec);
  spec.mutable_loss()->set_probability(0.1);
  Impairment lossy(spec);
  int lost = 0;
  for (int i = 0; i < kDraws; ++i) {
    const PacketFate fate = lossy.next_packet();
    const PacketFate without_loss = clean.next_packet();
    lost += fate.lost() ? 1 : 0;
    // Loss draws from its own stream: the packets that get through keep their delays and copies.
    if (!fate.lost()) {
      ASSERT_EQ(fate.copies, without_loss.copies) << i;
      ASSERT_EQ(fate.delay_s, without_loss.delay_s) << i;
    }
  }
  measured("independent loss rate", lost / static_cast<double>(kDraws), 0.1,
           kSigmas * binomial_se(0.1, static_cast<double>(kDraws)));
}

// Long-run loss rate and mean loss-burst length of a Gilbert-Elliott link over n packets.
struct Bursts {
  double loss_rate;
  double mean_burst;
  int bursts;
};
Bursts run_bursts(const config::GilbertElliott& ge, int n) {
  config::Impairment spec;
  spec.set_seed(9);
  *spec.mutable_loss()->mutable_gilbert_elliott() = ge;
  Impairment impairment(spec);
  int lost = 0;
  int bursts = 0;
  bool previous = false;
  for (int i = 0; i < n; ++i) {
    const bool now = impairment.next_packet().lost();
    lost += now ? 1 : 0;
    bursts += now && !previous ? 1 : 0;
    previous = now;
  }
  return {static_cast<double>(lost) / n, static_cast<double>(lost) / bursts, bursts};
}

TEST(Impairment, GilbertElliottLossRateAndBurstLength) {
  constexpr int kPackets = 1000000;
  constexpr double kGoodToBad = 0.01;
  constexpr double kBadToGood = 0.2;
  const double pi_bad = kGoodToBad / (kGoodToBad + kBadToGood);
  // The state is a two-state Markov chain with lag-1 correlation lambda = 1 - p_gb - p_bg; the
  // loss indicators' long-run variance per packet is q (1 - q) + (q_bad - q_good)^2 pi (1 - pi) 2 lambda / (1 -
  // lambda).
  const double lambda = 1.0 - kGoodToBad - kBadToGood;
  const auto rate_se = [&](double q_good, double q_bad) {
    const double q = pi_bad * q_bad + (1 - pi_bad) * q_good;
    const double chain = (q_bad - q_good) * (q_bad - q_good) * pi_bad * (1 - pi_bad) * 2 * lambda / (1 - lambda);
    return std::sqrt((q * (1 - q) + chain) / kPackets);
  };

  config::GilbertElliott gilbert;  // the simple Gilbert model: every packet in the bad state is lost
  gilbert.set_p_good_to_bad(kGoodToBad);
  gilbert.set_p_bad_to_good(kBadToGood);
  const Bursts simple = run_bursts(gilbert, kPackets);
  measured("Gilbert loss rate", simple.loss_rate, pi_bad, kSigmas * rate_se(0, 1));
  // A sojourn in the bad state is geometric: mean 1 / p_bg, sd sqrt(1 - p_bg) / p_bg.
  measured("Gilbert mean burst (packets)", simple.mean_burst, 1 / kBadToGood,
           kSigmas * std::sqrt(1 - kBadToGood) / kBadToGood / std::sqrt(simple.bursts));

  config::GilbertElliott elliott = gilbert;
  elliott.set_loss_in_good(0.01);
  elliott.set_loss_in_bad(0.5);
  measured("Gilbert-Elliott loss rate", run_bursts(elliott, kPackets).loss_rate, pi_bad * 0.5 + (1 - pi_bad) * 0.01,
           kSigmas * rate_se(0.01, 0.5));

  // The same rate as independent loss, but in bursts: independent loss has bursts of 1 / (1 - p).
  config::Impairment independent;
  independent.mutable_loss()->set_probability(pi_bad);
  Impairment bernoulli(independent);
  int lost = 0;
  int bursts = 0;
  bool previous = false;
  for (int i = 0; i < kPackets; ++i) {
    const bool now = bernoulli.next_packet().lost();
    lost += now ? 1 : 0;
    bursts += now && !previous ? 1 : 0;
    previous = now;
  }
  EXPECT_LT(static_cast<double>(lost) / bursts, 1.2);
  EXPECT_GT(simple.mean_burst, 4.0);
}

TEST(Impairment, DuplicationRateAndCopyDelays) {
  config::Impairment spec;
  spec.set_delay_s(0.02);
  spec.mutable_normal()->set_sd_s(0.002);
  spec.set_duplicate_probability(0.05);
  spec.mutable_loss()->set_probability(0.2);
  Impairment impairment(spec);
  int kept = 0;
  int duplicated = 0;
  std::vector<double> copy_delays;
  for (int i = 0; i < kDraws; ++i) {
    const PacketFate fate = impairment.next_packet();
    ASSERT_GE(fate.copies, 0);
    ASSERT_LE(fate.copies, 2);
    if (fate.lost()) continue;
    ++kept;
    if (fate.copies == 2) {
      ++duplicated;
      copy_delays.push_back(fate.delay_s[1]);
    }
  }
  const double k = kept;
  measured("duplication rate (of the packets not lost)", duplicated / k, 0.05, kSigmas * binomial_se(0.05, k));
  // The copy's delay is drawn from the same distribution.
  const auto m = moments(copy_delays);
  measured("duplicate copy mean delay (s)", m.mean, 0.02, kSigmas * 0.002 / std::sqrt(copy_delays.size()));
}

// ---------------------------------------------------------------------------------------------
// Reproducibility

std::vector<config::Impairment> every_model() {
  std::vector<config::Impairment> specs(5);
  specs[0].set_delay_s(0.02);
  specs[0].set_jitter_s(0.004);
  specs[1].set_delay_s(0.02);
  specs[1].mutable_normal()->set_sd_s(0.003);
  specs[2].mutable_pareto()->set_scale_s(0.002);
  specs[2].mutable_pareto()->set_shape(1.8);
  specs[3].mutable_gamma()->set_shape(0.7);
  specs[3].mutable_gamma()->set_scale_s(0.004);
  for (const double edge : {0.01, 0.015, 0.03}) specs[4].mutable_empirical()->add_bin_edge_s(edge);
  for (const double weight : {2.0, 1.0}) specs[4].mutable_empirical()->add_bin_weight(weight);
  for (auto& spec : specs) {
    spec.mutable_loss()->mutable_gilbert_elliott()->set_p_good_to_bad(0.02);
    spec.mutable_loss()->mutable_gilbert_elliott()->set_p_bad_to_good(0.3);
    spec.set_duplicate_probability(0.03);
  }
  specs[0].mutable_loss()->set_probability(0.05);
  return specs;
}

std::vector<double> fates(const config::Impairment& spec, std::uint64_t seed) {
  config::Impairment seeded = spec;
  seeded.set_seed(seed);
  Impairment impairment(seeded);
  std::vector<double> out;
  for (int i = 0; i < 2000; ++i) {
    const PacketFate f = impairment.next_packet();
    out.insert(out.end(), {static_cast<double>(f.copies), f.delay_s[0], f.delay_s[1]});
  }
  return out;
}

TEST(Impairment, SameSeedSameFatesOtherSeedOthers) {
  for (const auto& spec : every_model()) {
    EXPECT_EQ(fates(spec, 17), fates(spec, 17)) << spec.ShortDebugString();
    EXPECT_NE(fates(spec, 17), fates(spec, 18)) << spec.ShortDebugString();
  }
}

TEST(Impairment, NextPacketDoesNotAllocate) {
  const test::ScratchFolder scratch("rths_impairment");
  const std::filesystem::path& dir = scratch.path();
  auto specs = every_model();
  specs.emplace_back().mutable_empirical()->set_trace_path(write_file(dir / "t.txt", std::string(kTrace)).string());
  specs.back().mutable_empirical()->set_order(config::EmpiricalDelay::REPLAY);
  specs.back().set_duplicate_probability(0.5);
  for (const auto& spec : specs) {
    Impairment impairment(spec);
    double sink = 0;
    const auto before = test::allocations();
    for (int i = 0; i < 10000; ++i) sink += impairment.next_packet().delay_s[0];
    EXPECT_EQ(test::allocations(), before) << spec.ShortDebugString();
    EXPECT_GT(sink, 0.0);
  }
}

// ---------------------------------------------------------------------------------------------
// Through the virtual channel

std::span<const std::byte> bytes_of(const std::int64_t& v) {
  return std::as_bytes(std::span(&v, 1));
}

// The numerical node sends its step number every step, then falls silent while the channel drains
// for as long again and 100 s more (a heavy tail holds packets back for seconds); returns what
// arrived, in arrival order.
std::vector<std::int64_t> through_channel(const config::Impairment& spec, std::int64_t steps,
                                          LinkCounters* counters = nullptr) {
  VirtualClock clock(1024.0);
  VirtualChannel channel(clock, Impairment(spec));
  std::vector<std::int64_t> arrived;
  arrived.reserve(static_cast<std::size_t>(2 * steps));
  std::array<std::byte, kMaxDatagramBytes> buf{};
  for (std::int64_t k = 0; k < 2 * steps + 102400; ++k) {
    clock.set_site_step(k);
    while (const std::size_t n = channel.pop(buf)) {
      std::int64_t v = 0;
      std::memcpy(&v, buf.data(), n);
      arrived.push_back(v);
    }
    clock.set_numerical_step(k);
    if (k < steps) channel.push(bytes_of(k));
  }
  if (counters != nullptr) *counters = channel.counters();
  return arrived;
}

config::Impairment heavy_tail() {
  config::Impairment spec;
  spec.set_delay_s(0.02);
  spec.mutable_pareto()->set_scale_s(0.002);
  spec.mutable_pareto()->set_shape(1.5);
  spec.set_seed(4);
  return spec;
}

TEST(ImpairedChannel, HeavyTailKeepsOrderUnlessReorderingAllowed) {
  auto spec = heavy_tail();
  LinkCounters c;
  const auto in_order = through_channel(spec, 20000, &c);
  // Every packet, each once, in send order (a late one holds back those behind it).
  ASSERT_EQ(in_order.size(), 20000U);
  for (std::size_t i = 0; i < in_order.size(); ++i) ASSERT_EQ(in_order[i], static_cast<std::int64_t>(i));
  EXPECT_EQ(c.dropped_overflow, 0U);
  spec.set_allow_reorder(true);
  const auto free = through_channel(spec, 20000, &c);
  EXPECT_EQ(free.size(), 20000U);
  std::size_t inversions = 0;
  for (std::size_t i = 1; i < free.size(); ++i) inversions += free[i] < free[i - 1] ? 1U : 0U;
  std::printf("[ measured ] heavy tail (Pareto 2 ms, shape 1.5), reordering allowed: %zu inversions in %zu\n",
              inversions, free.size());
  EXPECT_GT(inversions, 100U);
}

TEST(ImpairedChannel, LostPacketsAreCountedAndDuplicatesDeliveredTwice) {
  auto spec = heavy_tail();
  spec.mutable_loss()->set_probability(0.1);
  spec.set_duplicate_probability(0.1);
  LinkCounters c;
  const auto arrived = through_channel(spec, 20000, &c);
  EXPECT_EQ(c.sent, 20000U);
  EXPECT_GT(c.lost, 1500U);
  EXPECT_GT(c.duplicated, 1500U);
  EXPECT_EQ(c.dropped_overflow, 0U);
  EXPECT_EQ(c.delivered, arrived.size());
  std::map<std::int64_t, int> copies;
  for (const auto v : arrived) ++copies[v];
  std::uint64_t twice = 0;
  for (const auto& [value, count] : copies) twice += count == 2 ? 1U : 0U;
  // Everything sent and not lost arrives, the duplicated ones twice.
  EXPECT_EQ(copies.size(), c.sent - c.lost);
  EXPECT_EQ(twice, c.duplicated);
  EXPECT_EQ(c.delivered, c.sent - c.lost + c.duplicated);
  EXPECT_TRUE(std::is_sorted(arrived.begin(), arrived.end()));
}

TEST(ImpairedChannel, PushAndPopDoNotAllocateInSteadyState) {
  auto spec = heavy_tail();
  spec.mutable_loss()->mutable_gilbert_elliott()->set_p_good_to_bad(0.01);
  spec.mutable_loss()->mutable_gilbert_elliott()->set_p_bad_to_good(0.3);
  spec.set_duplicate_probability(0.05);
  VirtualClock clock(1024.0);
  VirtualChannel channel(clock, Impairment(spec));
  std::array<std::byte, kMaxDatagramBytes> buf{};
  std::uint64_t before = 0;
  for (std::int64_t k = 0; k < 30000; ++k) {
    if (k == 2000) before = test::allocations();
    clock.set_site_step(k);
    while (channel.pop(buf) != 0) {
    }
    clock.set_numerical_step(k);
    channel.push(bytes_of(k));
  }
  EXPECT_EQ(test::allocations(), before);
}

TEST(ImpairedChannel, MoreInFlightThanTheBuffersIsCountedNotAllocated) {
  // Shape 0.2: the median excess is 31 scale = 31 s, far beyond kMaxInFlight packets at 1024 Hz.
  config::Impairment spec;
  spec.mutable_pareto()->set_scale_s(1.0);
  spec.mutable_pareto()->set_shape(0.2);
  spec.set_allow_reorder(true);
  VirtualClock clock(1024.0);
  VirtualChannel channel(clock, Impairment(spec));
  std::array<std::byte, kMaxDatagramBytes> buf{};
  const auto before = test::allocations();
  for (std::int64_t k = 0; k < 20000; ++k) {
    clock.set_site_step(k);
    while (channel.pop(buf) != 0) {
    }
    clock.set_numerical_step(k);
    channel.push(bytes_of(k));
  }
  EXPECT_EQ(test::allocations(), before);
  const auto& c = channel.counters();
  EXPECT_GT(c.dropped_overflow, 0U);
  EXPECT_LE(c.sent - c.dropped_overflow - c.delivered, VirtualChannel::kMaxInFlight);
}

// ---------------------------------------------------------------------------------------------
// Config

// A small valid 2-DOF experiment; `link` is the body of site[0].link.
std::string experiment_with_link(const std::string& forward) {
  return R"txt(name: "t"
structure {
  dofs: 2
  mass_kg: [1000, 0, 0, 1000]
  stiffness_n_per_m: [2e6, -1e6, -1e6, 1e6]
}
ground_motion { record { path: "elcentro.txt" unit: G } }
site {
  name: "lab"
  influence: [-1, 0]
  channel { specimen { spring { stiffness_n_per_m: 1e5 } } }
  link {
    forward { )txt" +
         forward + R"txt( }
    backward { delay_s: 0.02 }
  }
}
)txt";
}

std::string error_of(const std::string& forward) {
  return test::error_of<ConfigError>([&] { parse_experiment(experiment_with_link(forward), "t.textproto"); },
                                     "forward { " + forward + " } was accepted, but an error was expected");
}

using test::contains;

TEST(ImpairmentConfig, EveryModelLoads) {
  for (const std::string forward : {
           "delay_s: 0.02 jitter_s: 0.005 seed: 3 allow_reorder: true",
           "delay_s: 0.02 normal { sd_s: 0.003 }",
           "delay_s: 0.02 pareto { scale_s: 0.002 shape: 2.5 } loss { probability: 0.01 }",
           "gamma { shape: 2 scale_s: 0.004 } duplicate_probability: 0.001",
           "empirical { bin_edge_s: [0.01, 0.02, 0.04] bin_weight: [3, 1] }",
           "empirical { trace_path: \"owd.txt\" order: REPLAY }",
           "loss { gilbert_elliott { p_good_to_bad: 0.01 p_bad_to_good: 0.25 loss_in_bad: 0.8 } }",
       }) {
    EXPECT_NO_THROW(parse_experiment(experiment_with_link(forward), "t.textproto")) << forward;
  }
  const auto experiment = parse_experiment(
      experiment_with_link("pareto { scale_s: 0.002 shape: 2.5 } loss { probability: 0.01 }"), "t.textproto");
  EXPECT_DOUBLE_EQ(experiment.site(0).link().forward().pareto().shape(), 2.5);
}

TEST(ImpairmentConfig, BadModelsNameTheField) {
  const std::string at = "site[0].link.forward.";
  EXPECT_TRUE(
      contains(error_of("normal { sd_s: 0 }"), at + "normal.sd_s: is 0, expected a standard deviation (s) > 0"));
  EXPECT_TRUE(contains(error_of("normal { }"), at + "normal.sd_s: missing; expected a standard deviation (s) > 0"));
  EXPECT_TRUE(contains(error_of("jitter_s: 0.001 pareto { scale_s: 0.002 shape: 2 }"),
                       at + "jitter_s: is 0.001, but pareto { ... } is given too; expected 0"));
  EXPECT_TRUE(contains(error_of("pareto { scale_s: 0.002 shape: -1 }"), at + "pareto.shape: is -1, expected"));
  EXPECT_TRUE(contains(error_of("pareto { shape: 2 }"), at + "pareto.scale_s: missing"));
  EXPECT_TRUE(contains(error_of("gamma { shape: 2 }"), at + "gamma.scale_s: missing"));
  EXPECT_TRUE(contains(error_of("gamma { shape: 0 scale_s: 0.01 }"), at + "gamma.shape: is 0, expected a shape > 0"));
}

TEST(ImpairmentConfig, BadEmpiricalDelaysNameTheField) {
  const std::string at = "site[0].link.forward.empirical";
  EXPECT_TRUE(contains(error_of("empirical { }"), at + ": has no delays; expected a histogram"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0, 0.01] bin_weight: [1] trace_path: \"x\" }"),
                       at + ".trace_path: is given with a histogram"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0, 0.02, 0.01] bin_weight: [1, 1] }"),
                       at + ".bin_edge_s[2]: is 0.01, not above the previous edge 0.02"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0, 0.01, 0.02] bin_weight: [1] }"),
                       at + ".bin_weight: has 1 entries for 3 bin edges; expected one weight per bin (2)"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0.01] bin_weight: [] }"),
                       at + ".bin_edge_s: has 1 entries, expected at least 2 bin edges"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0, 0.01, 0.02] bin_weight: [0, 0] }"),
                       at + ".bin_weight: are all 0"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0, 0.01, 0.02] bin_weight: [2, -1] }"),
                       at + ".bin_weight[1]: is -1, expected a weight >= 0"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [-0.01, 0.01] bin_weight: [1] }"),
                       at + ".bin_edge_s[0]: is -0.01, expected a delay >= 0 s"));
  EXPECT_TRUE(contains(error_of("empirical { bin_edge_s: [0, 0.01] bin_weight: [1] order: REPLAY }"),
                       at + ".order: is REPLAY, but a histogram has no order"));
  EXPECT_TRUE(contains(error_of("empirical { trace_path: \"\" }"), at + ".trace_path: is empty"));
}

TEST(ImpairmentConfig, BadLossAndDuplicationNameTheField) {
  const std::string at = "site[0].link.forward.";
  EXPECT_TRUE(contains(error_of("loss { probability: 1.5 }"),
                       at + "loss.probability: is 1.5, expected a loss probability in [0, 1]"));
  EXPECT_TRUE(contains(error_of("loss { }"), at + "loss: has no model"));
  EXPECT_TRUE(contains(error_of("loss { gilbert_elliott { p_bad_to_good: 0.2 } }"),
                       at + "loss.gilbert_elliott.p_good_to_bad: missing"));
  EXPECT_TRUE(contains(error_of("loss { gilbert_elliott { p_good_to_bad: 0.1 p_bad_to_good: 0 } }"),
                       at + "loss.gilbert_elliott.p_bad_to_good: is 0, expected a per-packet transition probability "
                            "in (0, 1]"));
  EXPECT_TRUE(contains(error_of("loss { gilbert_elliott { p_good_to_bad: 0.1 p_bad_to_good: 0.2 loss_in_bad: 2 } }"),
                       at + "loss.gilbert_elliott.loss_in_bad: is 2, expected a loss probability in [0, 1]"));
  EXPECT_TRUE(contains(error_of("duplicate_probability: -0.1"),
                       at + "duplicate_probability: is -0.1, expected a duplication probability in [0, 1]"));
  // Independent and bursty loss are one choice: the parser refuses both.
  EXPECT_FALSE(error_of("loss { probability: 0.1 gilbert_elliott { p_good_to_bad: 0.1 p_bad_to_good: 0.2 } }").empty());
}

}  // namespace
}  // namespace rths::test_impairment
