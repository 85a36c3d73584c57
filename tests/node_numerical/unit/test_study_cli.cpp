// rths-study and a study file of the older line syntax, as a user meets it: refused with one line that
// says how to convert it, and `rths-study convert` printing a study that runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/core/exit_codes.hpp"
#include "node_numerical/study/csv.hpp"
#include "support/process.hpp"

namespace rths::test_study_cli {
namespace {

using test::Process;
using test::RunFolderTest;

constexpr auto kTimeout = std::chrono::seconds(60);

class StudyCli : public RunFolderTest {
 protected:
  // The spring of seed 002 at two model errors, 0.5 s, in the old line syntax.
  std::filesystem::path write_old_study() {
    const auto config = std::filesystem::path(RTHS_SOURCE_DIR) / "examples/seed002/spring.textproto";
    auto file = dir_ / "old.study";
    std::ofstream(file) << "# the old syntax\n"
                        << "config " << config.string() << "\n"
                        << "axis k site[0].channel[0].prediction.spring.stiffness_n_per_m = 39084.08 72584.72\n"
                        << "set duration_s=0.5\n";
    return file;
  }
};

TEST_F(StudyCli, AnOldStudyFileIsRefusedWithHowToConvertIt) {
  const auto old = write_old_study();
  Process p("rths-study", {"run", old.string(), "--out", (dir_ / "out").string()}, dir_ / "run");
  EXPECT_EQ(p.wait(kTimeout), kExitBadInput);
  const std::string err = p.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // one line
  EXPECT_NE(err.find("old.study:2: is a study file of the old line syntax"), std::string::npos) << err;
  EXPECT_NE(err.find("rths-study convert " + old.string() + " > NEW.study"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
}

TEST_F(StudyCli, ConvertPrintsAStudyThatRuns) {
  const auto old = write_old_study();
  Process convert("rths-study", {"convert", old.string()}, dir_ / "convert");
  ASSERT_EQ(convert.wait(kTimeout), 0) << convert.err();
  const auto converted = dir_ / "new.study";
  std::ofstream(converted) << convert.out();
  Process run("rths-study", {"run", converted.string(), "--out", (dir_ / "out").string(), "--quiet"}, dir_ / "run");
  ASSERT_EQ(run.wait(kTimeout), 0) << run.err() << "\n" << convert.out();
  const study::CsvText csv = study::read_csv(dir_ / "out/study.csv");
  ASSERT_EQ(csv.rows.size(), 2U);
  const auto k = csv.column("k");
  ASSERT_TRUE(k);
  EXPECT_EQ(csv.rows[1][*k], "72584.72");
  EXPECT_EQ(csv.rows[1][*csv.column("steps")], "513");  // 0.5 s at 1024 Hz: the set override applied
  // A study already in the text format has nothing to convert.
  Process again("rths-study", {"convert", converted.string()}, dir_ / "again");
  EXPECT_EQ(again.wait(kTimeout), kExitBadInput);
  EXPECT_NE(again.err().find("has no statement of the old line syntax"), std::string::npos) << again.err();
}

}  // namespace
}  // namespace rths::test_study_cli
