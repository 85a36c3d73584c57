#pragma once

// The maRTHS campaigns of the tests: an example run over perturbed plants, and the rule that every run
// of it completed (test_marths_benchmark.cpp, test_marths_distributed.cpp, unit and acceptance).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "node_numerical/analysis/campaign.hpp"
#include "support/test_support.hpp"

namespace rths::test {

// The benchmark's examples: the maRTHS site local with decentralised RLS (seed 001), and the same site
// remote behind a 40 ms round trip and a modified Smith predictor.
inline constexpr const char* kMarthsLocal = "marths/elcentro_rls.textproto";
inline constexpr const char* kMarthsDistributed = "marths/elcentro_distributed.textproto";

// plants perturbed plants of an example, uncertainty seeds from first_seed, two at a time; each run
// with its own sensor noise when noise_per_run.
inline CampaignReport marths_campaign(const std::string& example, std::uint64_t plants, std::uint64_t first_seed,
                                      const std::vector<std::string>& sets = {}, bool noise_per_run = false) {
  CampaignOptions options;
  options.plants = plants;
  options.first_seed = first_seed;
  options.jobs = 2;
  options.noise_per_run = noise_per_run;
  return run_campaign(load_example(example, sets), options);
}

// Every run completed with finite criteria: no plant of the campaign diverged or tripped.
inline void expect_every_run_completed(const CampaignReport& report) {
  EXPECT_EQ(report.exit_code, kExitCompleted);
  for (const CampaignRun& run : report.runs) {
    EXPECT_EQ(run.exit_code, kExitCompleted) << "seed " << run.seed << ": " << run.stop_reason;
    ASSERT_EQ(run.sites.size(), 1U) << "seed " << run.seed;
    EXPECT_TRUE(run.sites[0].finite()) << "seed " << run.seed;
  }
}

}  // namespace rths::test
