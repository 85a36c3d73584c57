// A multi-axial site in its own process (rths-physical, started by rths-numerical loopback on
// 127.0.0.1): its summary, site_<name>.json, reports each actuator of its setup -- the stroke's J1-J3,
// the site controller's report and the plant's -- as the numerical node's summary does for a local site.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "common/core/exit_codes.hpp"
#include "results.pb.h"
#include "support/process.hpp"
#include "support/spring_bridge.hpp"
#include "support/test_support.hpp"

namespace rths::test_multi_axial_site {
namespace {

class MultiAxialSite : public test::RunFolderTest {};

TEST_F(MultiAxialSite, ItsSummaryReportsEachActuatorWithItsControllerAndPlant) {
  test::Process run("rths-numerical",
                    {"loopback", test::example("marths/elcentro_distributed.textproto").string(), "--out",
                     (dir_ / "run").string(), "--quiet", "--no-plots", "--set", "duration_s=7"},
                    dir_);
  const int exit_code = run.wait(std::chrono::seconds(90));
  const std::filesystem::path site_summary = dir_ / "run/site_iisl.json";
  if (exit_code != kExitCompleted &&
      !test::nodes_kept_time_of(dir_ / "run/summary.json", site_summary, "iisl", 0.0, 0.0)) {
    GTEST_SKIP() << "the nodes held too many steps: this machine could not keep the run's time";
  }
  ASSERT_EQ(exit_code, kExitCompleted) << run.err();
  const results::SiteSummary site = test::read_site_summary(site_summary);
  ASSERT_EQ(site.actuators_size(), 2) << "the rigid coupler's two actuators";
  for (const results::Channel& actuator : site.actuators()) {
    // The example's site controller: one RLS compensator per actuator, which adapted once the
    // earthquake moved the stroke.
    ASSERT_TRUE(actuator.controller().has_rls()) << actuator.ShortDebugString();
    EXPECT_GT(actuator.controller().rls().updates(), 0U);
    EXPECT_TRUE(actuator.plant().has_two_actuator_frame()) << actuator.ShortDebugString();
    EXPECT_TRUE(std::isfinite(actuator.tracking().j2_nrms_pct()));
    EXPECT_GT(actuator.tracking().j2_nrms_pct(), 0.0);
  }
}

}  // namespace
}  // namespace rths::test_multi_axial_site
