// `rths-numerical plot RUN_DIR`: every figure of a run folder drawn as a PNG with its script, none
// blank, from a virtual-time run and from a real-time one (whose timing histograms come from its
// timing.csv), and a folder that is no run folder refused naming the file. A model of many DOFs gets
// its DOFs of interest, in their kinds' units; the figures are drawn by one gnuplot from data
// decimated to the picture.
// (A real-time run's timing histograms: realtime/test_run_plots.cpp.)
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/core/child_process.hpp"
#include "common/core/exit_codes.hpp"
#include "common/records/gnuplot.hpp"
#include "support/process.hpp"
#include "support/run_plots.hpp"
#include "support/test_support.hpp"

namespace rths::test_run_plots {
namespace {

namespace fs = std::filesystem;
using test::Process;

using test::expect_drawn;
using test::RunPlots;

// The PNGs of a folder, by name.
std::set<std::string> pngs_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".png") names.insert(entry.path().stem().string());
  }
  return names;
}

// What makes the plots cost little: one gnuplot draws them all (all_plots.gp loads every script),
// and each script holds its own data, decimated to the picture: it reads no CSV, and each line of a
// history has at most 4 points per pixel column of the 1000 (min-max decimation), however long the
// run (a loop keeps the points half a pixel apart: as many as its path needs).
void expect_drawn_fast(const fs::path& dir, const std::vector<std::string>& names) {
  const std::string all = test::slurp(dir / "all_plots.gp");
  for (const std::string& name : names) {
    EXPECT_NE(all.find("load \"" + name + ".gp\""), std::string::npos) << name;
    const std::string script = test::slurp(dir / (name + ".gp"));
    EXPECT_EQ(script.find(".csv"), std::string::npos) << name << " reads a CSV";
    std::size_t points = 0;
    bool in_block = false;
    bool history = false;
    for (std::size_t at = 0; at < script.size();) {
      const std::size_t end = std::min(script.find('\n', at), script.size());
      const std::string line = script.substr(at, end - at);
      at = end + 1;
      if (line.ends_with("<< EOD")) {
        in_block = true;
        history = line.starts_with("$line");
        points = 0;
      } else if (line == "EOD") {
        in_block = false;
        if (history) {
          EXPECT_LE(points, 4000U) << name;
        }
        EXPECT_GT(points, 1U) << name;
      } else if (in_block) {
        ++points;
      }
    }
  }
}

