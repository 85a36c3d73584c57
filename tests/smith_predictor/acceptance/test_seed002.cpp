// The modified Smith predictor against seed 002 (Li et al. 2017) and the independent reference
// values in docs/reference-values.md: exactness with an exact model for any delay, the linear
// sensitivity table, and Table 4's Case I peaks.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "node_numerical/engine/experiment.hpp"
#include "support/test_support.hpp"

namespace rths::test_seed002 {
namespace {

using test::load_example;
using test::round_trip;

constexpr double kSpringStiffness = 55834.4;  // 0.2 k_1, k_1 = 279.172 N/mm (seed 002 Eq. 11)

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- Exactness: with the prediction model equal to the specimen the modified Smith predictor
// removes the network from the loop entirely (seed 002 Eq. 4, docs/architecture.md §3): every floor
// displacement must equal the monolithic reference to rounding, for any delay and jitter.
struct ExactCase {
  const char* example;
  std::vector<std::string> overrides;
  const char* label;
};

void expect_exact(const ExactCase& c) {
  for (const double rt : {0.0, 0.010, 0.050, 0.100, 0.250}) {
    for (const double jitter : {0.0, 0.005}) {
      const auto cfg = load_example(c.example, with(c.overrides, round_trip(rt, jitter)));
      Experiment ex(cfg);
      const RunReport& r = ex.run();
      for (const char* dof : {"x1", "x2"}) {
        const double peak = r.response(dof).reference_peak;
        ASSERT_GT(peak, 1e-3) << "reference must move";
        const double diff = test::max_abs_difference(ex.numerical(), ex.reference(), dof);
        EXPECT_LE(diff, 1e-9 * peak) << c.label << " " << dof << " round trip " << rt << " s jitter " << jitter;
      }
      // The delays really were applied: with jitter some steps hold the previous feedback.
      if (rt > 0.0) {
        EXPECT_GT(r.sites.at(0).numerical_side.held_steps, 0U);
      }
    }
  }
}

TEST(Seed002Exactness, SpringExactModelEqualsReferenceForAnyDelay) {
  expect_exact({"seed002/spring.textproto", {}, "spring"});
}

TEST(Seed002Exactness, DamperAt0VExactModelEqualsReferenceForAnyDelay) {
  expect_exact({"seed002/damper_0v.textproto", {}, "damper 0 V"});
}

TEST(Seed002Exactness, DamperAt3VExactModelEqualsReferenceForAnyDelay) {
  expect_exact({"seed002/damper_3v.textproto", {}, "damper 3 V"});
}

TEST(Seed002Exactness, ReorderingLinkStillExact) {
  auto o = round_trip(0.1, 0.02);
  o.emplace_back("site[0].link.forward.allow_reorder=true");
  o.emplace_back("site[0].link.backward.allow_reorder=true");
  const auto cfg = load_example("seed002/damper_3v.textproto", o);
  Experiment ex(cfg);
  const RunReport& r = ex.run();
  // +-20 ms jitter on 50 ms legs with reordering allowed: late packets really arrive out of order.
  EXPECT_GT(r.sites.at(0).numerical_side.packets.stale + r.sites.at(0).physical_side.packets.stale, 100U);
  for (const char* dof : {"x1", "x2"}) {
    EXPECT_LE(test::max_abs_difference(ex.numerical(), ex.reference(), dof), 1e-9 * r.response(dof).reference_peak);
  }
}

// --- Seed 002 Table 4, Case I: El Centro NS x 0.2 with the Purdue damper (Table 3). The paper's
// numbers are experimental, so 8 %; the independent implementation's are simulated with the same
// conventions, so 0.5 %.
struct Table4Row {
  const char* name;  // the damper and its voltage, as the test's name
  const char* example;
  double paper_x1_mm, paper_x2_mm, paper_force_n;
  double ref_x1_mm, ref_x2_mm, ref_force_n;
};

void PrintTo(const Table4Row& row, std::ostream* os) {
  *os << row.example;
}

class Seed002Table4 : public ::testing::TestWithParam<Table4Row> {};

TEST_P(Seed002Table4, CaseIPeaksMatchPaperAndIndependentReference) {
  const Table4Row& row = GetParam();
  const auto cfg = load_example(row.example);
  Experiment ex(cfg);
  const RunReport& r = ex.run();
  const double x1 = r.response("x1").reference_peak * 1e3;
  const double x2 = r.response("x2").reference_peak * 1e3;
  const double f = r.response("f_purdue").reference_peak;
  RecordProperty("x1_mm", std::to_string(x1));
  RecordProperty("x2_mm", std::to_string(x2));
  RecordProperty("force_n", std::to_string(f));
  EXPECT_NEAR(x1, row.paper_x1_mm, 0.08 * row.paper_x1_mm);
  EXPECT_NEAR(x2, row.paper_x2_mm, 0.08 * row.paper_x2_mm);
  if (row.paper_force_n > 1000.0) {
    // At 0 V the paper's measured force (217.8 N) includes friction the Bouc-Wen model does not
    // have (reference-values.md gets 132.8 N): only the 3 V force is a check of the model.
    EXPECT_NEAR(f, row.paper_force_n, 0.08 * row.paper_force_n);
  }
  EXPECT_NEAR(x1, row.ref_x1_mm, 0.005 * row.ref_x1_mm);
  EXPECT_NEAR(x2, row.ref_x2_mm, 0.005 * row.ref_x2_mm);
  EXPECT_NEAR(f, row.ref_force_n, 0.005 * row.ref_force_n);
}

INSTANTIATE_TEST_SUITE_P(
    PassiveOffAndOn, Seed002Table4,
    ::testing::Values(Table4Row{"Damper0V", "seed002/damper_0v.textproto", 16.34, 25.07, 217.8, 17.09, 26.04, 132.8},
                      Table4Row{"Damper3V", "seed002/damper_3v.textproto", 6.10, 12.56, 1452.2, 6.11, 12.46, 1517.1}),
    [](const ::testing::TestParamInfo<Table4Row>& p) { return std::string(p.param.name); });

// --- Seed 002 linear sensitivity (Fig. 7) and the independent table of reference-values.md.
// Conventions: the same as that implementation. Each leg of a round trip d lags round(d/2 * 1024)
// steps and a zero delay costs nothing (sites step half a period ahead, VirtualClock), RK4 with
// the force held, the record interpolated linearly, the spring between ground and floor 1.
constexpr std::array<double, 7> kErrors{-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3};
constexpr std::array<double, 5> kDelays{0.0, 0.025, 0.05, 0.075, 0.1};
// reference-values.md, "Linear case", second-floor peak error (%), rows as kErrors, cols as kDelays.
constexpr std::array<std::array<double, 5>, 7> kReferenceTable{{{0.00, 3.04, 6.07, 8.78, 11.50},
                                                                {0.00, 2.01, 3.99, 5.73, 7.46},
                                                                {0.00, 1.00, 1.97, 2.81, 3.63},
                                                                {0.00, 0.00, 0.00, 0.00, 0.00},
                                                                {0.00, 0.98, 1.91, 2.70, 3.45},
                                                                {0.00, 1.95, 3.77, 5.28, 6.72},
                                                                {0.00, 2.90, 5.57, 7.77, 9.83}}};
constexpr std::array<double, 7> kReferencePureSimulation{0.25, 0.39, 0.29, 0.00, 0.48, 1.12, 1.92};

std::vector<std::string> spring_error(double error) {
  return {
      fmt::format("site[0].channel[0].prediction.spring.stiffness_n_per_m={:.17g}", kSpringStiffness * (1 + error))};
}

TEST(Seed002Linear, SensitivityTableMatchesPaperAndIndependentReference) {
  std::array<std::array<double, 5>, 7> table{};
  for (std::size_t i = 0; i < kErrors.size(); ++i) {
    for (std::size_t j = 0; j < kDelays.size(); ++j) {
      const auto cfg = load_example("seed002/spring.textproto", with(spring_error(kErrors[i]), round_trip(kDelays[j])));
      Experiment ex(cfg);
      const RunReport& r = ex.run();
      EXPECT_NEAR(r.response("x1").reference_peak * 1e3, 15.957, 0.0002 * 15.957);
      EXPECT_NEAR(r.response("x2").reference_peak * 1e3, 30.183, 0.0002 * 30.183);
      table[i][j] = r.response("x2").j_peak_pct;
    }
  }
  for (std::size_t i = 0; i < kErrors.size(); ++i) {
    std::string line = fmt::format("model error {:+.0f} %, round trip 0/25/50/75/100 ms:", 100 * kErrors[i]);
    for (std::size_t j = 0; j < kDelays.size(); ++j) {
      line += fmt::format(" {:.3f}", table[i][j]);
      // Independent implementation, same conventions: 0.3 percentage points are required; the
      // table is given to 0.01, so agreement to 0.015 is what matching conventions must give.
      EXPECT_NEAR(table[i][j], kReferenceTable[i][j], 0.015) << "error " << kErrors[i] << " delay " << kDelays[j];
    }
    std::printf("%s\n", line.c_str());
  }
  for (std::size_t j = 0; j < kDelays.size(); ++j) {
    // Exact model: zero error at every delay (the predictor removes the delay, seed 002 Eq. 4).
    EXPECT_LT(table[3][j], 1e-9);
  }
  for (std::size_t i = 0; i < kErrors.size(); ++i) {
    if (i == 3) {
      continue;
    }
    // With no delay the model error arrives in time and costs nothing; it grows with delay for
    // every nonzero model error (Fig. 7).
    EXPECT_LT(table[i][0], 1e-9);
    for (std::size_t j = 1; j < kDelays.size(); ++j) {
      EXPECT_GT(table[i][j], table[i][j - 1]) << "error " << kErrors[i] << " delay " << kDelays[j];
    }
  }
  // Paper: 6.5 % at 30 % model error and 50 ms; a reproduction must fall in 4-9 %.
  EXPECT_GT(table[0][2], 4.0);
  EXPECT_LT(table[0][2], 9.0);
  EXPECT_GT(table[6][2], 4.0);
  EXPECT_LT(table[6][2], 9.0);
}

TEST(Seed002Linear, PureSimulationWithWrongModelMatchesIndependentReference) {
  // Upper bound of seed 002 Fig. 9: the erroneous spring as the specimen, no network at all.
  // Every run's monolithic reference uses the specimen, so a run whose specimen is the erroneous
  // spring has the pure simulation with the wrong model as its reference.
  auto reference_x2_peak = [](double specimen_stiffness) {
    const auto cfg =
        load_example("seed002/spring.textproto",
                     {fmt::format("site[0].channel[0].specimen.spring.stiffness_n_per_m={:.17g}", specimen_stiffness)});
    Experiment ex(cfg);
    return ex.run().response("x2").reference_peak;
  };
  const double true_peak = reference_x2_peak(kSpringStiffness);
  for (std::size_t i = 0; i < kErrors.size(); ++i) {
    const double wrong_peak = reference_x2_peak(kSpringStiffness * (1 + kErrors[i]));
    const double err = 100.0 * std::abs(wrong_peak - true_peak) / true_peak;
    EXPECT_NEAR(err, kReferencePureSimulation[i], 0.02) << "model error " << kErrors[i];
  }
}

}  // namespace
}  // namespace rths::test_seed002
