// The numerical node's run-time delay guard in real time, on sockets through rths-relay (in virtual
// time and rths-plan: unit/ and acceptance/test_stability_plan_cli.cpp).
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

// The same guard in real time, on sockets through rths-relay: a 140 ms round trip (70 ms each way)
// passes the uncompensated spring's 136.65 ms budget, the numerical node stops the test with exit
// code 11 and the site ends as told to abort.
TEST(DelayGuardRealTime, StopsTheTestPastItsBudgetThroughTheRelay) {
  const test::ScratchFolder dir("rths_guard");
  const int code =
      test::run_through_relay(dir.path(), spring_example(), "spring",
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
}  // namespace
}  // namespace rths::test_stability_plan_cli
