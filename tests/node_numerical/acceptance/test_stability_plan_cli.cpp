// Stability planning as a lab meets it: rths-plan on a hand-entered partition and on an experiment
// config, its numbers the library's and the whole-loop sweep's, its diagrams drawn (bad input and the
// run-time delay guard: unit/ and realtime/test_stability_plan_cli.cpp).
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

using test::spring_example;

namespace fs = std::filesystem;
using test::Ran;
using test::run_program;

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
    return run_program("rths-plan", args, dir.path());
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
  const Ran r = run_program("rths-plan", {spring_example(), "--out", dir.path().string()}, dir.path());
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
}  // namespace
}  // namespace rths::test_stability_plan_cli
