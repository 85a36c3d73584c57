// The maRTHS benchmark distributed (examples/marths/elcentro_distributed.textproto) over twenty
// perturbed plants: the multi-axial site REMOTE behind a 40 ms round trip and a modified Smith predictor
// keeps the J-values of the local site, where the delayed force without it does not (the run's own
// rules: unit/test_marths_distributed.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "node_numerical/analysis/campaign.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/marths_campaign.hpp"
#include "support/test_support.hpp"

namespace rths::test_marths_distributed {
namespace {

using test::kMarthsDistributed;
using test::kMarthsLocal;

CampaignReport campaign(const char* example, std::uint64_t plants, const std::vector<std::string>& sets = {}) {
  return test::marths_campaign(example, plants, 1, sets);
}

using test::expect_every_run_completed;

TEST(MarthsDistributedBenchmark, FortyMillisecondsBehindTheSmithPredictorMatchTheLocalSite) {
  // 20 perturbed plants (seed 001 Table 1), El Centro x 0.4, decentralised RLS, local and remote.
  const CampaignReport local = campaign(kMarthsLocal, 20);
  const CampaignReport remote = campaign(kMarthsDistributed, 20);
  expect_every_run_completed(local);
  expect_every_run_completed(remote);
  ASSERT_EQ(remote.mean.size(), 1U);
  const MarthsCriteria& l = local.mean[0];
  const MarthsCriteria& r = remote.mean[0];
  std::printf(
      "[ measured ] 20 plants, local / remote at 40 ms: J2 %.3f/%.3f, %.3f/%.3f %%; J3 %.3f/%.3f, "
      "%.3f/%.3f %%; J5 %.3f/%.3f, %.3f/%.3f %%; J8 %.3f/%.3f, %.3f/%.3f, %.3f/%.3f, %.3f/%.3f %%\n",
      l.j2_nrms_pct[0], r.j2_nrms_pct[0], l.j2_nrms_pct[1], r.j2_nrms_pct[1], l.j3_peak_pct[0], r.j3_peak_pct[0],
      l.j3_peak_pct[1], r.j3_peak_pct[1], l.j5_nrms_pct[0], r.j5_nrms_pct[0], l.j5_nrms_pct[1], r.j5_nrms_pct[1],
      l.j8_nrms_pct[0], r.j8_nrms_pct[0], l.j8_nrms_pct[1], r.j8_nrms_pct[1], l.j8_nrms_pct[2], r.j8_nrms_pct[2],
      l.j8_nrms_pct[3], r.j8_nrms_pct[3]);
  // The site's own tracking is the local site's: the same plants and controller, with targets that
  // differ only by the Smith predictor's model error (measured within 0.15 points).
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(r.j2_nrms_pct[i], l.j2_nrms_pct[i], 0.5) << "J2," << i + 1;
    EXPECT_NEAR(r.j3_peak_pct[i], l.j3_peak_pct[i], 0.5) << "J3," << i + 1;
    EXPECT_NEAR(r.j5_nrms_pct[i], l.j5_nrms_pct[i], 0.5) << "J5," << i + 1;
  }
  // The structure's response: the predictor leaves at most half a point of the 40 ms (measured 0.06 to
  // 0.12 points, the reduced model's error), where the delayed force without it costs about 22 points.
  for (std::size_t d = 0; d < 4; ++d) {
    EXPECT_NEAR(r.j8_nrms_pct[d], l.j8_nrms_pct[d], 0.5) << "J8 of " << remote.evaluation_dofs[0][d];
  }
  const CampaignReport uncompensated = campaign(kMarthsDistributed, 1, {"site[iisl].compensation={ mode: NONE }"});
  expect_every_run_completed(uncompensated);
  for (std::size_t d = 0; d < 4; ++d) {
    EXPECT_GT(uncompensated.mean[0].j8_nrms_pct[d], l.j8_nrms_pct[d] + 10.0) << remote.evaluation_dofs[0][d];
  }
}

}  // namespace
}  // namespace rths::test_marths_distributed
