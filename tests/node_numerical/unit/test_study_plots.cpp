// The plots of a study: what an axis shows (its label, the round trip of both legs' delays, or its
// values), legends and file names, and a plot's data copied cell for cell from the tables.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "node_numerical/study/plots.hpp"
#include "node_numerical/study/study_file.hpp"
#include "support/study_support.hpp"

namespace rths::study::test_study_plots {
namespace {

StudyFile study(const std::string& axes_and_plots) {
  return parse_study("config: \"spring.textproto\"\n" + axes_and_plots, "/s/plots.study");
}

TEST(StudyPlots, LegendPutsTheValueBeforeTheUnit) {
  EXPECT_EQ(legend("model error (%)", "-30"), "model error -30 %");
  EXPECT_EQ(legend("round trip (ms)", "50"), "round trip 50 ms");
  EXPECT_EQ(legend("loss", "bursty-5%"), "loss bursty-5%");
}

TEST(StudyPlots, FileWordsKeepOnlyWhatAFileNameTakesSafely) {
  EXPECT_EQ(file_word("x2"), "x2");
  EXPECT_EQ(file_word("+30"), "+30");
  EXPECT_EQ(file_word("{probability:0.05}"), "_probability_0.05_");
  EXPECT_EQ(file_word("a b/c"), "a_b_c");
}

TEST(StudyPlots, BothLegsDelaysShowTheRoundTripInMilliseconds) {
  const StudyFile st =
      study(R"s(axis { name: "d" path: ["site[0].link.forward.delay_s", "site[0].link.backward.delay_s"]
  tuple { value: ["0.0125", "0.0125"] } tuple { value: ["0.01", "0.03"] } })s");
  const AxisView v = axis_view(st, st.grid.axes[0]);
  EXPECT_EQ(v.title, "round trip (ms)");
  EXPECT_EQ(v.text, (std::vector<std::string>{"25", "40"}));
  EXPECT_EQ(v.num[1], 40.0);
  // One leg alone is not a round trip: the axis shows its values.
  const StudyFile one = study(R"s(axis { name: "d" path: "site[0].link.forward.delay_s" value: ["0.01"] })s");
  EXPECT_EQ(axis_view(one, one.grid.axes[0]).title, "d");
  EXPECT_EQ(axis_view(one, one.grid.axes[0]).text, std::vector<std::string>{"0.01"});
}

TEST(StudyPlots, ALabelIsWhatTheAxisShows) {
  const StudyFile st = study(R"s(axis { name: "k" path: "p" value: ["39084.08", "72584.72"]
  label { title: "model error (%)" value: ["-30", "+30"] } })s");
  const AxisView v = axis_view(st, st.grid.axes[0]);
  EXPECT_EQ(v.title, "model error (%)");
  EXPECT_EQ(v.text, (std::vector<std::string>{"-30", "+30"}));
  EXPECT_EQ(v.num[1], 30.0);
}

TEST(StudyPlots, APlotCopiesItsCellsFromTheTables) {
  // x = k (labelled, written out of order), a line per delay d, at one value of the third axis g.
  const StudyFile st = study(R"s(
axis { name: "k" path: "site[0].channel[0].prediction.spring.stiffness_n_per_m" value: ["3", "1", "2"]
       label { title: "k (N/m)" value: ["30", "10", "20"] } }
axis { name: "d" path: "site[0].link.forward.delay_s" value: ["0", "0.01"] }
axis { name: "g" path: "ground_motion.scale" value: ["0.1", "0.2"] }
plot { x: "k" lines: "d" response: "x2" })s");
  Table grid;
  grid.header = {"row", "x2_j_peak_pct"};
  for (std::size_t row = 0; row < st.grid.rows(); ++row) {
    grid.rows[row] = {std::to_string(row), std::string("v").append(std::to_string(row))};
  }
  grid.rows.erase(11);  // a row not run: NaN in its place
  Table pure;
  pure.header = {"row", "x2_j_peak_pct"};
  for (std::size_t row = 0; row < 6; ++row) {  // the pure grid: k x g
    pure.rows[row] = {std::to_string(row), std::string("p").append(std::to_string(row))};
  }
  const Plot& plot = st.plots[0];
  const PlotFile f = make_plot(st, plot, {0, 0, 1}, {2}, grid, &pure);
  EXPECT_EQ(f.name, "x2_peak_error_vs_k_by_d_g-0.2");
  // Rows in x order (10, 20, 30: k values 1, 2, 3 at value indices 1, 2, 0); the grid row of (k, d, g)
  // is 4 k + 2 d + g; the pure row of (k, g) is 2 k + g, the same for both lines: one column.
  const auto lines = test::dat_words(f.dat);
  const std::vector<std::vector<std::string>> expected{
      {"10", "v5", "v7", "p3"}, {"20", "v9", "NaN", "p5"}, {"30", "v1", "v3", "p1"}};
  EXPECT_EQ(lines, expected) << f.dat;
  EXPECT_NE(f.gp.find("set output \"x2_peak_error_vs_k_by_d_g-0.2.png\""), std::string::npos) << f.gp;
  EXPECT_NE(f.gp.find("title \"d 0.01\""), std::string::npos) << f.gp;
  EXPECT_NE(f.gp.find("pure simulation (no network)"), std::string::npos) << f.gp;
  // Without pure simulations: no dashed column.
  const PlotFile bare = make_plot(st, plot, {0, 0, 1}, {2}, grid, nullptr);
  EXPECT_EQ(test::dat_words(bare.dat)[0], (std::vector<std::string>{"10", "v5", "v7"}));
}

}  // namespace
}  // namespace rths::study::test_study_plots
