// rths-study as a user runs it: a small grid, its rows against rths-numerical run, shards and merge,
// and a bad override refused before anything runs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"
#include "rths/common/exit_codes.hpp"

namespace {

using rths::test::Process;
using rths::test::RunFolderTest;

constexpr auto kTimeout = std::chrono::seconds(120);

// CSV cells, double quotes understood (rths-study quotes cells with commas).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  [[nodiscard]] std::size_t column(const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) {
        return i;
      }
    }
    ADD_FAILURE() << "no column " << name;
    return 0;
  }
};

Table read_csv(const std::filesystem::path& file) {
  Table t;
  std::ifstream in(file);
  std::string line;
  if (std::getline(in, line)) {
    t.header = cells(line);
  }
  while (std::getline(in, line)) {
    t.rows.push_back(cells(line));
  }
  return t;
}

// The words of a command line as rths-study writes it (single-quoted words, no other quoting).
std::vector<std::string> shell_words(const std::string& command) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  bool any = false;
  for (const char c : command) {
    if (c == '\'') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) {
        out.push_back(cur);
      }
      cur.clear();
      any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  if (any) {
    out.push_back(cur);
  }
  return out;
}

class StudyTest : public RunFolderTest {
 protected:
  // The spring of seed 002 at -30/0/+30 % model error and 0/50 ms round trip, 5 s of the record.
  std::filesystem::path write_small_study() {
    const auto config = std::filesystem::path(RTHS_SOURCE_DIR) / "examples/seed002/spring.textproto";
    const auto file = dir_ / "small.study";
    std::ofstream(file) << "# a small grid\nconfig " << config.string() << "\n"
                        << "axis model_error site[0].channel[0].prediction.spring.stiffness_n_per_m = "
                           "39084.08 55834.4 72584.72   # -30, 0, +30 %\n"
                        << "axis delay site[0].link.forward.delay_s,site[0].link.backward.delay_s = 0 0.025\n"
                        << "set duration_s=5\n";
    return file;
  }

  int study(const std::vector<std::string>& args, const std::string& log) {
    Process p("rths-study", args, dir_ / log);
    const int code = p.wait(kTimeout);
    if (code != 0) {
      ADD_FAILURE() << "rths-study " << log << " exit " << code << ": " << p.err();
    }
    return code;
  }
};

TEST_F(StudyTest, SmallGridMatchesDirectRuns) {
  const auto file = write_small_study();
  ASSERT_EQ(study({"run", file.string(), "--out", (dir_ / "all").string(), "--jobs", "3", "--quiet"}, "all"), 0);
  const Table t = read_csv(dir_ / "all/study.csv");
  ASSERT_EQ(t.rows.size(), 6U);
  const std::size_t row = t.column("row");
  const std::size_t error = t.column("model_error");
  const std::size_t delay = t.column("delay");
  const std::size_t forward = t.column("site[0].link.forward.delay_s");
  const std::size_t j = t.column("x2_j_peak_pct");
  const std::size_t rerun = t.column("rerun");
  const std::size_t failed = t.column("error");
  ASSERT_EQ(t.header.size(), t.rows[0].size());
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    EXPECT_EQ(r[row], std::to_string(i));
    EXPECT_EQ(r[failed], "");
    EXPECT_EQ(r[delay], i % 2 == 0 ? "0" : "0.025");  // first axis slowest
    EXPECT_EQ(r[forward], r[delay]);
    EXPECT_EQ(r[t.column("steps")], "5121");
    if (r[error] == "55834.4" || r[delay] == "0") {
      EXPECT_EQ(std::stod(r[j]), 0.0) << "row " << i;  // exact model or no delay: no error at all
    } else {
      EXPECT_GT(std::stod(r[j]), 1.0) << "row " << i;
    }
  }
  EXPECT_EQ(t.rows[1][error], "39084.08");
  EXPECT_NEAR(std::stod(t.rows[1][j]), 6.07, 0.01);  // -30 %, 50 ms (5 s suffice for the peak)

  // Each row with delay re-run alone from its command line gives the same numbers.
  for (const std::size_t i : {1U, 5U}) {
    auto words = shell_words(t.rows[i][rerun]);
    ASSERT_GE(words.size(), 3U);
    ASSERT_EQ(words[0], "rths-numerical");
    ASSERT_EQ(words[1], "run");
    std::vector<std::string> args(words.begin() + 1, words.end());
    const auto out = dir_ / ("rerun" + std::to_string(i));
    args.insert(args.end(), {"--out", out.string(), "--quiet"});
    Process p("rths-numerical", args, dir_ / ("rerun" + std::to_string(i)));
    ASSERT_EQ(p.wait(kTimeout), 0) << p.err();
    const std::string summary = rths::test::slurp(out / "summary.json");
    const double direct = rths::test::json_number(summary, "x2", "j_peak_pct");
    const double from_study = std::stod(t.rows[i][j]);
    EXPECT_NEAR(from_study, direct, 1e-9 * std::abs(direct)) << "row " << i;
    EXPECT_NEAR(std::stod(t.rows[i][t.column("x2_peak")]), rths::test::json_number(summary, "x2", "peak"),
                1e-9 * std::abs(rths::test::json_number(summary, "x2", "peak")));
  }
}

