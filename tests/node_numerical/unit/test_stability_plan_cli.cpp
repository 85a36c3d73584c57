// Stability planning as a lab meets it: bad input to rths-plan is refused with one line and exit
// code 2, and the numerical node's run-time delay guard in virtual time is quiet inside its budget,
// warns past the fraction, stops safely with exit code 11 past the budget, each in summary.json, and
// checks its settings (rths-plan's numbers and diagrams: acceptance/test_stability_plan_cli.cpp; the
// guard in real time: realtime/test_stability_plan_cli.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "node_numerical/structure/stability_plan.hpp"
#include "support/process.hpp"
#include "support/stability_plan_cli.hpp"
#include "support/test_support.hpp"

namespace rths::test_stability_plan_cli {
namespace {

namespace fs = std::filesystem;
using test::Ran;
using test::run_program;
using test::spring_example;

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
    if (a == "SPRING") a = spring_example();
  }
  const Ran r = run_program("rths-plan", args, dir.path());
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
  const Ran r = run_program(
      "rths-numerical",
      {"run", spring_example(), "--out", (dir / "run").string(), "--quiet", "--set", "duration_s=5", "--set",
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

TEST(DelayGuard, ItsSettingsAreChecked) {
  const test::ScratchFolder dir("rths_guard");
  for (const auto& [set, expected] : std::vector<std::pair<std::string, std::string>>{
           {"site[spring].delay_guard.warn_fraction=1.5", "delay_guard.warn_fraction: is 1.5, expected a fraction"},
           {"site[spring].delay_guard.model_error=-0.1", "delay_guard.model_error: is -0.1, expected"},
           {"site[spring].delay_guard.smoothing_s=0", "delay_guard.smoothing_s: is 0, expected a time constant"},
           {"site[spring].delay_guard.transfer_delay_s=-1", "delay_guard.transfer_delay_s: is -1, expected"}}) {
    const Ran r = run_program(
        "rths-numerical", {"run", spring_example(), "--out", (dir.path() / "run").string(), "--set", set}, dir.path());
    EXPECT_EQ(r.exit_code, kExitBadInput) << set;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace rths::test_stability_plan_cli
