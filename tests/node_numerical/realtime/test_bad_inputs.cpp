// A bad input refused before motion in real time: a site refuses a start its record cannot hold
// against its own memory budget, and the numerical node learns why (the other bad inputs:
// unit/test_bad_inputs.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/core/exit_codes.hpp"
#include "support/bad_inputs.hpp"
#include "support/process.hpp"

namespace rths::test_bad_inputs {
namespace {

namespace fs = std::filesystem;

using test::MemoryBudget;
using test::valid_config;

// The site checks its own record against its own budget when the start arrives, and refuses before
// its actuator moves: the numerical node learns why from the site's abort.
TEST_F(MemoryBudget, ASiteRefusesAStartItsRecordCannotHold) {
  const auto file = dir_ / "site.textproto";
  std::ofstream(file) << valid_config();
  // 1025 steps x 9 columns x 8 bytes = 73800 bytes: over a 0.01 MB budget.
  test::Process site(
      "rths-physical",
      {"serve", file.string(), "--site", "lab", "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string(), "--set",
       "output.memory_budget_mb=0.01", "--set", test::site_key_override(dir_, "lab")},
      dir_ / "site");
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  test::Process numerical("rths-numerical",
                          {"run", file.string(), "--realtime", "--set", "site[lab].address=" + where, "--set",
                           test::site_key_override(dir_, "lab"), "--out", (dir_ / "run").string(), "--quiet"},
                          dir_ / "numerical");
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitRefused) << site.err();
  EXPECT_NE(site.err().find("output.memory_budget_mb = 0.01 MB"), std::string::npos) << site.err();
  EXPECT_FALSE(fs::exists(dir_ / "site/site_lab.csv"));
  EXPECT_EQ(numerical.wait(std::chrono::seconds(20)), kExitPeerAborted) << numerical.err();
  EXPECT_NE(numerical.err().find("output.memory_budget_mb"), std::string::npos) << numerical.err();
}

}  // namespace
}  // namespace rths::test_bad_inputs
