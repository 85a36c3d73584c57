// `rths-numerical plot RUN_DIR` of a real-time run: its timing histograms come from its timing.csv,
// beside every figure of a virtual-time run (those, and the rest of the plots' rules:
// unit/test_run_plots.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "support/process.hpp"
#include "support/run_plots.hpp"
#include "support/test_support.hpp"

namespace rths::test_run_plots {
namespace {

using test::expect_drawn;
using test::Process;
using test::RunPlots;

TEST_F(RunPlots, ARealTimeRunGetsItsTimingHistograms) {
  Process run("rths-numerical",
              {"loopback", test::example("seed002/spring.textproto").string(), "--out", (dir_ / "run").string(),
               "--quiet", "--set", "duration_s=2", "--set", "realtime.insecure=true"},
              dir_ / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  // timing.csv: every step of the loop is in the lateness histogram once, and in the compute one.
  std::ifstream timing(dir_ / "run/timing.csv");
  std::string line;
  std::getline(timing, line);
  EXPECT_EQ(line, "histogram,lower_us,upper_us,count");
  std::uint64_t lateness = 0;
  std::uint64_t compute = 0;
  while (std::getline(timing, line)) {
    const std::uint64_t count = std::stoull(line.substr(line.rfind(',') + 1));
    if (line.starts_with("lateness,")) lateness += count;
    if (line.starts_with("compute,")) compute += count;
  }
  const results::RunSummary summary = test::read_summary(dir_ / "run/summary.json");
  EXPECT_EQ(lateness, static_cast<std::uint64_t>(summary.steps()));
  EXPECT_EQ(compute, static_cast<std::uint64_t>(summary.steps()));
  ASSERT_EQ(plot(dir_ / "run"), kExitCompleted) << err_;
  expect_drawn(dir_ / "run/plots", {"response_x1", "lateness", "compute", "round_trip_spring"});
}

}  // namespace
}  // namespace rths::test_run_plots
