// Merging the shards of a study: the rows of every folder in row order, and each way shards can fail
// to make one study named: a missing or duplicated row, a row beyond the grid, another header.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/records/results.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/merge.hpp"
#include "support/scratch_folder.hpp"

namespace rths::study::test_study_merge {
namespace {

constexpr const char* kHeader = "row,k,\"a,b\",error\n";

class StudyMerge : public ::testing::Test {
 protected:
  // A shard folder holding study.csv with the rows given (row, k = 10 row, a quoted cell, error).
  std::filesystem::path shard(const std::string& name, const std::vector<std::size_t>& rows,
                              const std::string& header = kHeader) {
    auto dir = folder_.path() / name;
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / "study.csv");
    out << header;
    for (const std::size_t r : rows) {
      out << r << "," << 10 * r << ",\"x,y\"," << (r == 3 ? "failed" : "") << "\n";
    }
    return dir;
  }
  // Writes a study.json with the grid's size into dir.
  static void summary(const std::filesystem::path& dir, std::uint64_t grid_rows) {
    results::StudySummary s;
    s.set_grid_rows(grid_rows);
    write_results_json(dir / "study.json", s);
  }
  static Merged merge(const std::vector<std::filesystem::path>& dirs) {
    return merge_table(
        dirs, "study.csv", "grid_rows", [](const results::StudySummary& s) { return s.grid_rows(); }, "rows");
  }
  static std::string refusal(const std::vector<std::filesystem::path>& dirs) {
    try {
      (void)merge(dirs);
    } catch (const BadInput& e) {
      return e.what();
    }
    return "";
  }

  test::ScratchFolder folder_;
};

TEST_F(StudyMerge, ShardsJoinInRowOrder) {
  const Merged m = merge({shard("s2", {1, 3}), shard("s1", {0, 2, 4})});
  EXPECT_EQ(m.csv,
            std::string(kHeader) + "0,0,\"x,y\",\n1,10,\"x,y\",\n2,20,\"x,y\",\n3,30,\"x,y\",failed\n4,40,\"x,y\",\n");
  EXPECT_EQ(m.rows, 5U);
  EXPECT_EQ(m.failed, 1U);
}

TEST_F(StudyMerge, AMissingRowIsNamed) {
  EXPECT_NE(refusal({shard("s1", {0, 2, 4})}).find("rows missing (2 of 5): 1 3"), std::string::npos);
}

TEST_F(StudyMerge, TheGridOfStudyJsonFindsAMissingLastRow) {
  const auto s1 = shard("s1", {0, 2});
  const auto s2 = shard("s2", {1});
  EXPECT_EQ(merge({s1, s2}).rows, 3U);  // without study.json the highest row ends the grid
  summary(s1, 4);
  summary(s2, 4);
  EXPECT_NE(refusal({s1, s2}).find("rows missing (1 of 4): 3"), std::string::npos);
  summary(s2, 5);
  EXPECT_NE(refusal({s1, s2}).find("grid_rows 5 differs from 4"), std::string::npos);
}

TEST_F(StudyMerge, ARowInTwoShardsIsNamed) {
  EXPECT_NE(refusal({shard("s1", {0, 1}), shard("s2", {1, 2})}).find("rows in more than one shard: 1"),
            std::string::npos);
}

TEST_F(StudyMerge, ARowBeyondTheGridIsNamed) {
  const auto s1 = shard("s1", {0, 1, 2});
  summary(s1, 2);
  EXPECT_NE(refusal({s1}).find("rows beyond the grid of 2: from 2"), std::string::npos);
}

TEST_F(StudyMerge, ShardsOfAnotherHeaderAreRefused) {
  const auto s1 = shard("s1", {0});
  const auto s2 = shard("s2", {1}, "row,other,\"a,b\",error\n");
  EXPECT_NE(refusal({s1, s2}).find((s2 / "study.csv").string() + ": header differs"), std::string::npos);
}

TEST_F(StudyMerge, LongRowListsAreCut) {
  std::vector<std::size_t> rows(25);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i] = i;
  }
  EXPECT_EQ(describe_rows({1, 3, 5}), "1 3 5");
  EXPECT_EQ(describe_rows(rows), "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 ... (25 in all)");
}

}  // namespace
}  // namespace rths::study::test_study_merge