TEST_F(RunPlots, EveryFigureOfAVirtualTimeRunIsDrawn) {
  // Seed 002's damper behind a 40 ms round trip: two floors, one remote channel.
  Process run("rths-numerical",
              {"run", test::example("seed002/damper_3v.textproto").string(), "--out", (dir_ / "run").string(),
               "--quiet", "--set", "duration_s=4"},
              dir_ / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  ASSERT_EQ(plot(dir_ / "run"), kExitCompleted) << err_;
  const std::vector<std::string> promised{"response_x1",       "response_x2",      "site_purdue_tracking",
                                          "site_purdue_error", "site_purdue_loop", "site_purdue_model_error"};
  expect_drawn(dir_ / "run/plots", promised);
  // Those and no other (a virtual-time run has no wall-clock timing to draw).
  EXPECT_EQ(pngs_in(dir_ / "run/plots"), std::set<std::string>(promised.begin(), promised.end()));
  expect_drawn_fast(dir_ / "run/plots", promised);
}

// The maRTHS frame records 29 DOFs: its plots are the DOFs of interest (the interface's x1 and r1,
// the evaluation DOFs x2, r2, x3, r3; the roof, x3, among them), each channel's tracking and loop,
// and each actuator's stroke; each in its kind's unit: mm, mrad, kN, kN·m.
TEST_F(RunPlots, TheMarthsRunDrawsItsDofsOfInterestAndStrokesInTheirUnits) {
  Process run("rths-numerical",
              {"run", test::example("marths/elcentro_rls.textproto").string(), "--out", (dir_ / "run").string(),
               "--quiet", "--set", "duration_s=10"},
              dir_ / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  ASSERT_EQ(plot(dir_ / "run"), kExitCompleted) << err_;
  const std::vector<std::string> promised{"response_r3",          "response_x3",
                                          "response_r1",          "response_r2",
                                          "response_x2",          "response_x1",
                                          "site_iisl_1_tracking", "site_iisl_1_error",
                                          "site_iisl_1_loop",     "site_iisl_2_tracking",
                                          "site_iisl_2_error",    "site_iisl_2_loop",
                                          "site_iisl_a1_stroke",  "site_iisl_a1_stroke_error",
                                          "site_iisl_a2_stroke",  "site_iisl_a2_stroke_error"};
  expect_drawn(dir_ / "run/plots", promised);
  EXPECT_EQ(pngs_in(dir_ / "run/plots"), std::set<std::string>(promised.begin(), promised.end()));
  expect_drawn_fast(dir_ / "run/plots", promised);
  const auto script = [this](const std::string& name) { return test::slurp(dir_ / "run/plots" / (name + ".gp")); };
  EXPECT_NE(script("response_r1").find("\"r1 (mrad)\""), std::string::npos);
  EXPECT_NE(script("response_x1").find("\"x1 (mm)\""), std::string::npos);
  EXPECT_NE(script("site_iisl_2_tracking").find("\"rotation (mrad)\""), std::string::npos);
  EXPECT_NE(script("site_iisl_2_loop").find("\"measured rotation xm (mrad)\""), std::string::npos);
  EXPECT_NE(script("site_iisl_2_loop").find("\"measured moment fm (kN·m)\""), std::string::npos);
  EXPECT_NE(script("site_iisl_1_loop").find("\"measured displacement xm (mm)\""), std::string::npos);
  EXPECT_NE(script("site_iisl_1_loop").find("\"measured force fm (kN)\""), std::string::npos);
  EXPECT_NE(script("site_iisl_a1_stroke").find("\"stroke (mm)\""), std::string::npos);
}

// More DOFs on request: one by name, or every recorded one; a DOF the run did not record is refused
// (exit 2) naming it.
TEST_F(RunPlots, MoreDofsAreDrawnWhenAskedFor) {
  Process run("rths-numerical",
              {"run", test::example("marths/elcentro_rls.textproto").string(), "--out", (dir_ / "run").string(),
               "--quiet", "--no-plots", "--set", "duration_s=6"},
              dir_ / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  ASSERT_EQ(plot(dir_ / "run", {"--dof", "q7", "--out", (dir_ / "q7").string()}), kExitCompleted) << err_;
  EXPECT_TRUE(fs::exists(dir_ / "q7/response_q7.png"));
  EXPECT_FALSE(fs::exists(dir_ / "q7/response_q8.png"));
  EXPECT_NE(test::slurp(dir_ / "q7/response_q7.gp").find("\"q7 (mrad)\""), std::string::npos);
  ASSERT_EQ(plot(dir_ / "run", {"--dof", "all", "--out", (dir_ / "all").string()}), kExitCompleted) << err_;
  std::size_t responses = 0;
  for (const std::string& png : pngs_in(dir_ / "all")) responses += png.starts_with("response_") ? 1 : 0;
  EXPECT_EQ(responses, 29U);
  EXPECT_EQ(plot(dir_ / "run", {"--dof", "q99", "--out", (dir_ / "bad").string()}), kExitBadInput);
  EXPECT_NE(err_.find("--dof q99: the run recorded no DOF of that name"), std::string::npos) << err_;
}

// One gnuplot draws every script; when one fails, each is drawn alone, so that the failure is named
// and the others are still drawn.
TEST_F(RunPlots, ABrokenScriptIsNamedAndTheOthersAreStillDrawn) {
  const fs::path dir = dir_ / "scripts";
  fs::create_directories(dir);
  for (const char* name : {"first", "broken", "last"}) {
    std::ofstream(dir / (std::string(name) + ".gp"))
        << gp_png_header(name) << "set title \"" << name << "\"\n"
        << (std::string(name) == "broken" ? "plot no_such_function(x)\n" : "plot sin(x)\n");
  }
  const PlotCount count = render_plots(dir, {"first", "broken", "last"});
  EXPECT_EQ(count.made, 2U);
  EXPECT_EQ(count.failed, 1U);
  EXPECT_TRUE(fs::exists(dir / "first.png"));
  EXPECT_TRUE(fs::exists(dir / "last.png"));
  EXPECT_FALSE(fs::exists(dir / "broken.png"));
}

// The hysteretic springs of a numerical model get their loops: the yielding building example.
TEST_F(RunPlots, EachSpringOfTheNumericalModelGetsItsLoop) {
  Process run("rths-numerical",
              {"run", test::example("nonlinear/yielding_building.textproto").string(), "--out", (dir_ / "run").string(),
               "--quiet", "--set", "duration_s=6"},
              dir_ / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  ASSERT_EQ(plot(dir_ / "run"), kExitCompleted) << err_;
  expect_drawn(dir_ / "run/plots", {"spring_storey1_loop", "spring_storey2_loop", "spring_storey3_loop"});
}

// A run draws its plots when it ends, unless --no-plots or RTHS_NO_PLOTS says not to (the suite sets
// that variable for every test; this one takes it away for its first run).
TEST_F(RunPlots, ARunDrawsItsPlotsAtItsEndUnlessToldNot) {
  const char* suite = std::getenv("RTHS_NO_PLOTS");
  const std::optional<std::string> suite_setting = suite != nullptr ? std::optional<std::string>(suite) : std::nullopt;
  const auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args{"run",   test::example("seed002/spring.textproto").string(),
                                  "--out", (dir_ / name).string(),
                                  "--set", "duration_s=2"};
    args.insert(args.end(), extra.begin(), extra.end());
    Process p("rths-numerical", args, dir_ / name);
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), kExitCompleted) << p.err();
    return p.out();
  };
  unsetenv("RTHS_NO_PLOTS");
  const std::string drawn = run("drawn", {});
  run("flag", {"--no-plots"});
  setenv("RTHS_NO_PLOTS", "1", 1);
  run("environment", {});
  if (suite_setting) {  // as the suite had it
    setenv("RTHS_NO_PLOTS", suite_setting->c_str(), 1);
  } else {
    unsetenv("RTHS_NO_PLOTS");
  }
  expect_drawn(dir_ / "drawn/plots", {"response_x1", "response_x2", "site_spring_tracking"});
  EXPECT_NE(drawn.find("plots: "), std::string::npos) << drawn;
  EXPECT_FALSE(fs::exists(dir_ / "flag/plots"));
  EXPECT_FALSE(fs::exists(dir_ / "environment/plots"));
}

TEST_F(RunPlots, AFolderWithoutARunIsRefusedNamingTheFile) {
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(plot(dir_ / "empty"), kExitBadInput);
  EXPECT_NE(err_.find((dir_ / "empty" / "numerical.csv").string()), std::string::npos) << err_;
}

}  // namespace
}  // namespace rths::test_run_plots
