// The program skeleton every rths main runs on (docs/architecture.md §10): each rule it promises,
// on a toy program in a child process (gtest's death tests), so that its exit, its signals and its
// stop flag are the child's alone. The executables themselves are tested in test_cli.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/config/config.hpp"
#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/core/version.hpp"
#include "common/program/program.hpp"
#include "common/records/telemetry.hpp"
#include "support/scratch_folder.hpp"

namespace rths::test_program {
namespace {

// A program with one option, whose work the test chooses; run_program on args as its command line.
int toy(const std::vector<std::string>& args, const ProgramRun::Work& work, const std::filesystem::path& log_dir = {},
        bool signals_stop = false) {
  int jobs = 1;
  CommandLine cli("toy", "a program to test the skeleton with");
  cli.whole("jobs", "N", jobs, {1, 8, "a whole number of threads"}, "Threads.");
  std::vector<std::string> argv_text{"toy"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_text.size() + 1);
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  return run_program(static_cast<int>(argv_text.size()), argv.data(), cli, [&](const CommandLine&) {
    ProgramRun run(work);
    run.log_to(log_dir, "toy.log");
    if (signals_stop) run.stop_on_signals();
    return run;
  });
}

int worked(const std::atomic<bool>& /*stop*/) {
  std::fputs("worked\n", stderr);
  return kExitCompleted;
}

// The death tests fork the test process as it is (gtest's "fast" style): the child sees the
// test's own scratch folder, and its signals and stop flag stay its own.
class Program : public ::testing::Test {};

// A bad option: exit 2 and one line naming the program, before anything ran (no "worked").
TEST_F(Program, ABadOptionIsExit2AndOneErrorLineNamingTheProgram) {
  EXPECT_EXIT(std::exit(toy({"--jbos", "2"}, worked)), ::testing::ExitedWithCode(kExitBadInput),
              "^toy: error: unknown option --jbos \\(did you mean --jobs\\?\\)\n$");
  EXPECT_EXIT(std::exit(toy({"--jobs", "9"}, worked)), ::testing::ExitedWithCode(kExitBadInput),
              "^toy: error: --jobs: expected a whole number of threads from 1 to 8, got '9'\n$");
}

// A rule between options that plan() checks is a bad command line too.
TEST_F(Program, AUsageErrorOfThePlanIsABadCommandLine) {
  const auto refuse = [](const CommandLine&) -> ProgramRun { throw UsageError("--jobs: not with --frob"); };
  CommandLine cli("toy", "a program to test the skeleton with");
  std::string name = "toy";
  char* argv[] = {name.data(), nullptr};
  EXPECT_EXIT(std::exit(run_program(1, argv, cli, refuse)), ::testing::ExitedWithCode(kExitBadInput),
              "^toy: error: --jobs: not with --frob\n$");
}

// --version and --help are answered on stdout, exit 0, and nothing runs.
TEST_F(Program, VersionAndHelpAreAnsweredWithoutRunning) {
  bool ran = false;
  const ProgramRun::Work work = [&ran](const std::atomic<bool>&) {
    ran = true;
    return kExitCompleted;
  };
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(toy({"--version"}, work), kExitCompleted);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), std::string("toy ") + kVersion + "\n");
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(toy({"--jobs", "2", "--help"}, work), kExitCompleted);
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("toy — a program to test the skeleton with"), std::string::npos) << help;
  EXPECT_NE(help.find("--jobs N"), std::string::npos) << help;
  EXPECT_FALSE(ran);
}

// The work's own exit code is the program's.
TEST_F(Program, TheWorksExitCodeIsTheProgramsExitCode) {
  EXPECT_EXIT(std::exit(toy({}, [](const std::atomic<bool>&) { return kExitPeerLost; })),
              ::testing::ExitedWithCode(kExitPeerLost), "");
}

// An exception escaping the work: exit 1 and one error line on stderr and in the log; a ConfigError
// exit 2, a line per problem.
TEST_F(Program, AnExceptionEscapingTheWorkIsExit1AndALoggedErrorLine) {
  const test::ScratchFolder dir;
  const auto log = dir.path() / "log";
  EXPECT_EXIT(std::exit(toy(
                  {}, [](const std::atomic<bool>&) -> int { throw std::runtime_error("the pump failed"); }, log)),
              ::testing::ExitedWithCode(kExitFailure), "^toy: error: the pump failed\n$");
  std::ifstream file(log / "toy.log");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_NE(text.str().find("[toy] [error] the pump failed"), std::string::npos) << text.str();

  EXPECT_EXIT(
      std::exit(toy({},
                    [](const std::atomic<bool>&) -> int {
                      throw ConfigError(std::vector<std::string>{"a.textproto:1: first", "a.textproto:2: second"});
                    })),
      ::testing::ExitedWithCode(kExitBadInput),
      "^toy: error: 2 problems:\ntoy: error:   a.textproto:1: first\ntoy: error:   a.textproto:2: second\n$");
}

