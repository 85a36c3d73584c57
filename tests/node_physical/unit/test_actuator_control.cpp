// Local actuator control in the loop: the seed 002 spring frame with its specimen behind the seed 004 IISL actuator,
// under pass-through and the seed 001 RLS compensator; tracking metrics J1-J3; part 2 driven by the
// target or the measurement; the full dRTHS with a 50 ms round trip in virtual time; the commands.
// Plant uncertainty and the real-time run are in acceptance/ and realtime/test_actuator_control.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/core/child_process.hpp"
#include "common/core/exit_codes.hpp"
#include "common/metrics/metrics.hpp"
#include "node_numerical/analysis/calibration.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/actuator_control.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test::test_actuator_control {
namespace {

constexpr const char* kPassThrough = "actuator/spring_iisl.textproto";

// ---------------------------------------------------------------------------------------------
// Tracking metrics against closed forms.

TEST(TrackingMetrics, DelayedCopyGivesItsDelayAndClosedFormErrors) {
  const double rate = 1024.0;
  std::vector<double> target(4096);
  std::vector<double> measured(4096);
  const int lag = 14;
  for (std::size_t k = 0; k < target.size(); ++k) {
    const auto t = static_cast<double>(k) / rate;
    // A burst that starts and ends at rest, as a ground-motion response does (the correlation is
    // not normalised by the overlap, as in finddelay, so the record's ends must be quiet).
    const double window = std::pow(std::sin(M_PI * static_cast<double>(k) / static_cast<double>(target.size())), 2);
    target[k] = window * (std::sin(2 * M_PI * 1.3 * t) + 0.4 * std::sin(2 * M_PI * 3.1 * t + 0.5));
  }
  for (std::size_t k = 0; k < target.size(); ++k) {
    measured[k] = k >= lag ? target[k - lag] : 0.0;
  }
  const TrackingMetrics m = tracking_metrics(target, measured, rate);
  EXPECT_DOUBLE_EQ(m.j1_delay_ms, 1000.0 * lag / rate);  // positive: the measurement lags
  const TrackingMetrics lead = tracking_metrics(measured, target, rate);
  EXPECT_DOUBLE_EQ(lead.j1_delay_ms, -1000.0 * lag / rate);

  // A scaled copy: J2 = J3 = |1 - a| exactly, J1 = 0.
  std::vector<double> scaled(target.size());
  for (std::size_t k = 0; k < target.size(); ++k) scaled[k] = 0.97 * target[k];
  const TrackingMetrics s = tracking_metrics(target, scaled, rate);
  EXPECT_DOUBLE_EQ(s.j1_delay_ms, 0.0);
  EXPECT_NEAR(s.j2_nrms_pct, 3.0, 1e-9);
  EXPECT_NEAR(s.j3_peak_pct, 3.0, 1e-9);

  const std::vector<double> zeros(100, 0.0);
  const TrackingMetrics z = tracking_metrics(zeros, zeros, rate);
  EXPECT_EQ(z.j1_delay_ms, 0.0);
  EXPECT_EQ(z.j2_nrms_pct, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Virtual-time runs in process.
void print_outcome(const char* what, const Outcome& o) {
  std::printf(
      "[ measured ] %s: J1 %.2f ms, J2 %.3f %%, J3 %.3f %%; x1 J_peak %.3f %%, x2 J_peak %.3f %% (J_RMS %.3f %%)\n",
      what, o.tracking.j1_delay_ms, o.tracking.j2_nrms_pct, o.tracking.j3_peak_pct, o.report.response("x1").j_peak_pct,
      o.report.response("x2").j_peak_pct, o.report.response("x2").j_rms_pct);
}

// Calibrates the RLS example (optionally with extra overrides) into a file and returns the override
// that makes the config read it.
class CalibratedRls : public RunFolderTest {
 protected:
  std::string calibrate(const std::vector<std::string>& overrides = {}) {
    const LoadedConfig raw = load_experiment(example(kRls), overrides, /*resolve_calibration_files=*/false);
    const auto file = dir_ / "calibration.textproto";
    std::ofstream(file) << calibration_text(calibrate_rls(raw), "test");
    return std::string(kCalibrationPath) + "=" + file.string();
  }
  LoadedConfig rls_config(std::vector<std::string> overrides) {
    overrides.push_back(calibrate(overrides));
    return load_example(kRls, overrides);
  }
};

TEST(ActuatorControl, PassThroughLagsTheActuatorPlusHalfASampleAndTheFloorsDeviate) {
  const Outcome o = run_virtual(load_example(kPassThrough));
  print_outcome("pass-through", o);
  ASSERT_TRUE(o.finite);
  // Seed 004 Eq. 7: a1/a0 = 13.36 ms of low-frequency lag (phase delay 13.35 ms at 1 Hz, 13.11 ms
  // at 5 Hz), plus the hold's half sample, between the target of a step and the reading at its
  // tick: 13.85 ms. J1 is a whole number of steps (the cross-correlation peak): the one within
  // half a step of that, 14 (13.67 ms). A reading one step early or late (13 or 15 steps) fails.
  constexpr double kRateHz = 1024.0;
  const double lag_ms = 1e3 * (3.182e7 / 2.382e9 + 0.5 / kRateHz);
  EXPECT_NEAR(o.tracking.j1_delay_ms, lag_ms, 1e3 * 0.5 / kRateHz);
  EXPECT_GT(o.tracking.j2_nrms_pct, 5.0);
  // The specimen's force lags its target: the floors no longer follow the monolithic reference.
  EXPECT_GT(o.report.response("x2").j_rms_pct, 0.1);
}

TEST_F(CalibratedRls, RlsTracksWithinOneMillisecondAndFloorsWithinTwoPercent) {
  const Outcome o = run_virtual(rls_config({}));
  print_outcome("rls", o);
  ASSERT_TRUE(o.finite);
  EXPECT_LE(std::abs(o.tracking.j1_delay_ms), 1.0);
  EXPECT_LE(o.tracking.j2_nrms_pct, 5.0);
  EXPECT_LT(o.report.response("x2").j_peak_pct, 2.0);
  const Outcome p = run_virtual(load_example(kPassThrough));
  EXPECT_LT(o.report.response("x2").j_rms_pct, p.report.response("x2").j_rms_pct);
}

TEST(ActuatorControl, PartTwoOnTheMeasurementHidesTheActuatorLagPartTwoOnTheTargetShowsIt) {
  // Exact model, noiseless sensors, a 50 ms round trip, pass-through: with part 2 fed the measured
  // displacement the model error is exactly zero, so the numerical node integrates the reference;
  // fed the target, the actuator's tracking error reaches the structure as it would in a lab.
  std::vector<std::string> common = round_trip(0.05);
  common.insert(common.end(), {"site[0].channel[0].actuator.noise.displacement_sd_m=0",
                               "site[0].channel[0].actuator.noise.force_sd_n=0"});
  std::vector<std::string> measured = common;
  measured.emplace_back("site[0].compensation.part2_input=MEASURED");
  const Outcome m = run_virtual(load_example(kPassThrough, measured));
  const Outcome t = run_virtual(load_example(kPassThrough, common));
  print_outcome("part 2 on the measurement", m);
  print_outcome("part 2 on the target", t);
  EXPECT_LE(m.report.response("x2").j_rms_pct, 1e-9);
  EXPECT_LE(m.report.response("x1").j_peak_pct, 1e-9);
  EXPECT_GT(t.report.response("x2").j_rms_pct, 0.1);
  // The specimen lagged either way: the tracking metrics do not depend on what part 2 reads.
  EXPECT_NEAR(m.tracking.j1_delay_ms, t.tracking.j1_delay_ms, 1.0);
}

TEST(ActuatorControl, LocalSiteRunsTheSameControllerCodeAsARemoteOne) {
  // Zero delay, exact model: a LOCAL site (its force used directly) and a REMOTE one (modified Smith
  // with part 2 on the target) feed the structure the same measured force.
  const Outcome remote = run_virtual(load_example(kPassThrough));
  const Outcome local = run_virtual(load_example(kPassThrough, {"site[0].link=", "site[0].placement=LOCAL"}));
  print_outcome("local site", local);
  EXPECT_NEAR(local.tracking.j1_delay_ms, remote.tracking.j1_delay_ms, 1e-12);
  EXPECT_NEAR(local.tracking.j2_nrms_pct, remote.tracking.j2_nrms_pct, 1e-6 * remote.tracking.j2_nrms_pct);
  EXPECT_NEAR(local.report.response("x2").peak, remote.report.response("x2").peak,
              1e-9 * remote.report.response("x2").peak);
}

TEST_F(CalibratedRls, FullDrthsWithRlsAndA50msRoundTripIsStableInVirtualTime) {
  const Outcome o = run_virtual(rls_config(round_trip(0.05)));
  print_outcome("rls + 50 ms round trip", o);
  ASSERT_TRUE(o.finite);
  EXPECT_LE(std::abs(o.tracking.j1_delay_ms), 1.0);
  EXPECT_LT(o.report.response("x2").j_peak_pct, 2.0);
}

// ---------------------------------------------------------------------------------------------
// The commands, as a lab engineer runs them.

TEST_F(ActuatorCli, FrozenRlsAdaptationIsReportedAndTheRunCompletes) {
  // From FF = [1, 0, 0, 0] the compensator must grow FF[0] to about 4 to cancel the 13 ms lag: a
  // divergence limit of 1.2 freezes it early; the run goes on with the last good FIR.
  Process run("rths-numerical",
              {"run", example(kPassThrough).string(), "--out", (dir_ / "run").string(), "--set", "duration_s=10",
               "--set", "site[0].channel[0].controller.rls={ divergence_limit: 1.2 }"},
              dir_ / "run");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  EXPECT_NE(run.err().find("RLS adaptation frozen"), std::string::npos) << run.err();
  const results::RunSummary summary = read_summary(dir_ / "run/summary.json");
  const results::ControllerReport& controller = summary.sites().at("spring").channels(0).controller();
  EXPECT_EQ(controller.rls().frozen(), results::RlsController::diverged) << controller.DebugString();
  EXPECT_NE(controller.rls().freeze_message().find("RLS adaptation frozen"), std::string::npos);
}

// rths-numerical as a user who may not write into an installed example's folder: this user, or for
// root (who may write anywhere) nobody, through setpriv. Its exit code; its stdout and stderr in
// log.stdout and log.stderr. nullopt when root has no setpriv to become nobody with.
std::optional<int> numerical_as_a_user(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::vector<std::string> argv;
  if (::geteuid() == 0) {
    const std::optional<std::filesystem::path> setpriv = find_program("setpriv");
    if (!setpriv) return std::nullopt;
    argv = {setpriv->string(), "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  }
  argv.push_back((bin_dir() / "rths-numerical").string());
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions options;
  options.stdout_file = log.string() + ".stdout";
  options.stderr_file = log.string() + ".stderr";
  ChildProcess child(argv, options);
  return child.wait_for(std::chrono::seconds(120));
}

// An installed example is read-only (docs/installing.md, "The Debian package"): calibrate cannot write the
// calibration_path beside it, says so at once with what to do (exit 2, before the calibration runs),
// writes where --out says, and prints the --set with which the run then reads it.
TEST_F(ActuatorCli, AReadOnlyExampleCalibratesToOutAndRunsWithTheSetItPrints) {
  namespace fs = std::filesystem;
  const fs::path installed = dir_ / "installed";
  fs::create_directories(installed / "actuator");
  fs::copy_file(example(kRls), installed / "actuator" / "spring_iisl_rls.textproto");
  // The data copied, not linked: the user must be able to read it wherever the clone is (under
  // /root, a clone is root's alone).
  fs::copy(source_dir() / "examples" / "data", installed / "data", fs::copy_options::recursive);
  fs::permissions(installed / "actuator", fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const fs::path home = dir_ / "home";  // the user's own, writable folder
  fs::create_directories(home);
  fs::permissions(home, fs::perms::all);
  const std::string config = (installed / "actuator" / "spring_iisl_rls.textproto").string();

  const std::optional<int> refused = numerical_as_a_user({"calibrate", config}, dir_ / "refused");
  if (!refused) GTEST_SKIP() << "this machine cannot run a process as another user than root (no setpriv)";
  EXPECT_EQ(*refused, kExitBadInput);
  const std::string err = slurp(dir_ / "refused.stderr");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("spring_iisl_rls.calibration.textproto, cannot be written (Permission denied); expected a "
                     "writable place: rths-numerical calibrate " +
                     config + " --out FILE"),
            std::string::npos)
      << err;

  const fs::path cal = home / "cal.textproto";
  ASSERT_EQ(numerical_as_a_user({"calibrate", config, "--out", cal.string()}, dir_ / "calibrated"), kExitCompleted)
      << slurp(dir_ / "calibrated.stderr");
  const std::string set = "site[spring].channel[0].controller.rls.calibration_path=" + cal.string();
  EXPECT_NE(slurp(dir_ / "calibrated.stdout").find("run the config with it: --set " + set), std::string::npos)
      << slurp(dir_ / "calibrated.stdout");
  EXPECT_FALSE(fs::exists(installed / "actuator" / "spring_iisl_rls.calibration.textproto"));

  ASSERT_EQ(numerical_as_a_user({"run", config, "--set", set, "--set", "duration_s=2", "--out", (home / "run").string(),
                                 "--quiet", "--no-plots"},
                                dir_ / "ran"),
            kExitCompleted)
      << slurp(dir_ / "ran.stderr");
  EXPECT_EQ(read_summary(home / "run" / "summary.json").exit_code(), kExitCompleted);
  fs::permissions(installed / "actuator", fs::perms::owner_write, fs::perm_options::add);  // to be removed
}

TEST_F(ActuatorCli, MissingCalibrationFileIsABadConfigThatSaysHowToMakeIt) {
  Process run("rths-numerical",
              {"run", example(kRls).string(), "--out", (dir_ / "run").string(), "--set",
               std::string(kCalibrationPath) + "=" + (dir_ / "absent.textproto").string()},
              dir_ / "run");
  EXPECT_EQ(run.wait(std::chrono::seconds(30)), kExitBadInput);
  EXPECT_NE(run.err().find("rths-numerical calibrate"), std::string::npos) << run.err();
}

TEST(ActuatorConfig, BadActuatorsAndControllersAreRejectedWithTheFieldNamed) {
  const auto rejects = [](const std::string& assignment, const std::string& expected) {
    try {
      load_example(kPassThrough, {assignment});
      ADD_FAILURE() << assignment << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  rejects("site[0].channel[0].actuator.linear.denominator=[1, -485.5, 1.317e5, 3.182e7, 2.382e9]",
          "expected a stable actuator model");
  rejects("site[0].channel[0].actuator.linear.numerator=[1, 2, 3, 4, 5, 6]", "expected a proper model");
  rejects("site[0].channel[0].actuator.noise.displacement_sd_m=-1", "noise.displacement_sd_m");
  rejects("site[0].channel[0].controller.rls={ taps: 9 }", "expected 1..8 taps");
  rejects("site[0].channel[0].controller.rls={ initial_ff: [1, 0] }", "expected taps = 4");
  rejects("site[0].channel[0].controller.extrapolation={ order: 3 }", "extrapolation.delay_s");
  rejects("site[0].channel[0].controller.rls={ filter_cutoff_hz: 600 }", "Nyquist");
}

}  // namespace
}  // namespace rths::test::test_actuator_control
