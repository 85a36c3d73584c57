// Stability planning as a lab meets it: rths-plan on a hand-entered partition and on an experiment
// config (its numbers are the library's and the whole-loop sweep's, its diagrams are drawn, bad input
// is refused with one line and exit code 2), and the numerical node's run-time delay guard in virtual
// time (quiet inside its budget, a warning past the fraction, a safe stop with exit code 11 past the
// budget, each in summary.json).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rths/common/exit_codes.hpp"
#include "rths/node_numerical/stability_plan.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths {
namespace {

namespace fs = std::filesystem;
using test::Process;

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Ran run(const std::string& program, const std::vector<std::string>& args, const fs::path& dir) {
  Process p(program, args, dir / program);
  Ran r;
  r.exit_code = p.wait(std::chrono::seconds(120));
  r.out = p.out();
  r.err = p.err();
  return r;
}

std::string spring() {
  return test::example("seed002/spring.textproto").string();
}

// Seed 004 Table 3: case (b) at Omega 0.1 is stable, case (a) at Omega 0.49 is not; tau_cr 5.673 ms.
TEST(RthsPlan, ThePapersTable3PartitionPrintsItsCriticalDelayAndVerdicts) {
  const test::ScratchFolder dir("rths_plan");
  const std::vector<std::string> partition{"--alpha", "0.75",   "--beta", "0.82",      "--gamma",
                                           "0.6",     "--zeta", "0.014",  "--omega-n", "32.9"};
  // Omega = (round trip + zero-order hold) omega_n; the round trip is what --round-trip-s gives.
  const auto at_omega = [&](double omega) {
    std::vector<std::string> args = partition;
    const double round_trip_s = omega / 32.9 - 0.5 / 1024;
    args.insert(args.end(), {"--round-trip-s", std::to_string(round_trip_s), "--out", dir.path().string()});
    return run("rths-plan", args, dir.path());
  };
  const Ran b = at_omega(0.1);
  ASSERT_EQ(b.exit_code, kExitCompleted) << b.err;
  EXPECT_NE(b.out.find("critical delay 5.67 ms (Omega_cr 0.186646"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("within it"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("stable again for Omega in (4.903, 6.475)"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("stable at every delay for gamma in (0.7344, 0.7661)"), std::string::npos) << b.out;
  EXPECT_TRUE(fs::exists(dir.path() / "stability_sdof.gp"));
  const Ran a = at_omega(0.49);
  ASSERT_EQ(a.exit_code, kExitCompleted) << a.err;
  EXPECT_NE(a.out.find("BEYOND it"), std::string::npos) << a.out;
}

// The spring case: the whole loop's critical delay without compensation is the planner library's
// (and the run-confirmed 137.14 ms of StabilityOnset), the Smith loop with the exact model is stable
// at any delay, and the diagrams are written.
TEST(RthsPlan, TheSpringCasePrintsTheWholeLoopAndTheModesAndDrawsThem) {
  const test::ScratchFolder dir("rths_plan");
  const Ran r = run("rths-plan", {spring(), "--out", dir.path().string()}, dir.path());
  ASSERT_EQ(r.exit_code, kExitCompleted) << r.err;
  const double tau_ms =
      1e3 *
      plan::critical_loop_delay(test::load_example("seed002/spring.textproto").experiment, "spring", -1.0).tau_cr_s;
  EXPECT_NEAR(tau_ms, 137.14, 0.01);
  EXPECT_NE(r.out.find(fmt::format("without compensation: critical delay {:.2f} ms", tau_ms)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Smith loop with the config's model: stable at any delay"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mode 2 alone"), std::string::npos) << r.out;
  for (const char* file :
       {"budget_spring.dat", "budget_spring.gp", "stability_spring_mode1.gp", "stability_spring_mode2.gp"}) {
    EXPECT_TRUE(fs::exists(dir.path() / file)) << file;
  }
}

struct BadPlan {
  const char* label;
  std::vector<std::string> args;
  const char* expected;
};

class BadPlanInput : public ::testing::TestWithParam<BadPlan> {};

TEST_P(BadPlanInput, IsRefusedWithOneLineAndExitCode2) {
  const test::ScratchFolder dir("rths_plan");
  std::vector<std::string> args = GetParam().args;
  for (std::string& a : args) {
    if (a == "SPRING") a = spring();
  }
  const Ran r = run("rths-plan", args, dir.path());
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out << r.err;
  EXPECT_NE(r.err.find(GetParam().expected), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

const std::vector<std::string> kPartition{"--beta", "0.82", "--gamma", "0.6", "--zeta", "0.014", "--omega-n", "32.9"};
std::vector<std::string> with(std::vector<std::string> first, const std::vector<std::string>& rest = kPartition) {
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

INSTANTIATE_TEST_SUITE_P(
    RthsPlan, BadPlanInput,
    ::testing::Values(
        BadPlan{"alpha above one", with({"--alpha", "1.2"}), "--alpha: expected a share from 0 to 1, got '1.2'"},
        BadPlan{"alpha negative", with({"--alpha", "-0.1"}), "--alpha: expected a share from 0 to 1"},
        BadPlan{"alpha not a number", with({"--alpha", "nan"}), "--alpha: expected a share from 0 to 1, got 'nan'"},
        BadPlan{"zeta zero",
                {"--alpha", "0.75", "--beta", "0.82", "--gamma", "0.6", "--zeta", "0", "--omega-n", "1"},
                "--zeta: expected a damping ratio above 0"},
        BadPlan{"a partition without gamma",
                {"--alpha", "0.75", "--beta", "0.82", "--zeta", "0.01", "--omega-n", "1"},
                "--gamma: missing; a partition needs all of"},
        BadPlan{"missing modes", {"SPRING", "--modes", "3"}, "--modes: is 3, but the structure of"},
        BadPlan{"config and partition", {"SPRING", "--alpha", "0.5"}, "CONFIG and --alpha"},
        BadPlan{"nothing to plan", {}, "expected CONFIG, or a partition"},
        BadPlan{"a config that is not there", {"no-such.textproto"}, "no-such.textproto"}),
    [](const ::testing::TestParamInfo<BadPlan>& p) { return test::camel_case(p.param.label); });

// --- The run-time delay guard in virtual time: the spring case without compensation, whose whole
// loop allows a round trip of tau_cr - 1/(2 f_s) = 136.65 ms; warnings from 0.8 of it, 109.3 ms.
struct Guarded {
  int exit_code = -1;
  results::RunSummary summary;
  std::string err;
};

Guarded guarded_run(const fs::path& dir, double round_trip_s) {
  fs::create_directories(dir);
  const std::string leg = std::to_string(round_trip_s / 2);
  const Ran r =
      run("rths-numerical",
          {"run", spring(), "--out", (dir / "run").string(), "--quiet", "--set", "duration_s=5", "--set",
           "site[spring].compensation.mode=NONE", "--set", "site[spring].delay_guard.warn_fraction=0.8", "--set",
           "site[spring].link.forward.delay_s=" + leg, "--set", "site[spring].link.backward.delay_s=" + leg},
          dir);
  Guarded g;
  g.exit_code = r.exit_code;
  g.err = r.err;
  if (fs::exists(dir / "run" / "summary.json")) g.summary = test::read_summary(dir / "run" / "summary.json");
  return g;
}

TEST(DelayGuard, QuietInsideItsBudgetWarnsPastTheFractionStopsPastTheBudget) {
  const test::ScratchFolder dir("rths_guard");
  const double budget_ms =
      1e3 * plan::smith_budget(
                test::load_example("seed002/spring.textproto", {"site[spring].compensation.mode=NONE"}).experiment,
                "spring", 0.3, 0.0)
                .round_trip_budget_s;
  // Without compensation the model error does not matter; the budget is the whole loop's.
  EXPECT_NEAR(budget_ms, 137.14 - 0.49, 0.01);

  const Guarded quiet = guarded_run(dir.path() / "quiet", 0.1);  // 100 ms: below 0.8 x 136.65
  ASSERT_EQ(quiet.exit_code, kExitCompleted) << quiet.err;
  const results::DelayGuardReport& q = quiet.summary.sites().at("spring").delay_guard();
  EXPECT_NEAR(q.budget_s() * 1e3, budget_ms, 1e-6);
  EXPECT_NEAR(q.warn_at_s() * 1e3, 0.8 * budget_ms, 1e-6);
  EXPECT_FALSE(q.has_warned_at_s());
  EXPECT_FALSE(q.has_exceeded_at_s());
  // The smoothed round trip settles on the link's 100 ms (each leg whole steps at 1024 Hz, and the
  // virtual clock's phases between a packet's arrival and its use: within two steps).
  EXPECT_NEAR(q.smoothed_round_trip_max_s(), 0.1, 2.0 / 1024);

  const Guarded warned = guarded_run(dir.path() / "warned", 0.12);  // past 109.3 ms, below 136.65 ms
  ASSERT_EQ(warned.exit_code, kExitCompleted) << warned.err;
  const results::DelayGuardReport& w = warned.summary.sites().at("spring").delay_guard();
  EXPECT_TRUE(w.has_warned_at_s());
  EXPECT_FALSE(w.has_exceeded_at_s());

  const Guarded stopped = guarded_run(dir.path() / "stopped", 0.14);  // past the budget
  EXPECT_EQ(stopped.exit_code, kExitDelayBudget) << stopped.err;
  const results::DelayGuardReport& s = stopped.summary.sites().at("spring").delay_guard();
  ASSERT_TRUE(s.has_exceeded_at_s());
  EXPECT_GT(s.smoothed_round_trip_max_s(), s.budget_s());
  EXPECT_EQ(stopped.summary.exit_code(), kExitDelayBudget);
  EXPECT_NE(stopped.summary.stop_reason().find("beyond its planned delay budget of 136.65 ms"), std::string::npos)
      << stopped.summary.stop_reason();
  // It stopped as soon as the smoothed round trip passed the budget, not at the end.
  EXPECT_LT(stopped.summary.steps(), stopped.summary.planned_steps() / 2);
}

// The same guard in real time, on sockets through rths-relay: a 140 ms round trip (70 ms each way)
// passes the uncompensated spring's 136.65 ms budget, the numerical node stops the test with exit
// code 11 and the site ends as told to abort.
TEST(DelayGuardRealTime, StopsTheTestPastItsBudgetThroughTheRelay) {
  const test::ScratchFolder dir("rths_guard");
  const int code =
      test::run_through_relay(dir.path(), spring(), "spring",
                              {"site[spring].compensation.mode=NONE", "site[spring].delay_guard.model_error=0.3",
                               "site[spring].link.forward.delay_s=0.07", "site[spring].link.backward.delay_s=0.07"},
                              5.0, kExitDelayBudget, kExitPeerAborted);
  ASSERT_EQ(code, kExitDelayBudget);
  const results::RunSummary summary = test::read_summary(dir.path() / "run" / "summary.json");
  const results::DelayGuardReport& g = summary.sites().at("spring").delay_guard();
  ASSERT_TRUE(g.has_exceeded_at_s());
  EXPECT_GT(g.smoothed_round_trip_max_s(), g.budget_s());
  EXPECT_LT(summary.steps(), summary.planned_steps() / 2);
}

TEST(DelayGuard, ItsSettingsAreChecked) {
  const test::ScratchFolder dir("rths_guard");
  for (const auto& [set, expected] : std::vector<std::pair<std::string, std::string>>{
           {"site[spring].delay_guard.warn_fraction=1.5", "delay_guard.warn_fraction: is 1.5, expected a fraction"},
           {"site[spring].delay_guard.model_error=-0.1", "delay_guard.model_error: is -0.1, expected"},
           {"site[spring].delay_guard.smoothing_s=0", "delay_guard.smoothing_s: is 0, expected a time constant"},
           {"site[spring].delay_guard.transfer_delay_s=-1", "delay_guard.transfer_delay_s: is -1, expected"}}) {
    const Ran r =
        run("rths-numerical", {"run", spring(), "--out", (dir.path() / "run").string(), "--set", set}, dir.path());
    EXPECT_EQ(r.exit_code, kExitBadInput) << set;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace rths
