// The tables of a study: CSV as rths writes and reads it, the columns of study.csv (results::StudyRow
// of proto/results.proto), a row from a run's report, the re-run command line, and a table read back.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/csv.hpp"
#include "node_numerical/study/tables.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::study::test_study_tables {
namespace {

TEST(StudyCsv, CellsWithCommasOrQuotesAreQuotedWithTheirQuotesDoubled) {
  EXPECT_EQ(csv_cell("plain"), "plain");
  EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_cell("two\nlines"), "two lines");  // one row per line
}

TEST(StudyCsv, SplitReadsBackWhatLineWrote) {
  const std::vector<std::string> cells{"", "a,b", "\"q\"", "{x:1,y:[2,3]}", "'s p a c e'", ""};
  const std::string line = csv_line(cells);
  EXPECT_EQ(line, ",\"a,b\",\"\"\"q\"\"\",\"{x:1,y:[2,3]}\",'s p a c e',");
  EXPECT_EQ(csv_split(line), cells);
}

TEST(StudyCsv, ALastLineCutShortIsNotARowWhenAsked) {
  const std::string text = "t_s,x1_m\n0,1\n0.1,2\n0.2,3";  // a kill cut the last line
  EXPECT_EQ(parse_csv(text).rows.size(), 3U);
  const CsvText complete = parse_csv(text, true);
  ASSERT_EQ(complete.rows.size(), 2U);
  EXPECT_EQ(complete.rows[1], (std::vector<std::string>{"0.1", "2"}));
  EXPECT_EQ(complete.lines, (std::vector<int>{2, 3}));
  EXPECT_EQ(complete.column("x1_m"), 1U);
  EXPECT_FALSE(complete.column("x2_m"));
}

TEST(StudyTables, HeaderHasTheColumnsOfTheResultsSchema) {
  const Grid grid{{}, {value_axis("k", {"kp"}, {"1"}), value_axis("d", {"f", "b"}, {"0"})}, {}};
  const std::vector<std::string> expected{"row",
                                          "k",
                                          "d",
                                          "kp",
                                          "f",
                                          "b",
                                          "rerun",
                                          "x1_peak",
                                          "x1_reference_peak",
                                          "x1_j_peak_pct",
                                          "x1_j_rms_pct",
                                          "x1_rho",
                                          "f_lab_peak",
                                          "f_lab_reference_peak",
                                          "f_lab_j_peak_pct",
                                          "f_lab_j_rms_pct",
                                          "f_lab_rho",
                                          "steps",
                                          "run_time_s",
                                          "error"};
  EXPECT_EQ(csv_split(csv_header(grid, {"x1", "f_lab"})), expected);
}

TEST(StudyTables, ARowHoldsItsValuesMetricsAndRerun) {
  Axis legs = value_axis("legs", {"f", "b"}, {"0"});
  legs.values.push_back({"0.1", "0.2"});
  legs.shown.emplace_back("0.1:0.2");
  const Grid grid{{"duration_s=1"}, {value_axis("k", {"kp"}, {"5", "6"}), legs}, {}};
  Outcome done;
  done.done = true;
  done.report.emplace();
  ResponseMetrics x1;
  x1.peak = 0.1;
  x1.reference_peak = 0.3;
  x1.j_peak_pct = 1.0 / 3.0;
  x1.j_rms_pct = 2.5;
  x1.rho = 0.999;
  done.report->responses = {{"x1", x1}};
  done.report->steps = 1025;
  done.report->run_time_s = 0.125;
  const results::StudyRow row = study_row(grid, "/c/spring.textproto", 3, done);
  const auto cells = csv_split(csv_row(row, {"x1", "f_lab"}));
  const std::vector<std::string> expected{
      "3",
      "6",
      "0.1:0.2",
      "6",
      "0.1",
      "0.2",
      "rths-numerical run /c/spring.textproto --set duration_s=1 --set kp=6 --set f=0.1 --set b=0.2",
      "0.1",
      "0.3",
      "0.3333333333333333",
      "2.5",
      "0.999",  // shortest text that reads back to the double
      "",
      "",
      "",
      "",
      "",  // f_lab: not reported
      "1025",
      "0.125",
      ""};
  EXPECT_EQ(cells, expected);
  EXPECT_EQ(cells.size(), csv_split(csv_header(grid, {"x1", "f_lab"})).size());
  EXPECT_EQ(std::stod(cells[9]), 1.0 / 3.0);

  Outcome failed;
  failed.done = true;
  failed.error = "cannot open /nonexistent/record.dat";
  const auto failed_cells = csv_split(csv_row(study_row(grid, "/c/spring.textproto", 0, failed), {"x1"}));
  EXPECT_EQ(failed_cells.back(), failed.error);
  for (std::size_t c = 7; c + 1 < failed_cells.size(); ++c) {
    EXPECT_EQ(failed_cells[c], "") << "column " << c;
  }
}

TEST(StudyTables, TheRerunCommandReadsBackThroughAShell) {
  EXPECT_EQ(shell_quote("site[0].link.forward.delay_s=0.025"), "'site[0].link.forward.delay_s=0.025'");
  EXPECT_EQ(shell_quote("duration_s=1"), "duration_s=1");
  // The words a POSIX shell makes of the command are the config and the overrides as given.
  const std::vector<std::string> overrides{"site[0].link={ forward { delay_s: 0.02 } }", "name=it's", "a=$HOME"};
  const std::string command = rerun_command("/with space/c.textproto", overrides);
  ASSERT_EQ(command.rfind("rths-numerical run ", 0), 0U);
  const std::string printf_words = "printf '%s\\n' " + command.substr(std::string("rths-numerical run ").size());
  FILE* shell = popen(printf_words.c_str(), "r");  // NOLINT(cert-env33-c): our own words, quoted
  ASSERT_NE(shell, nullptr);
  std::string out;
  for (int c = 0; (c = std::fgetc(shell)) != EOF;) {
    out += static_cast<char>(c);
  }
  pclose(shell);
  std::string expected = "/with space/c.textproto\n";
  for (const auto& o : overrides) {
    expected += "--set\n" + o + "\n";
  }
  EXPECT_EQ(out, expected);
}

TEST(StudyTables, ResponsesAreTheDofsThenEachSitesForce) {
  const Responses r = responses_of(test::load_example("seed002/spring.textproto").experiment);
  EXPECT_EQ(r.names, (std::vector<std::string>{"x1", "x2", "f_spring"}));
  EXPECT_EQ(r.dofs, 2U);
  EXPECT_EQ(r.remote_sites, std::vector<std::string>{"spring"});
}

TEST(StudyTables, ATableLineThatIsNotARowIsNamed) {
  const test::ScratchFolder dir;
  const auto file = dir.path() / "study.csv";
  std::ofstream(file) << "row,k,error\n0,1,\n2,3,\n";
  const Table t = read_table(file);
  ASSERT_EQ(t.rows.size(), 2U);
  EXPECT_EQ(t.rows.at(2)[1], "3");  // by row index, not position
  EXPECT_EQ(t.column("error"), 2U);
  std::ofstream(file) << "row,k,error\n0,1,\n1,2\n";
  try {
    (void)read_table(file);
    FAIL() << "read a short row";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ":3: expected 3 cells"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rths::study::test_study_tables