// A log folder that cannot be made: exit 2 and one line, before the work runs.
TEST_F(Program, ALogFolderThatCannotBeMadeIsExit2BeforeTheWork) {
  const test::ScratchFolder dir;
  std::ofstream(dir.path() / "file") << "not a folder";
  EXPECT_EXIT(std::exit(toy({}, worked, dir.path() / "file" / "log")), ::testing::ExitedWithCode(kExitBadInput),
              "^toy: cannot write [^\n]*/file/log: [^\n]*\n$");
}

// With stop_on_signals, SIGINT and SIGTERM set the work's stop flag and the program ends on its own
// (here: 6, as the nodes do); without it, a signal ends the program.
TEST_F(Program, ASignalRequestsAStopWhenTheRunAsksForIt) {
  const auto interrupted = [](const std::atomic<bool>& stop) {
    if (stop.load()) return kExitFailure;  // stopped before the signal
    std::raise(SIGTERM);
    return stop.load() ? kExitInterrupted : kExitCompleted;
  };
  EXPECT_EXIT(std::exit(toy({}, interrupted, {}, true)), ::testing::ExitedWithCode(kExitInterrupted), "");
  const auto by_sigint = [](const std::atomic<bool>& stop) {
    std::raise(SIGINT);
    return stop.load() ? kExitInterrupted : kExitCompleted;
  };
  EXPECT_EXIT(std::exit(toy({}, by_sigint, {}, true)), ::testing::ExitedWithCode(kExitInterrupted), "");
  EXPECT_EXIT(std::exit(toy({}, interrupted, {}, false)), ::testing::KilledBySignal(SIGTERM), "");
}

// The options several executables share: one definition, checked and explained alike.
TEST(ProgramOptions, SiteIsRequiredAndCheckedAsTheConfigChecksASiteName) {
  std::string site;
  CommandLine cli("toy", "a program to test the shared options with");
  cli.command("", "CONFIG", "");
  site_option(cli, site, "The site.");
  const auto error = [&](const std::vector<std::string>& args) -> std::string {
    try {
      cli.parse(args);
    } catch (const UsageError& e) {
      return e.what();
    }
    return {};
  };
  EXPECT_EQ(error({"c"}), "missing --site NAME (see --help)");
  EXPECT_EQ(error({"c", "--site", ""}), "--site: expected a NAME (not empty), got ''");
  EXPECT_EQ(error({"c", "--site", "a b"}),
            "--site: expected a site name of 1 to 128 letters, digits, '_' or '-', got 'a b'");
  EXPECT_EQ(error({"c", "--site", "lab-1"}), "");
  EXPECT_EQ(site, "lab-1");
}

TEST(ProgramOptions, TheConsoleOptionsAreDeclaredTogetherForTheCommandsGiven) {
  TelemetryOptions telemetry;
  CommandLine cli("toy", "a program to test the shared options with");
  cli.command("serve", "CONFIG", "Serve.");
  cli.command("layout", "CONFIG", "Lay out.");
  console_options(cli, telemetry, "Publish the toy's telemetry there.", {"serve"});
  EXPECT_EQ(cli.parse({"serve", "c", "--console", "127.0.0.1:47300", "--console-key", "k", "--telemetry-hz", "20"}),
            CommandLine::Outcome::kRun);
  EXPECT_EQ(telemetry.console, "127.0.0.1:47300");
  EXPECT_EQ(telemetry.key_file, "k");
  EXPECT_EQ(telemetry.rate_hz, 20.0);
  EXPECT_THROW(cli.parse({"layout", "c", "--console", "127.0.0.1:47300"}), UsageError);
  try {
    cli.parse({"serve", "c", "--telemetry-hz", "0"});
    ADD_FAILURE() << "--telemetry-hz 0 taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--telemetry-hz: expected"), std::string::npos) << e.what();
  }
  const std::string help = cli.help();
  for (const char* text : {"Publish the toy's telemetry there.", kConsoleKeyHelp, kTelemetryRateHelp}) {
    EXPECT_NE(help.find(text), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace rths::test_program
