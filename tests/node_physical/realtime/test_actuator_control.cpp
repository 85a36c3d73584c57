// Local actuator control in real time: the seed 002 spring frame behind the seed 004 IISL actuator
// with the seed 001 RLS compensator, calibrated by `rths-numerical calibrate`, through rths-relay's
// 50 ms round trip on 127.0.0.1, against the same run in virtual time (the other tests of it:
// unit/test_actuator_control.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/actuator_control.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test::test_actuator_control {
namespace {

TEST_F(ActuatorCli, CalibrateThenRlsWithA50msRoundTripIsStableThroughTheRelayInRealTime) {
  const std::string cal = (dir_ / "cal.textproto").string();
  Process calibrate("rths-numerical", {"calibrate", example(kRls).string(), "--out", cal, "--quiet"}, dir_ / "cal");
  ASSERT_EQ(calibrate.wait(std::chrono::seconds(60)), kExitCompleted) << calibrate.err();
  ASSERT_TRUE(std::filesystem::exists(cal));

  // Seed 002 Case II through the actuator with RLS and a 50 ms round trip: in real time (site,
  // rths-relay holding 25 ms each way, numerical node; UDP on 127.0.0.1) and in virtual time. Both
  // stable, peaks equal within 1 %.
  std::vector<std::string> overrides = round_trip(0.05);
  overrides.push_back(std::string(kCalibrationPath) + "=" + cal);
  ASSERT_EQ(run_through_relay(dir_, example(kRls).string(), "spring", overrides, 15), kExitCompleted);
  overrides.emplace_back("duration_s=15");
  Experiment vt(load_example(kRls, overrides));
  const RunReport& report = vt.run();
  const double vt_peak = report.response("x2").peak;
  const auto rt = csv_column(dir_ / "run/numerical.csv", "x2_m");
  const auto ref = csv_column(dir_ / "run/reference.csv", "x2_m");
  const double rt_peak = peak(rt);
  const double rt_pct = 100.0 * std::abs(rt_peak - peak(ref)) / peak(ref);
  std::printf(
      "[ measured ] RLS + 50 ms round trip, x2 peak: real time %.4f mm (J_peak %.3f %%), virtual time "
      "%.4f mm (J_peak %.3f %%)\n",
      rt_peak * 1e3, rt_pct, vt_peak * 1e3, report.response("x2").j_peak_pct);
  for (const double v : rt) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NEAR(rt_peak, vt_peak, 0.01 * vt_peak);
  EXPECT_LT(rt_pct, 2.0);
  // The site's own summary carries its tracking metrics and the compensator's state.
  const results::SiteSummary site_summary = read_site_summary(dir_ / "site/site_spring.json");
  ASSERT_EQ(site_summary.channels_size(), 1);
  const results::Channel& channel = site_summary.channels(0);
  EXPECT_LE(std::abs(channel.tracking().j1_delay_ms()), 1.0) << channel.DebugString();
  EXPECT_LE(channel.tracking().j2_nrms_pct(), 5.0) << channel.DebugString();
  ASSERT_TRUE(channel.controller().has_rls()) << channel.DebugString();
  EXPECT_GT(channel.controller().rls().updates(), 0U) << channel.DebugString();
}

}  // namespace
}  // namespace rths::test::test_actuator_control
