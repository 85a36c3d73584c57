// Local actuator control on uncertain plants: the seed 001 RLS compensator, calibrated once on the
// nominal seed 004 IISL actuator, stays stable and compensating on ten plants drawn with 20 %
// uncertainty behind the seed 002 spring frame (the other tests of it: unit/test_actuator_control.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "support/actuator_control.hpp"
#include "support/test_support.hpp"

namespace rths::test::test_actuator_control {
namespace {

TEST_F(CalibratedRls, RlsStaysStableOnTenPlantsWithTwentyPercentUncertainty) {
  // The compensator is calibrated once on the nominal plant; each run's plant is a different draw.
  const std::string calibration = calibrate();
  std::vector<double> j1;
  std::vector<double> j2;
  std::vector<double> j3;
  for (int seed = 1; seed <= 10; ++seed) {
    const LoadedConfig loaded =
        load_example(kRls, {calibration, "site[0].channel[0].actuator.linear.perturbation.relative=0.2",
                            "site[0].channel[0].actuator.linear.perturbation.seed=" + std::to_string(seed)});
    const Outcome o = run_virtual(loaded);
    ASSERT_TRUE(o.finite) << "seed " << seed;
    j1.push_back(o.tracking.j1_delay_ms);
    j2.push_back(o.tracking.j2_nrms_pct);
    j3.push_back(o.tracking.j3_peak_pct);
    // Stable and still compensating on every plant: pass-through on these plants lags 12.7-15.6 ms
    // with J2 8.5-10.9 % and a 5.0-6.5 % floor error, so these bounds fail if the compensator stops
    // working.
    EXPECT_LT(o.report.response("x2").j_peak_pct, 2.0) << "seed " << seed;
    EXPECT_LE(std::abs(o.tracking.j1_delay_ms), 1.0) << "seed " << seed;
    EXPECT_LE(o.tracking.j2_nrms_pct, 5.0) << "seed " << seed;
  }
  const auto spread = [](const std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return std::pair{*lo, *hi};
  };
  const auto [j1_lo, j1_hi] = spread(j1);
  const auto [j2_lo, j2_hi] = spread(j2);
  const auto [j3_lo, j3_hi] = spread(j3);
  std::printf("[ measured ] 10 plants at 20 %%: J1 %.2f..%.2f ms, J2 %.3f..%.3f %%, J3 %.3f..%.3f %%\n", j1_lo, j1_hi,
              j2_lo, j2_hi, j3_lo, j3_hi);
}

}  // namespace
}  // namespace rths::test::test_actuator_control
