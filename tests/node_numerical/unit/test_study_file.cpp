// The study file (proto/study.proto) as rths-study reads it: every field into the grid, each rule of
// the schema refused with the file's line, the older line syntax refused with how to convert it, and
// the converter, whose output must mean the same grid as the old file did.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/legacy.hpp"
#include "node_numerical/study/study_file.hpp"
#include "support/scratch_folder.hpp"

namespace rths::study::test_study_file {
namespace {

// A study file's text as read from dir/name (the file need not exist: only its folder and name
// matter to parse_study).
StudyFile parse(const std::string& text, bool need_config = true) {
  return parse_study(text, "/studies/small.study", need_config);
}

// The message parse_study throws for text, or "" when it reads.
std::string refusal(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kConfig = "config: \"../seed002/spring.textproto\"\n";

TEST(StudyFile, ReadsEveryFieldIntoTheGrid) {
  const StudyFile st = parse(std::string(kConfig) +
                             "name: \"sweep\"\n"
                             "set: \"duration_s=5\"\n"
                             "set: \"site[0].link.backward.seed=7\"\n"
                             "axis {\n"
                             "  name: \"k\"\n"
                             "  path: \"site[0].channel[0].prediction.spring.stiffness_n_per_m\"\n"
                             "  value: [\"1\", \"2\", \"3\"]\n"
                             "  label { title: \"model error (%)\" value: [\"-30\", \"0\", \"+30\"] }\n"
                             "}\n"
                             "axis {\n"
                             "  name: \"legs\"\n"
                             "  path: [\"a.delay_s\", \"b.delay_s\"]\n"
                             "  tuple { value: [\"0.01\", \"0.02\"] }\n"
                             "  tuple { value: [\"0.03\", \"0.04\"] }\n"
                             "}\n"
                             "plot { x: \"k\" lines: \"legs\" response: \"x2\" }\n"
                             "plot { x: \"k\" lines: \"legs\" }\n");
  EXPECT_EQ(st.config, std::filesystem::path("/seed002/spring.textproto"));  // from the study's folder
  EXPECT_EQ(st.name, "sweep");
  EXPECT_EQ(st.grid.sets, (std::vector<std::string>{"duration_s=5", "site[0].link.backward.seed=7"}));
  ASSERT_EQ(st.grid.axes.size(), 2U);
  const Axis& k = st.grid.axes[0];
  EXPECT_EQ(k.line, 5);
  EXPECT_EQ(k.shown, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(k.values[2], std::vector<std::string>{"3"});
  const Axis& legs = st.grid.axes[1];
  EXPECT_TRUE(legs.tuples);
  EXPECT_EQ(legs.paths, (std::vector<std::string>{"a.delay_s", "b.delay_s"}));
  EXPECT_EQ(legs.values[1], (std::vector<std::string>{"0.03", "0.04"}));
  EXPECT_EQ(legs.shown[1], "0.03:0.04");  // a tuple in study.csv: its elements joined by ':'
  ASSERT_TRUE(st.labels.contains("k"));
  EXPECT_EQ(st.labels.at("k").title, "model error (%)");
  EXPECT_EQ(st.labels.at("k").line, 9);
  ASSERT_EQ(st.plots.size(), 2U);
  EXPECT_EQ(st.plots[0].response, "x2");
  EXPECT_EQ(st.plots[0].line, 17);
  EXPECT_EQ(st.plots[1].response, "");  // the last DOF, once the config is read
}

TEST(StudyFile, NameDefaultsToTheFilesStem) {
  EXPECT_EQ(parse(kConfig).name, "small");
  EXPECT_EQ(parse(kConfig).grid.rows(), 1U);  // no axis: the config alone
}

// One rule of the schema, the text that breaks it and what the one line must say.
struct Rule {
  const char* name;
  std::string text;
  std::string expected;
};

void PrintTo(const Rule& rule, std::ostream* os) {
  *os << rule.name;
}

class StudyFileRule : public ::testing::TestWithParam<Rule> {};

TEST_P(StudyFileRule, IsRefusedWithTheFileAndLine) {
  const std::string message = refusal(GetParam().text);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << "message: " << message;
}

std::string axis(const std::string& fields) {
  return "axis { " + fields + " }\n";
}

const std::string kDelay = axis(R"(name: "delay" path: "site[0].link.forward.delay_s" value: ["0", "0.01"])");

INSTANTIATE_TEST_SUITE_P(
    Rules, StudyFileRule,
    ::testing::Values(
        Rule{"NoConfig", kDelay, "small.study: no config; expected config: \"FILE\""},
        Rule{"UnknownField", std::string(kConfig) + "axes { name: \"d\" }\n",
             "small.study:2:1: unknown field \"axes\" in Study; did you mean \"axis\"?"},
        Rule{"AxisWithoutName", std::string(kConfig) + axis(R"(path: "p" value: "1")"), "small.study:2: axis: no name"},
        Rule{"AxisNameWithABlank", std::string(kConfig) + axis(R"(name: "a b" path: "p" value: "1")"),
             "small.study:2: axis \"a b\": the name has a blank"},
        Rule{"AxisNamedAfterAColumn", std::string(kConfig) + axis(R"(name: "error" path: "p" value: "1")"),
             "small.study:2: axis error: the name is a column of study.csv"},
        Rule{"AxisNamedTwice", std::string(kConfig) + kDelay + axis(R"(name: "delay" path: "q" value: "1")"),
             "small.study:3: axis delay is named twice"},
        Rule{"AxisWithoutPath", std::string(kConfig) + axis(R"(name: "d" value: "1")"),
             "small.study:2: axis d: no path"},
        Rule{"PathOnTwoAxes",
             std::string(kConfig) + kDelay + axis(R"(name: "e" path: "site[0].link.forward.delay_s" value: "1")"),
             "small.study:3: axis e: path `site[0].link.forward.delay_s` is empty or on another axis too"},
        Rule{"ValueAndTuple",
             std::string(kConfig) + axis(R"(name: "d" path: ["p", "q"] value: "1" tuple { value: ["1", "2"] })"),
             "small.study:2: axis d: has both value and tuple"},
        Rule{"NoValues", std::string(kConfig) + axis(R"(name: "d" path: "p")"), "small.study:2: axis d has no values"},
        Rule{"TupleOfTheWrongSize",
             std::string(kConfig) + axis(R"(name: "d" path: ["p", "q"] tuple { value: ["0", "0", "0"] })"),
             "small.study:2: axis d: tuple `0:0:0` has 3 elements, the axis has 2 paths"},
        Rule{"LabelWithoutTitle",
             std::string(kConfig) + "axis { name: \"d\" path: \"p\" value: [\"1\", \"2\"]\n"
                                    "  label { value: [\"a\", \"b\"] } }\n",
             "small.study:3: label d: no title"},
        Rule{"LabelOfTheWrongSize",
             std::string(kConfig) + "axis { name: \"d\" path: \"p\" value: [\"1\", \"2\"]\n"
                                    "  label { title: \"t\" value: \"a\" } }\n",
             "small.study:3: label d: 1 values, the axis has 2"},
        Rule{"SetWithoutAssignment", std::string(kConfig) + "set: \"duration_s\"\n",
             "small.study:2: set: expected \"PATH=VALUE\""},
        Rule{"PlotOfOneAxisTwice", std::string(kConfig) + kDelay + "plot { x: \"delay\" lines: \"delay\" }\n",
             "small.study:3: plot delay delay: expected two different axes"},
        Rule{"PlotOfAnUnknownAxis", std::string(kConfig) + kDelay + "plot { x: \"delay\" lines: \"k\" }\n",
             "small.study:3: plot delay k: expected two different axes"},
        Rule{"PlotAgainstWords",
             std::string(kConfig) + kDelay + axis(R"(name: "mode" path: "m" value: ["NONE", "MODIFIED_SMITH"])") +
                 "plot { x: \"mode\" lines: \"delay\" }\n",
             "small.study:4: plot mode delay: x axis value `NONE` is not a number"}),
    [](const ::testing::TestParamInfo<Rule>& rule) { return std::string(rule.param.name); });

TEST(StudyFile, OldLineSyntaxIsRefusedWithHowToConvertIt) {
  const std::string old =
      "# a study\n\nconfig ../seed002/spring.textproto\naxis d site[0].link.forward.delay_s = 0 1\n";
  EXPECT_EQ(legacy_statement_line(old), 3);
  const std::string message = refusal(old);
  EXPECT_NE(message.find("small.study:3: is a study file of the old line syntax"), std::string::npos) << message;
  EXPECT_NE(message.find("rths-study convert /studies/small.study > NEW.study"), std::string::npos) << message;
  // The text format is not mistaken for it, nor is a text-format file with a typo.
  EXPECT_FALSE(legacy_statement_line(kConfig));
  EXPECT_FALSE(legacy_statement_line("axis {\n name: \"d\" }\n"));
  EXPECT_EQ(refusal("confg: \"x\"\n").find("old line syntax"), std::string::npos);
}

TEST(StudyFile, ConvertedOldFileIsTheSameGrid) {
  // An old file with a tuple axis, a single value in it, a label before its axis, comments and a
  // trailing comment. Its meaning, written out independently: the overrides of each row.
  const std::string old =
      "# head comment\n"
      "config ../seed002/spring.textproto\n"
      "label model \"force error (%)\" = -30 +30\n"
      "axis model a.alpha,a.beta = 1:2 3   # trailing\n"
      "\n"
      "axis loss b.loss = {probability:0.01} {gilbert_elliott{p_good_to_bad:0.05,p_bad_to_good:0.2}}\n"
      "set duration_s=1\n"
      "name conv\n"
      "plot model loss x2\n";
  const std::vector<std::vector<std::string>> expected{
      {"duration_s=1", "a.alpha=1", "a.beta=2", "b.loss={probability:0.01}"},
      {"duration_s=1", "a.alpha=1", "a.beta=2", "b.loss={gilbert_elliott{p_good_to_bad:0.05,p_bad_to_good:0.2}}"},
      {"duration_s=1", "a.alpha=3", "a.beta=3", "b.loss={probability:0.01}"},
      {"duration_s=1", "a.alpha=3", "a.beta=3", "b.loss={gilbert_elliott{p_good_to_bad:0.05,p_bad_to_good:0.2}}"},
  };
  const std::string converted = convert_legacy_study(old, "/studies/old.study");
  const StudyFile st = parse(converted);
  ASSERT_EQ(st.grid.rows(), expected.size()) << converted;
  for (std::size_t row = 0; row < expected.size(); ++row) {
    EXPECT_EQ(st.grid.overrides(row), expected[row]) << "row " << row << "\n" << converted;
  }
  EXPECT_EQ(st.name, "conv");
  EXPECT_EQ(st.grid.axes[0].shown, (std::vector<std::string>{"1:2", "3:3"}));
  EXPECT_EQ(st.labels.at("model").values, (std::vector<std::string>{"-30", "+30"}));
  ASSERT_EQ(st.plots.size(), 1U);
  EXPECT_EQ(st.plots[0].x, "model");
  EXPECT_EQ(st.plots[0].response, "x2");
  for (const char* comment : {"# head comment\n", "# trailing\n"}) {
    EXPECT_NE(converted.find(comment), std::string::npos) << comment << " in\n" << converted;
  }
}

TEST(StudyFile, ConvertRefusesWhatTheOldSyntaxRefused) {
  const auto message = [](const std::string& old) -> std::string {
    try {
      (void)convert_legacy_study(old, "/studies/old.study");
    } catch (const BadInput& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message("config x\nfly away\n").find("old.study:2: unknown statement `fly`"), std::string::npos);
  EXPECT_NE(message("config x\naxis d p,q = 1:2:3\n").find("old.study:2: axis d: value `1:2:3` has 3 elements"),
            std::string::npos);
  EXPECT_NE(message("config x\nlabel d \"t\" = 1\n").find("old.study:2: label: no axis d"), std::string::npos);
}

TEST(StudyFile, PlotSpecReadsBackAsTheSameGridLabelsAndPlots) {
  const StudyFile st = parse(std::string(kConfig) +
                             "axis { name: \"k\" path: \"p\" value: [\"1\", \"2\"]\n"
                             "       label { title: \"k (N/m)\" value: [\"10\", \"20\"] } }\n"
                             "axis { name: \"t\" path: [\"a\", \"b\"] tuple { value: [\"1\", \"2\"] } "
                             "tuple { value: [\"3\", \"4\"] } }\n"
                             "plot { x: \"k\" lines: \"t\" response: \"x1\" }\n");
  const StudyFile back = parse(plot_spec(st), false);
  EXPECT_EQ(back.name, st.name);
  ASSERT_EQ(back.grid.axes.size(), st.grid.axes.size());
  for (std::size_t a = 0; a < st.grid.axes.size(); ++a) {
    EXPECT_EQ(back.grid.axes[a].paths, st.grid.axes[a].paths);
    EXPECT_EQ(back.grid.axes[a].values, st.grid.axes[a].values);
    EXPECT_EQ(back.grid.axes[a].shown, st.grid.axes[a].shown);
  }
  EXPECT_EQ(back.labels.at("k").values, st.labels.at("k").values);
  EXPECT_EQ(back.labels.at("k").title, st.labels.at("k").title);
  ASSERT_EQ(back.plots.size(), 1U);
  EXPECT_EQ(back.plots[0].response, "x1");
  EXPECT_TRUE(back.config.empty());
}

TEST(StudyFile, QuotedEscapesWhatTextFormatWouldMisread) {
  EXPECT_EQ(quoted(R"(say "hi" \ there)"), R"("say \"hi\" \\ there")");
  // ... and the parser reads it back as it was.
  const StudyFile st = parse(std::string(kConfig) + "name: " + quoted(R"(a "b" \c)") + "\n");
  EXPECT_EQ(st.name, R"(a "b" \c)");
}

TEST(StudyFile, AMissingFileIsNamed) {
  try {
    (void)read_study("/nonexistent/x.study");
    FAIL() << "read a missing file";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.study"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rths::study::test_study_file
