// The results files' JSON (common/records/results.hpp, proto/results.proto): a member the schema lacks, a
// wrong type or a null is refused; non-finite numbers survive the round trip; counts are quoted and
// maps in key order; every field of the schema is documented (what the real executables write:
// realtime/test_results.cpp).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "common/core/exit_codes.hpp"
#include "common/records/results.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_physical/drivers/udp_bridge.hpp"
#include "results.pb.h"
#include "support/process.hpp"
#include "support/results_json.hpp"
#include "support/test_support.hpp"

namespace rths::test_results {
namespace {

using test::with_member;

using test::refusal;

TEST(ResultsJson, AMemberTheSchemaLacksAWrongTypeOrANullIsRefused) {
  RunReport report;
  report.name = "spring";
  report.steps = 2049;
  report.responses.emplace_back("x1", ResponseMetrics{0.01, 0.01, 0.0, 0.0, 1.0, 0.004, 0.004, 0.02});
  const std::string text = results_json(run_summary(report));
  EXPECT_EQ(refusal<results::RunSummary>(text), "");
  // A misspelt metric, a member nobody declared, a count that is not a number, a null.
  std::string misspelt = text;
  misspelt.replace(misspelt.find("\"j_peak_pct\""), 12, "\"j_peak_pcnt\"");
  EXPECT_NE(refusal<results::RunSummary>(misspelt).find("j_peak_pcnt"), std::string::npos);
  EXPECT_NE(
      refusal<results::RunSummary>(with_member(text, text.find("\"x1\": {") + 6, "\"median\": 0.01,")).find("median"),
      std::string::npos);
  std::string words = text;
  words.replace(words.find("\"2049\""), 6, "\"many\"");
  EXPECT_NE(refusal<results::RunSummary>(words).find("steps"), std::string::npos)
      << refusal<results::RunSummary>(words);
  std::string null = text;
  null.replace(null.find("\"rho\": 1"), 8, "\"rho\": null");
  const std::string why = refusal<results::RunSummary>(null);
  EXPECT_NE(why.find("null"), std::string::npos) << why;
  EXPECT_NE(why.find("test:"), std::string::npos) << why;  // the source and line
  // A "null" inside a string is text, not a null.
  report.name = "null";
  EXPECT_EQ(refusal<results::RunSummary>(results_json(run_summary(report))), "");
}

TEST(ResultsJson, NonFiniteNumbersAreStringsThatReadBackAsTheSameValues) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  results::ResponseMetrics m;
  m.set_peak(std::numeric_limits<double>::quiet_NaN());
  m.set_j_peak_pct(kInf);
  m.set_rho(-kInf);
  m.set_sd(5.570569849746166);
  const std::string text = results_json(m);
  EXPECT_NE(text.find("\"peak\": \"NaN\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"j_peak_pct\": \"Infinity\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"rho\": \"-Infinity\""), std::string::npos) << text;
  results::ResponseMetrics back;
  parse_results_json(text, back, "test");
  EXPECT_TRUE(std::isnan(back.peak()));
  EXPECT_EQ(back.j_peak_pct(), kInf);
  EXPECT_EQ(back.rho(), -kInf);
  EXPECT_EQ(back.sd(), 5.570569849746166);  // every finite double comes back to the bit
  EXPECT_EQ(back.reference_peak(), 0.0);    // written although zero, and read as zero
  EXPECT_NE(text.find("\"reference_peak\": 0"), std::string::npos) << text;
}

TEST(ResultsJson, CountsAreQuotedAndMapsComeInKeyOrder) {
  // The documented representation (results.proto, README "The run folder"): 64-bit integers as
  // strings, 32-bit ones as numbers, map entries sorted whatever order they were made in.
  RunReport report;
  report.steps = 2049;
  report.exit_code = 9;
  for (const char* name : {"x2", "f_lab", "x1"}) report.responses.emplace_back(name, ResponseMetrics{});
  const std::string text = results_json(run_summary(report));
  EXPECT_NE(text.find("\"steps\": \"2049\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"exit_code\": 9"), std::string::npos) << text;
  EXPECT_LT(text.find("\"f_lab\""), text.find("\"x1\""));
  EXPECT_LT(text.find("\"x1\""), text.find("\"x2\""));
  EXPECT_EQ(text.back(), '\n');
  std::swap(report.responses[0], report.responses[2]);
  EXPECT_EQ(results_json(run_summary(report)), text);
}

// The declarations in proto text (fields, enum values, messages) that carry no comment, neither on
// their line nor on the line before. protoc's own parser is in libprotoc, which rths does not use, so
// the text is read line by line: the schema files are written one declaration a line.
std::vector<std::string> undocumented(const std::string& text, std::size_t& declarations) {
  static const std::regex kDeclaration(
      R"(^\s*((optional |repeated )?[\w.]+(<[\w, ]+>)? \w+ = \d+( \[[^\]]*\])?;|\w+ = \d+;|(message|enum) \w+ \{))");
  std::vector<std::string> missing;
  std::istringstream in(text);
  std::string previous;
  for (std::string line; std::getline(in, line); previous = line) {
    if (!std::regex_search(line, kDeclaration)) continue;
    ++declarations;
    const auto first = previous.find_first_not_of(' ');
    if (line.find("//") == std::string::npos && (first == std::string::npos || previous.compare(first, 2, "//") != 0)) {
      missing.push_back(line);
    }
  }
  return missing;
}

// "Every field documented in a comment": each field, enum value and message of results.proto, and of
// the calibration file's message in controller.proto.
TEST(ResultsSchemaSource, EveryFieldIsDocumented) {
  std::size_t declarations = 0;
  const std::vector<std::string> results =
      undocumented(test::slurp(test::source_dir() / "proto/results.proto"), declarations);
  EXPECT_TRUE(results.empty()) << "undocumented in results.proto:\n" << ::testing::PrintToString(results);
  EXPECT_GT(declarations, 200U);  // the schema was read: 180-odd fields, its enum values and messages
  const std::string config = test::slurp(test::source_dir() / "proto/controller.proto");
  const std::size_t from = config.find("message RlsCalibration {");
  ASSERT_NE(from, std::string::npos);
  const std::size_t comment = config.rfind('\n', from - 2) + 1;  // the line before: its comment
  const std::string calibration = config.substr(comment, config.find("\n}\n", from) + 3 - comment);
  std::size_t calibration_declarations = 0;
  const std::vector<std::string> missing = undocumented(calibration, calibration_declarations);
  EXPECT_TRUE(missing.empty()) << "undocumented in RlsCalibration:\n" << ::testing::PrintToString(missing);
  EXPECT_EQ(calibration_declarations, 8U);  // two messages, six fields
}

}  // namespace
}  // namespace rths::test_results
