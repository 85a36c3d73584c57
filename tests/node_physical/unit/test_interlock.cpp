// The site's interlock as configured and agreed: limits are positive or absent (and present with
// an actuator), both ends must hold the same ones, and a tripped interlock stops a virtual-time run
// with exit code 8 and the reason, whether the site is remote or local. The tracking interlock trips
// after its steps in a row above its limit, and not before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "common/protocol/site_terms.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_physical/site/interlock.hpp"
#include "smith_predictor/site_models/site_models.hpp"
#include "support/test_support.hpp"

namespace rths::test_interlock {
namespace {

std::string load_error(const std::string& example, const std::vector<std::string>& overrides) {
  try {
    (void)test::load_example(example, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "loaded";
}

TEST(InterlockConfig, ALimitIsPositiveOrAbsent) {
  for (const char* value : {"-1", "0"}) {
    const std::string e =
        load_error("seed002/spring.textproto", {std::string("site[0].channel[0].stroke_limit_m=") + value});
    EXPECT_NE(e.find("site[0].channel[0].stroke_limit_m: is " + std::string(value) + ", expected a positive limit (m)"),
              std::string::npos)
        << e;
  }
  EXPECT_NE(load_error("seed002/spring.textproto", {"site[0].channel[0].velocity_limit_m_per_s=-0.5"})
                .find("velocity_limit_m_per_s: is -0.5"),
            std::string::npos);
  // Without an actuator a limit may be left out (none).
  EXPECT_EQ(load_error("seed002/spring.textproto", {"site[0].channel[0].force_limit_n="}), "loaded");
}

TEST(InterlockConfig, AChannelWithAnActuatorNeedsAllThreeLimits) {
  for (const char* field : {"stroke_limit_m", "velocity_limit_m_per_s", "force_limit_n"}) {
    const std::string e =
        load_error("actuator/spring_iisl.textproto", {std::string("site[0].channel[0].") + field + "="});
    EXPECT_NE(e.find(std::string("site[0].channel[0].") + field + ": missing; a channel with an actuator needs"),
              std::string::npos)
        << e;
  }
}

TEST(InterlockConfig, EveryExampleSetsEveryLimitOfEveryChannel) {
  // A lab copies an example: none may teach it to run an actuator without its interlock.
  std::size_t channels = 0;
  for (const std::filesystem::path& path : test::example_experiments()) {
    const LoadedConfig loaded = load_experiment(path, {}, /*resolve_calibration_files=*/false);
    for (const auto& site : loaded.experiment.site()) {
      for (const auto& channel : site.channel()) {
        EXPECT_TRUE(channel.has_stroke_limit_m() && channel.has_velocity_limit_m_per_s() && channel.has_force_limit_n())
            << path << " site " << site.name();
        ++channels;
      }
    }
  }
  EXPECT_GT(channels, 15U);
}

TEST(InterlockConfig, ExtrapolationTimeIsBounded) {
  EXPECT_NE(
      load_error("seed002/spring.textproto", {"realtime.max_extrapolation_s=0"}).find("realtime.max_extrapolation_s"),
      std::string::npos);
  EXPECT_NE(load_error("seed002/spring.textproto", {"realtime.max_extrapolation_s=5"}).find("<= 1 s"),
            std::string::npos);
}

// What the site's terms say when the two ends were given different values of one field.
std::string mismatch(const std::string& override_at_site) {
  const LoadedConfig numerical = test::load_example("seed002/spring.textproto");
  const LoadedConfig site = test::load_example("seed002/spring.textproto", {override_at_site});
  const config::Site& at_numerical = numerical.experiment.site(0);
  const config::Site& at_site = site.experiment.site(0);
  return terms_mismatch(site_terms(numerical.experiment, at_numerical, describe_site_models(at_numerical)),
                        site_terms(site.experiment, at_site, describe_site_models(at_site)));
}

TEST(InterlockTerms, BothEndsMustAgreeOnLimitsTimeoutAndHold) {
  EXPECT_EQ(mismatch("duration_s=3"), "");  // not a term: each end may run its own length of record
  EXPECT_EQ(mismatch("site[0].channel[0].stroke_limit_m=0.2"),
            "channel 1 stroke_limit_m differs: 0.1 at the numerical node, 0.2 at the site (0: none)");
  EXPECT_EQ(mismatch("site[0].channel[0].velocity_limit_m_per_s=1"),
            "channel 1 velocity_limit_m_per_s differs: 0.5 at the numerical node, 1 at the site (0: none)");
  EXPECT_EQ(mismatch("site[0].channel[0].force_limit_n="),
            "channel 1 force_limit_n differs: 10000 at the numerical node, 0 at the site (0: none)");
  EXPECT_EQ(mismatch("realtime.peer_timeout_s=0.5"),
            "realtime.peer_timeout_s differs: 0.1 at the numerical node, 0.5 at the site");
  EXPECT_NE(mismatch("realtime.hold=EXTRAPOLATE").find("realtime.hold differs: HOLD"), std::string::npos);
}

// The seed 002 spring frame's interface (floor 1) moves about 16 mm under El Centro x 0.2: a 5 mm
// stroke trips on the way there.
void expect_stopped_by_the_interlock(const std::vector<std::string>& overrides, const std::string& site) {
  Experiment ex(test::load_example("seed002/spring.textproto", overrides));
  const RunReport& r = ex.run();
  EXPECT_EQ(r.exit_code, kExitLimit);
  EXPECT_LT(r.steps, r.planned_steps);
  EXPECT_GT(r.steps, 100);
  EXPECT_EQ(ex.numerical().rows(), static_cast<std::size_t>(r.steps));
  EXPECT_NE(r.stop_reason.find("site \"" + site + "\" interlock: channel 1: target"), std::string::npos)
      << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("beyond the stroke limit 0.005 m"), std::string::npos) << r.stop_reason;
  // What the specimen was given (its measured displacement, behind an ideal actuator) never left the
  // stroke, although the numerical node's command did.
  const auto measured = ex.numerical().column(ex.numerical().column_index("xm_" + site));
  const auto command = ex.numerical().column(ex.numerical().column_index("u_" + site));
  EXPECT_LE(
      *std::max_element(measured.begin(), measured.end(), [](double a, double b) { return std::abs(a) < std::abs(b); }),
      0.005);
  EXPECT_GT(std::abs(command.back()), 0.005);
}

TEST(InterlockRun, ARemoteSiteTripStopsAVirtualRunWithExitCode8) {
  expect_stopped_by_the_interlock({"site[0].channel[0].stroke_limit_m=0.005"}, "spring");
}

TEST(InterlockRun, ALocalSiteTripStopsAVirtualRunWithExitCode8) {
  expect_stopped_by_the_interlock(
      {"site[0].placement=LOCAL", "site[0].link=", "site[0].channel[0].stroke_limit_m=0.005"}, "spring");
}

// |target - measured| above the limit in tracking_steps consecutive steps trips; a step back within
// it starts the count again; a NaN counts as above; a channel without a limit never trips.
TEST(InterlockTracking, TripsAfterItsStepsInARowAboveTheLimitAndNotBefore) {
  Interlock interlock({{0.1, 0.5, 1e4, 0.005, 3}, {0.1, 0.5, 1e4}}, 1.0 / 1024);
  EXPECT_TRUE(interlock.check_tracking(0, 0.012, 0.0));
  EXPECT_TRUE(interlock.check_tracking(0, 0.012, 0.0));
  EXPECT_TRUE(interlock.check_tracking(0, 0.012, 0.0075));  // 4.5 mm: within, the count starts again
  EXPECT_TRUE(interlock.check_tracking(0, 0.012, 0.0));
  EXPECT_TRUE(interlock.check_tracking(0, 0.0, 0.0051));
  EXPECT_TRUE(interlock.check_tracking(1, 0.09, -0.09));  // no limit on channel 1
  EXPECT_FALSE(interlock.check_tracking(0, 0.012, std::nan("")));
  ASSERT_TRUE(interlock.tripped());
  EXPECT_EQ(interlock.trip().what, InterlockTrip::What::kTrackingError);
  EXPECT_EQ(interlock.trip().steps, 3U);
  EXPECT_TRUE(std::isnan(interlock.trip().value));
  Interlock exact({{0.1, 0.5, 1e4, 0.005, 2}}, 1.0 / 1024);
  EXPECT_TRUE(exact.check_tracking(0, 0.0, 0.005));  // at the limit: within
  EXPECT_TRUE(exact.check_tracking(0, 0.017, 0.0));
  EXPECT_FALSE(exact.check_tracking(0, 0.0, 0.017));
  EXPECT_EQ(exact.trip().describe(),
            "channel 1: tracking error |target - measured| 0.017 m above its limit 0.005 m in 2 steps in a row "
            "(tracking_limit_m, tracking_limit_steps): the actuator does not follow the site's targets");
}

// A controller's command reaches the plant only with all three parts finite: a huge but finite target
// that a differentiating controller overflowed to an infinite velocity or acceleration trips the
// interlock as a non-finite displacement does, on a channel without a stroke limit too.
TEST(InterlockCommand, EveryPartOfACommandMustBeFinite) {
  const double inf = std::numeric_limits<double>::infinity();
  const InterfaceMotion fine{-3.9e307, 0.0, 0.0};
  const std::vector<std::pair<InterfaceMotion, std::string>> bad_commands{
      {{std::nan(""), 0.0, 0.0}, "command's displacement is not finite"},
      {{-3.9e307, -inf, 0.0}, "command's velocity is not finite"},
      {{-3.9e307, 0.0, -inf}, "command's acceleration is not finite"},
      {{0.0, 0.0, std::nan("")}, "command's acceleration is not finite"}};
  for (const auto& [bad, named] : bad_commands) {
    Interlock interlock({{0.1, 0.5, 1e4}, {}}, 1.0 / 1024);
    EXPECT_TRUE(interlock.command_inside(1, fine));  // no stroke limit on channel 1
    EXPECT_FALSE(interlock.command_inside(1, bad));
    EXPECT_FALSE(interlock.command_inside(0, bad));
    EXPECT_TRUE(interlock.check_command(1, fine));
    EXPECT_FALSE(interlock.check_command(1, bad));
    ASSERT_TRUE(interlock.tripped());
    EXPECT_EQ(interlock.trip().what, InterlockTrip::What::kCommandNotFinite);
    EXPECT_EQ(interlock.trip().channel, 1U);
    EXPECT_NE(interlock.trip().describe().find(named), std::string::npos) << interlock.trip().describe();
  }
}

// A target's and a measurement's trip name the quantity that was not finite, as a command's does.
TEST(InterlockTarget, ATripNamesTheQuantityThatWasNotFinite) {
  const double inf = std::numeric_limits<double>::infinity();
  Interlock targets({{0.1, 0.5, 1e4}}, 1.0 / 1024);
  std::vector<InterfaceMotion> admitted(1);
  const std::vector<InterfaceMotion> wanted{{0.0, inf, 0.0}};
  EXPECT_FALSE(targets.admit(wanted, admitted));
  EXPECT_EQ(targets.trip().what, InterlockTrip::What::kTargetNotFinite);
  EXPECT_NE(targets.trip().describe().find("a target whose velocity is not finite (inf)"), std::string::npos)
      << targets.trip().describe();

  Interlock measurements({{0.1, 0.5, 1e4}}, 1.0 / 1024);
  EXPECT_FALSE(measurements.check_measurement(0, Measurement{0.0, 0.0, std::nan("")}));
  EXPECT_NE(measurements.trip().describe().find("a measured force that is not finite (nan)"), std::string::npos)
      << measurements.trip().describe();
}

// Behind the uncompensated IISL actuator (seed 004 Eq. 7, 13.67 ms of lag) the seed 002 spring's
// interface lags its target by about the lag times the velocity, some 1 mm at El Centro x 0.2's
// peak: a 1 um limit over 5 steps trips once the floor moves, with exit code 8 and the reason; 5 mm
// never does.
TEST(InterlockRun, ATrackingErrorTripStopsAVirtualRunWithExitCode8) {
  {
    Experiment ex(test::load_example(
        "actuator/spring_iisl.textproto",
        {"site[0].channel[0].tracking_limit_m=1e-6", "site[0].channel[0].tracking_limit_steps=5", "duration_s=5"}));
    const RunReport& r = ex.run();
    EXPECT_EQ(r.exit_code, kExitLimit);
    EXPECT_LT(r.steps, r.planned_steps);
    EXPECT_NE(r.stop_reason.find("site \"spring\" interlock: channel 1: tracking error"), std::string::npos)
        << r.stop_reason;
    EXPECT_NE(r.stop_reason.find("in 5 steps in a row"), std::string::npos) << r.stop_reason;
  }
  Experiment ex(test::load_example("actuator/spring_iisl.textproto",
                                   {"site[0].channel[0].tracking_limit_m=0.005", "duration_s=5"}));
  const RunReport& r = ex.run();
  EXPECT_EQ(r.exit_code, kExitCompleted) << r.stop_reason;
}

}  // namespace
}  // namespace rths::test_interlock