TEST_F(StudyTest, ShardsMergeToTheWholeStudy) {
  const auto file = write_small_study();
  ASSERT_EQ(study({"run", file.string(), "--out", (dir_ / "all").string(), "--jobs", "2", "--quiet"}, "all"), 0);
  ASSERT_EQ(study({"run", file.string(), "--out", (dir_ / "s1").string(), "--shard", "1/2", "--quiet"}, "s1"), 0);
  ASSERT_EQ(study({"run", file.string(), "--out", (dir_ / "s2").string(), "--shard=2/2", "--quiet"}, "s2"), 0);
  EXPECT_EQ(read_csv(dir_ / "s1/study.csv").rows.size(), 3U);
  ASSERT_EQ(
      study({"merge", (dir_ / "s2").string(), (dir_ / "s1").string(), "--out", (dir_ / "merged").string(), "--quiet"},
            "merge"),
      0);
  const Table whole = read_csv(dir_ / "all/study.csv");
  const Table merged = read_csv(dir_ / "merged/study.csv");
  ASSERT_EQ(merged.header, whole.header);
  ASSERT_EQ(merged.rows.size(), whole.rows.size());
  const std::size_t time = whole.column("run_time_s");
  for (std::size_t i = 0; i < whole.rows.size(); ++i) {
    ASSERT_EQ(merged.rows[i].size(), whole.rows[i].size());
    for (std::size_t c = 0; c < whole.header.size(); ++c) {
      if (c != time) {
        EXPECT_EQ(merged.rows[i][c], whole.rows[i][c]) << "row " << i << " column " << whole.header[c];
      }
    }
  }

  // One shard alone is not the whole study; the same shard twice duplicates rows. Both name the rows.
  Process missing("rths-study", {"merge", (dir_ / "s1").string(), "--out", (dir_ / "m2").string()}, dir_ / "missing");
  EXPECT_EQ(missing.wait(kTimeout), rths::kExitBadInput);
  EXPECT_NE(missing.err().find("rows missing (3 of 6): 1 3 5"), std::string::npos) << missing.err();
  Process twice("rths-study",
                {"merge", (dir_ / "s1").string(), (dir_ / "s1").string(), (dir_ / "s2").string(), "--out",
                 (dir_ / "m3").string()},
                dir_ / "twice");
  EXPECT_EQ(twice.wait(kTimeout), rths::kExitBadInput);
  EXPECT_NE(twice.err().find("more than one shard: 0 2 4"), std::string::npos) << twice.err();
}

TEST_F(StudyTest, BadOverrideIsRefusedBeforeAnyRun) {
  const auto config = std::filesystem::path(RTHS_SOURCE_DIR) / "examples/seed002/spring.textproto";
  const auto file = dir_ / "bad.study";
  std::ofstream(file) << "config " << config.string() << "\n"
                      << "axis delay site[0].link.forward.delay_s = 0 0.01\n"
                      << "axis typo site[0].link.forwrd.delay_s = 0 0.01\n";
  Process p("rths-study", {"run", file.string(), "--out", (dir_ / "out").string()}, dir_ / "bad");
  EXPECT_EQ(p.wait(kTimeout), rths::kExitBadInput);
  EXPECT_NE(p.err().find("bad.study:3: axis typo"), std::string::npos) << p.err();
  EXPECT_NE(p.err().find("site[0].link.forwrd.delay_s"), std::string::npos) << p.err();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out/study.csv"));

  // A value out of range is named with its row's override too, and a tuple of the wrong size.
  std::ofstream(file) << "config " << config.string() << "\naxis d site[0].link.forward.delay_s = 0 -1\n";
  Process range("rths-study", {"run", file.string(), "--out", (dir_ / "out").string()}, dir_ / "range");
  EXPECT_EQ(range.wait(kTimeout), rths::kExitBadInput);
  EXPECT_NE(range.err().find("site[0].link.forward.delay_s=-1"), std::string::npos) << range.err();
  std::ofstream(file) << "config " << config.string()
                      << "\naxis d site[0].link.forward.delay_s,site[0].link.backward.delay_s = 0:0:0\n";
  Process tuple("rths-study", {"run", file.string(), "--out", (dir_ / "out").string()}, dir_ / "tuple");
  EXPECT_EQ(tuple.wait(kTimeout), rths::kExitBadInput);
  EXPECT_NE(tuple.err().find("bad.study:2: axis d: value `0:0:0` has 3 elements"), std::string::npos) << tuple.err();
}

TEST_F(StudyTest, FailedRowIsRecordedAndTheStudyGoesOn) {
  // A missing ground-motion record passes validation but fails when the run is built.
  const auto config = std::filesystem::path(RTHS_SOURCE_DIR) / "examples/seed002/spring.textproto";
  const auto file = dir_ / "fail.study";
  std::ofstream(file)
      << "config " << config.string() << "\nset duration_s=1\n"
      << "axis record ground_motion.record.path = ../../../shared/ground_motions/elcentro_1940_ns_g.dat "
         "/nonexistent/record.dat\n";
  Process p("rths-study", {"run", file.string(), "--out", (dir_ / "out").string(), "--quiet"}, dir_ / "fail");
  EXPECT_EQ(p.wait(kTimeout), rths::kExitFailure) << p.err();
  const Table t = read_csv(dir_ / "out/study.csv");
  ASSERT_EQ(t.rows.size(), 2U);
  EXPECT_EQ(t.rows[0][t.column("error")], "");
  EXPECT_NE(t.rows[1][t.column("error")].find("/nonexistent/record.dat"), std::string::npos);
  EXPECT_EQ(t.rows[1][t.column("x2_j_peak_pct")], "");
}

TEST_F(StudyTest, HelpDocumentsTheStudyFormat) {
  Process p("rths-study", {"--help"}, dir_ / "help");
  ASSERT_EQ(p.wait(kTimeout), 0);
  EXPECT_NE(p.out().find("axis NAME PATH[,PATH...] = V1 V2"), std::string::npos);
  Process bad("rths-study", {"run"}, dir_ / "nofile");
  EXPECT_EQ(bad.wait(kTimeout), rths::kExitBadInput);
}

}  // namespace
