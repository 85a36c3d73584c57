// A study's grid: the rows of the product of its axes (first axis slowest), each row's overrides in
// the order they apply, the network axes, and the grid of the pure simulations.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "node_numerical/study/grid.hpp"

namespace rths::study::test_study_grid {
namespace {

TEST(StudyGrid, RowsAreTheProductWithTheFirstAxisSlowest) {
  const Grid grid{{}, {value_axis("a", {"p"}, {"1", "2", "3"}), value_axis("b", {"q"}, {"x", "y"})}, {}};
  ASSERT_EQ(grid.rows(), 6U);
  for (std::size_t row = 0; row < 6; ++row) {
    const std::vector<std::size_t> expected{row / 2, row % 2};
    EXPECT_EQ(grid.point(row), expected) << "row " << row;
    EXPECT_EQ(grid.row_of(expected), row);
  }
}

TEST(StudyGrid, WithoutAxesTheConfigIsTheOneRow) {
  const Grid grid{{"duration_s=1"}, {}, {}};
  EXPECT_EQ(grid.rows(), 1U);
  EXPECT_EQ(grid.overrides(0), std::vector<std::string>{"duration_s=1"});
}

TEST(StudyGrid, OverridesApplySetsThenEachAxisPathInOrderThenAfter) {
  Axis legs = value_axis("legs", {"f.delay_s", "b.delay_s"}, {"0"});
  legs.values.push_back({"0.1", "0.2"});
  legs.shown.emplace_back("0.1:0.2");
  const Grid grid{{"duration_s=1", "seed=7"}, {value_axis("k", {"k"}, {"5", "6"}), legs}, {"last=1"}};
  EXPECT_EQ(grid.overrides(3),
            (std::vector<std::string>{"duration_s=1", "seed=7", "k=6", "f.delay_s=0.1", "b.delay_s=0.2", "last=1"}));
  EXPECT_EQ(grid.overrides(0),
            (std::vector<std::string>{"duration_s=1", "seed=7", "k=5", "f.delay_s=0", "b.delay_s=0", "last=1"}));
}

TEST(StudyGrid, NetworkSideIsASitesLinkOrCompensation) {
  EXPECT_TRUE(value_axis("d", {"site[0].link.forward.delay_s", "site[lab].link"}, {"0"}).network_side());
  EXPECT_TRUE(value_axis("c", {"site[0].compensation"}, {"{}"}).network_side());
  EXPECT_TRUE(value_axis("c", {"site[0].compensation.mode"}, {"NONE"}).network_side());
  EXPECT_FALSE(value_axis("l", {"site[0].linkage"}, {"0"}).network_side());  // a field that only starts alike
  EXPECT_FALSE(value_axis("k", {"site[0].channel[0].prediction.spring.stiffness_n_per_m"}, {"1"}).network_side());
  EXPECT_FALSE(
      value_axis("m", {"site[0].link.forward.delay_s", "duration_s"}, {"1"}).network_side());  // one path off it
  EXPECT_FALSE(value_axis("g", {"ground_motion.scale"}, {"1"}).network_side());
}

TEST(StudyGrid, PureGridKeepsTheModelAxesAndLosesEveryRemoteSitesFeedback) {
  const Grid grid{{"duration_s=1"},
                  {value_axis("k", {"site[0].channel[0].prediction.spring.stiffness_n_per_m"}, {"1", "2", "3"}),
                   value_axis("d", {"site[0].link.forward.delay_s"}, {"0", "0.01"}),
                   value_axis("g", {"ground_motion.scale"}, {"0.1", "0.2"})},
                  {}};
  const Grid pure = grid.pure({"lab", "far"});
  ASSERT_EQ(pure.axes.size(), 2U);
  EXPECT_EQ(pure.axes[0].name, "k");
  EXPECT_EQ(pure.axes[1].name, "g");
  EXPECT_EQ(pure.rows(), 6U);
  EXPECT_EQ(pure.after, (std::vector<std::string>{"site[lab].link={ backward { loss { probability: 1 } } }",
                                                  "site[lab].compensation={ mode: MODIFIED_SMITH }",
                                                  "site[far].link={ backward { loss { probability: 1 } } }",
                                                  "site[far].compensation={ mode: MODIFIED_SMITH }"}));
  // Every grid point's pure simulation: the same k and g, whatever d.
  for (std::size_t row = 0; row < grid.rows(); ++row) {
    const auto point = grid.point(row);
    const std::size_t pure_row = grid.pure_row(point);
    EXPECT_EQ(pure.point(pure_row), (std::vector<std::size_t>{point[0], point[2]})) << "row " << row;
  }
}

}  // namespace
}  // namespace rths::study::test_study_grid
