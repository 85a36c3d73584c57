// A config's problems are all reported in one run: the checker's two kinds of rule and its sections,
// and a config with mistakes in several places.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/exit_codes.hpp"
#include "common/core/problems.hpp"
#include "support/process.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test::test_config_problems {
namespace {

TEST(ConfigProblems, ExpectGoesOnRequireEndsItsSectionAndTheNextSectionRuns) {
  Problems problems("case.textproto");
  const Checker check(problems);
  const bool first = check.section([&] {
    check.expect(false, "a", "one");
    check.expect(true, "b", "never");
    check.at("c").require(false, "d", "two");
    check.expect(false, "e", "never: after a failed require");
  });
  const bool second = check.section([&] { check.at("f", 2).expect(false, "", "three"); });
  const bool third = check.section([&] { check.expect(true, "g", "never"); });
  EXPECT_FALSE(first);
  EXPECT_FALSE(second);
  EXPECT_TRUE(third);
  EXPECT_EQ(problems.lines(), (std::vector<std::string>{"case.textproto: a: one", "case.textproto: c.d: two",
                                                        "case.textproto: f[2]: three"}));
}

TEST(ConfigProblems, OneProblemIsOneLineAsBefore) {
  try {
    load_example("actuator/spring_iisl.textproto", {"duration_s=-1"});
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("duration_s: is -1"), std::string::npos) << e.what();
  }
}

// Mistakes in four places (the run, the output, a controller, the real-time settings): all four
// reported, each with the file (or the --set that made it) and the field.
TEST(ConfigProblems, AConfigWithSeveralMistakesReportsThemAllInOneRun) {
  const std::vector<std::string> mistakes{"duration_s=-1", "output.memory_budget_mb=0",
                                          "site[0].channel[0].controller.rls={ taps: 9 }",
                                          "realtime.max_extrapolation_s=5"};
  try {
    load_example("actuator/spring_iisl.textproto", mistakes);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("4 problems:\n", 0), 0U) << what;
    for (const char* field : {"duration_s: is -1", "output.memory_budget_mb: is 0",
                              "site[0].channel[0].controller.rls.taps: is 9", "realtime.max_extrapolation_s: is 5"}) {
      EXPECT_NE(what.find(field), std::string::npos) << field << " missing in\n" << what;
    }
    EXPECT_NE(what.find("--set site[0].channel[0].controller.rls={ taps: 9 }"), std::string::npos) << what;
  }
}

// On the command line each problem is a line of its own, under the count.
TEST(ConfigProblems, TheProgramPrintsEachProblemOnItsOwnLine) {
  const ScratchFolder dir("config_problems");
  Process run("rths-numerical",
              {"run", example("actuator/spring_iisl.textproto").string(), "--out", (dir.path() / "run").string(),
               "--set", "duration_s=-1", "--set", "output.memory_budget_mb=0"},
              dir.path());
  EXPECT_EQ(run.wait(std::chrono::seconds(30)), kExitBadInput);
  const std::string err = run.err();
  EXPECT_NE(err.find("rths-numerical: error: 2 problems:\n"), std::string::npos) << err;
  EXPECT_NE(err.find("\nrths-numerical: error:   "), std::string::npos) << err;
  EXPECT_NE(err.find("duration_s: is -1"), std::string::npos) << err;
  EXPECT_NE(err.find("output.memory_budget_mb: is 0"), std::string::npos) << err;
  EXPECT_EQ(err.find("\\n"), std::string::npos) << "no escaped line breaks: " << err;
}

}  // namespace
}  // namespace rths::test::test_config_problems
