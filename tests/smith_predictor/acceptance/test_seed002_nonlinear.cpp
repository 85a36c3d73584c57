// Seed 002 (Li et al. 2017) nonlinear sensitivity, Fig. 12: the specimen is MR damper model A
// (Table 1), the Smith predictor holds one of the erroneous models B1-B6 (Table 2), at 0 V and
// 3 V and round trips of 25-100 ms. The paper states only two numbers of this figure, which no
// reading of its model reproduces (docs/validation-fig12.md); the whole table is checked against
// the independent implementation's values (docs/reference-values.md).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "node_numerical/engine/experiment.hpp"
#include "support/test_support.hpp"

namespace rths::test_seed002_nonlinear {
namespace {

using test::load_example;

constexpr std::array<double, 4> kRoundTrips{0.025, 0.050, 0.075, 0.100};

// Second-floor peak error (%) of the independent implementation: per model, 0 V at 25/50/75/100 ms
// then the pure simulation with the wrong model, then the same at 3 V.
constexpr std::array<std::array<double, 10>, 6> kReference{{
    {0.20, 0.56, 1.04, 1.74, 6.64, 1.54, 6.53, 11.42, 16.43, 2.70},
    {0.13, 0.37, 0.70, 1.16, 4.48, 0.90, 3.02, 6.61, 9.29, 1.24},
    {0.07, 0.19, 0.36, 0.60, 2.36, 0.42, 1.26, 2.56, 3.90, 0.92},
    {0.07, 0.20, 0.36, 0.60, 2.42, 0.27, 0.71, 1.16, 1.59, 1.41},
    {0.12, 0.36, 0.68, 1.14, 4.80, 0.47, 1.18, 1.77, 2.19, 3.23},
    {0.17, 0.52, 1.00, 1.68, 7.20, 0.61, 1.47, 2.04, 2.22, 4.87},
}};
// The reference's monolithic second-floor peaks with damper model A, mm.
constexpr std::array<double, 2> kReferencePeakMm{24.764, 12.584};
// The table is given to 0.01 percentage points: agreeing conventions must land within 0.015.
constexpr double kTolerancePct = 0.015;

std::vector<std::string> at_voltage(double volts) {
  const std::string v = fmt::format("{:g}", volts);
  return {"site[0].channel[0].specimen.bouc_wen.voltage_v=" + v,
          "site[0].channel[0].prediction.bouc_wen.voltage_v=" + v};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The pure simulation with the wrong model: the prediction model as the specimen, no network. A
// run's monolithic reference uses its specimen, so that run's reference peak is the one wanted.
double wrong_model_peak(const std::string& example, double volts) {
  auto cfg = load_example(example, at_voltage(volts));
  auto& channel = *cfg.experiment.mutable_site(0)->mutable_channel(0);
  *channel.mutable_specimen() = channel.prediction();
  Experiment ex(cfg);
  return ex.run().response("x2").reference_peak;
}

class Seed002Nonlinear : public ::testing::TestWithParam<int> {};

TEST_P(Seed002Nonlinear, Fig12TableMatchesIndependentReference) {
  const int model = GetParam();
  const std::string example = fmt::format("seed002/nonlinear_b{}.textproto", model);
  const auto& expected = kReference.at(static_cast<std::size_t>(model - 1));
  for (std::size_t v = 0; v < 2; ++v) {
    const double volts = v == 0 ? 0.0 : 3.0;
    double true_peak = 0.0;
    std::string line = fmt::format("B{} at {:g} V, round trip 25/50/75/100 ms, pure simulation:", model, volts);
    for (std::size_t j = 0; j < kRoundTrips.size(); ++j) {
      Experiment ex(load_example(example, with(at_voltage(volts), test::round_trip(kRoundTrips[j]))));
      const RunReport& r = ex.run();
      true_peak = r.response("x2").reference_peak;
      EXPECT_NEAR(true_peak * 1e3, kReferencePeakMm[v], 0.0002 * kReferencePeakMm[v]) << "model A at " << volts << " V";
      const double error = r.response("x2").j_peak_pct;
      line += fmt::format(" {:.3f}", error);
      EXPECT_NEAR(error, expected[5 * v + j], kTolerancePct)
          << "round trip " << kRoundTrips[j] << " s, " << volts << " V";
    }
    const double pure = 100.0 * std::abs(wrong_model_peak(example, volts) - true_peak) / true_peak;
    line += fmt::format(" {:.3f}", pure);
    EXPECT_NEAR(pure, expected[5 * v + 4], kTolerancePct) << "pure simulation, " << volts << " V";
    std::printf("%s\n", line.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(ModelsB1ToB6, Seed002Nonlinear, ::testing::Range(1, 7),
                         [](const ::testing::TestParamInfo<int>& model) { return fmt::format("B{}", model.param); });

}  // namespace
}  // namespace rths::test_seed002_nonlinear
