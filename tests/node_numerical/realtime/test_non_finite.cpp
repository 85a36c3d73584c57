// A run that went wrong never reports success, in real time too: a non-finite state stops the
// numerical node with exit code 9, the site is told to abort, and every record is written up to the
// stop (metrics, guards and the virtual-time runs: unit/test_non_finite.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/core/exit_codes.hpp"
#include "support/non_finite.hpp"
#include "support/process.hpp"

namespace rths::test_non_finite {
namespace {

using test::all_finite;
using test::NonFiniteRun;

TEST_F(NonFiniteRun, RealTimeStopsTellsTheSiteToAbortAndWritesEveryRecord) {
  const auto config = config_file().string();
  test::Process site("rths-physical",
                     {"serve", config, "--site", "lab", "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string(),
                      "--set", test::site_key_override(dir_, "lab")},
                     dir_ / "site");
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  test::Process numerical("rths-numerical",
                          {"run", config, "--realtime", "--set", "site[lab].address=" + where, "--set",
                           test::site_key_override(dir_, "lab"), "--out", (dir_ / "run").string(), "--quiet"},
                          dir_ / "numerical");
  EXPECT_EQ(numerical.wait(std::chrono::seconds(30)), kExitNonFinite) << numerical.err();
  // The site was told to abort (exit 5): its actuator holds and its record is written.
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitPeerAborted) << site.err();
  const results::SiteSummary site_summary = test::read_site_summary(dir_ / "site/site_lab.json");
  EXPECT_EQ(site_summary.exit_code(), kExitPeerAborted);
  EXPECT_NE(site_summary.stop_reason().find("non-finite"), std::string::npos) << site_summary.stop_reason();
  EXPECT_EQ(test::read_summary(dir_ / "run/summary.json").exit_code(), kExitNonFinite);
  EXPECT_NE(numerical.err().find("non-finite"), std::string::npos) << numerical.err();
  const auto x1 = test::csv_column(dir_ / "run/numerical.csv", "x1_m");
  EXPECT_GT(x1.size(), 1U);
  EXPECT_LT(x1.size(), 2049U);
  EXPECT_TRUE(all_finite(x1));
  // Nothing non-finite was ever sent: every target the site received is a number.
  EXPECT_TRUE(all_finite(test::csv_column(dir_ / "site/site_lab.csv", "target_m")));
}

}  // namespace
}  // namespace rths::test_non_finite
