// The command-line layer every rths executable declares its commands and options with: typed,
// range-checked values, one error line that names the option and the value, a help text made from
// the declarations. The executables themselves are tested in test_cli.cpp and test_bad_inputs.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/core/command_line.hpp"

namespace rths::test_command_line {
namespace {

// A program shaped like rths-numerical: commands with a CONFIG or a FILE, options of some commands
// only, a repeated option, a required one, and --out with a different value for one command.
struct Toy {
  std::filesystem::path out;
  std::vector<std::string> sets;
  std::string site;
  double wait_s = 0.0;
  int jobs = 1;
  bool realtime = false;
  bool quiet = false;
  CommandLine cli{"toy", "a program to test the command line with"};

  Toy() {
    cli.command("run", "CONFIG", "Run CONFIG.\nSecond line of the help.");
    cli.command("keygen", "FILE", "Write a key to FILE.");
    cli.command("merge", "DIR...", "Merge folders.");
    cli.flag("realtime", realtime, "(run) Wall clock.").only_for({"run"});
    cli.path("out", "DIR", out, "Run folder.").only_for({"run", "merge"}).required_for({"merge"});
    cli.path("out", "FILE", out, "(keygen) The file.").only_for({"keygen"});
    cli.repeated("set", "PATH=VALUE", sets, "Override a field.").only_for({"run"});
    cli.text("site", "NAME", site, "The site.").only_for({"run"});
    cli.number("wait", "SECONDS", wait_s, {0.0, 86400.0, false, "a time in seconds"}, "Wait this long.");
    cli.whole("jobs", "N", jobs, {1, 8, "a whole number of threads"}, "Threads.");
    cli.flag("quiet", quiet, "Print only errors.").alias("-q");
    cli.refuse("frob", "belongs in the config file");
  }

  // The error line for args, or "" when they parse.
  std::string error(const std::vector<std::string>& args) {
    try {
      cli.parse(args);
    } catch (const UsageError& e) {
      return e.what();
    }
    return {};
  }
};

TEST(CommandLine, NumbersAreTypedAndRangeChecked) {
  const NumberRange wait{0.0, 86400.0, false, "a time in seconds"};
  EXPECT_EQ(parse_number("0", wait), 0.0);
  EXPECT_EQ(parse_number("86400", wait), 86400.0);
  EXPECT_EQ(parse_number("1e3", wait), 1000.0);
  EXPECT_EQ(parse_number("0.25", wait), 0.25);
  for (const char* bad : {"", "abc", "-1", "86400.001", "nan", "inf", " 5", "5 ", "5s", "+5", "1e400"}) {
    try {
      parse_number(bad, wait);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Expected& e) {
      EXPECT_STREQ(e.what(), "a time in seconds from 0 to 86400") << bad;
    }
  }
  // An open lower bound: above 0, so 0 itself is refused.
  const NumberRange rate{0.0, 1e5, true, "a rate in Hz"};
  EXPECT_THROW(parse_number("0", rate), Expected);
  EXPECT_EQ(parse_number("1e-3", rate), 1e-3);
  try {
    parse_number("2e6", {0.0, 1e6, false, "a time in microseconds"});
  } catch (const Expected& e) {
    EXPECT_STREQ(e.what(), "a time in microseconds from 0 to 1000000");  // bounds as a person writes them
  }
  try {
    parse_number("-5", rate);
  } catch (const Expected& e) {
    EXPECT_STREQ(e.what(), "a rate in Hz above 0 and up to 100000");
  }

  const WholeRange jobs{1, 1024, "a whole number"};
  EXPECT_EQ(parse_whole("1", jobs), 1);
  EXPECT_EQ(parse_whole("1024", jobs), 1024);
  for (const char* bad : {"0", "-3", "1025", "2.5", "1e3", "x", "", "99999999999999999999999"}) {
    EXPECT_THROW(parse_whole(bad, jobs), Expected) << bad;
  }
}

TEST(CommandLine, AddressesAreHostAndPort) {
  EXPECT_EQ(parse_address("127.0.0.1:47000", false).port, 47000);
  EXPECT_EQ(parse_address("[::1]:0", true).host, "::1");
  EXPECT_THROW(parse_address("127.0.0.1:0", false), Expected);  // a peer's port is never 0
  for (const char* bad : {":0", "127.0.0.1", "127.0.0.1:65536", "256.1.1.1:1", "::1:1", "host:x"}) {
    EXPECT_THROW(parse_address(bad, true), Expected) << bad;
  }
  EXPECT_EQ(parse_listen_address("127.0.0.1:0").host, "127.0.0.1");
  EXPECT_THROW(parse_listen_address("nosuchhost.invalid:0"), Expected);
}

TEST(CommandLine, ValuesReachTheirTargets) {
  Toy toy;
  ASSERT_EQ(toy.error({"run", "c.textproto", "--realtime", "--out=o", "--set", "a=1", "--set", "b=2", "--site", "lab",
                       "--wait", "2.5", "--jobs", "3", "-q"}),
            "");
  EXPECT_EQ(toy.cli.command(), "run");
  EXPECT_EQ(toy.cli.operands(), std::vector<std::string>{"c.textproto"});
  EXPECT_EQ(toy.out, "o");
  EXPECT_EQ(toy.sets, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(toy.site, "lab");
  EXPECT_EQ(toy.wait_s, 2.5);
  EXPECT_EQ(toy.jobs, 3);
  EXPECT_TRUE(toy.realtime);
  EXPECT_TRUE(toy.quiet);
  EXPECT_TRUE(toy.cli.given("set"));
  EXPECT_FALSE(toy.cli.given("nothing"));

  // Options before the command, a repeated --out (the last wins), and "--" before an operand that
  // starts with a dash.
  Toy again;
  ASSERT_EQ(again.error({"--out", "a", "merge", "--out", "b", "--", "-odd-folder", "other"}), "");
  EXPECT_EQ(again.out, "b");
  EXPECT_EQ(again.cli.operands(), (std::vector<std::string>{"-odd-folder", "other"}));
}

// The one line of every kind of bad command line: it names the option (or argument) and, for a
// value, what was expected and what was given.
TEST(CommandLine, EveryBadCommandLineIsOneLineNamingTheOption) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"run", "c", "--wait", "abc"}, "--wait: expected a time in seconds from 0 to 86400, got 'abc'"},
      {{"run", "c", "--wait=-1"}, "--wait: expected a time in seconds from 0 to 86400, got '-1'"},
      {{"run", "c", "--jobs", "-3"}, "--jobs: expected a whole number of threads from 1 to 8, got '-3'"},
      {{"run", "c", "--jobs", "0"}, "--jobs: expected a whole number of threads from 1 to 8, got '0'"},
      {{"run", "c", "--site", ""}, "--site: expected a NAME (not empty), got ''"},
      {{"run", "c", "--sett", "a=1"}, "unknown option --sett (did you mean --set?)"},
      {{"run", "c", "--wiat", "1"}, "unknown option --wiat (did you mean --wait?)"},
      {{"run", "c", "--frobnicate"}, "unknown option --frobnicate (see --help)"},
      {{"run", "c", "-x"}, "unknown option -x (see --help)"},
      {{"run", "c", "--frob", "1"}, "--frob: belongs in the config file"},
      {{"run", "c", "--out"}, "--out: expected DIR, got nothing"},
      {{"run", "c", "--out", "--quiet"}, "--out: expected DIR, got the option '--quiet'"},
      {{"run", "c", "--realtime=yes"}, "--realtime: expected no value, got 'yes'"},
      {{"keygen", "k", "--realtime"}, "--realtime is an option of run, not of keygen (see --help)"},
      {{"run"}, "run needs CONFIG (see --help)"},
      {{"merge", "a", "b"}, "merge needs --out DIR (see --help)"},
      {{"run", "c", "d"}, "unexpected argument 'd' (see --help)"},
      {{}, "missing command; expected one of run, keygen, merge (see --help)"},
      {{"rn", "c"}, "unknown command rn (did you mean run?)"},
      {{"fly", "c"}, "unknown command fly (see --help)"},
  };
  for (const auto& [args, expected] : cases) {
    Toy toy;
    EXPECT_EQ(toy.error(args), expected);
  }
}

TEST(CommandLine, HelpAndVersionWinAnywhere) {
  Toy toy;
  EXPECT_EQ(toy.cli.parse({"run", "--jobs", "-3", "--help"}), CommandLine::Outcome::kHelp);
  EXPECT_EQ(toy.cli.parse({"-h"}), CommandLine::Outcome::kHelp);
  EXPECT_EQ(toy.cli.parse({"--sett", "--version"}), CommandLine::Outcome::kVersion);
  // After "--" they are operands.
  EXPECT_EQ(toy.error({"merge", "--out", "o", "--", "--help"}), "");
  EXPECT_EQ(toy.cli.operands(), std::vector<std::string>{"--help"});
}

// The help is made from the declarations: every option the parser accepts is in it with its help
// text, and the usage line of each command shows the options of that command.
TEST(CommandLine, HelpListsEveryOptionItAccepts) {
  Toy toy;
  const std::string help = toy.cli.help();
  for (const auto& name : toy.cli.option_names()) {
    EXPECT_NE(help.find("--" + name), std::string::npos) << name << "\n" << help;
  }
  for (const char* text : {"Run CONFIG.\n", "Second line of the help.", "(run) Wall clock.", "-q, --quiet",
                           "Wait this long.", "(keygen) The file.", "This text.", "Program version."}) {
    EXPECT_NE(help.find(text), std::string::npos) << text << "\n" << help;
  }
  EXPECT_NE(help.find("toy run CONFIG [--realtime] [--out DIR] [--set PATH=VALUE]... [--site NAME]"), std::string::npos)
      << help;
  EXPECT_NE(help.find("toy keygen FILE [--out FILE] [--wait SECONDS]"), std::string::npos) << help;
  EXPECT_NE(help.find("toy merge DIR... --out DIR [--wait SECONDS]"), std::string::npos) << help;
  EXPECT_EQ(help.find("--frob"), std::string::npos) << "a refused option is not offered";
  EXPECT_EQ(toy.cli.option_names(),
            (std::set<std::string>{"realtime", "out", "set", "site", "wait", "jobs", "quiet", "help", "version"}));
}

TEST(CommandLine, AnOptionWithoutHelpTextCannotBeDeclared) {
  bool flag = false;
  CommandLine cli("toy", "test");
  EXPECT_THROW(cli.flag("undocumented", flag, ""), std::logic_error);
  EXPECT_THROW(cli.flag("help", flag, "a second --help"), std::logic_error);
  cli.command("run", "CONFIG", "Run.");
  EXPECT_THROW(cli.command("run", "CONFIG", "Run again."), std::logic_error);
  // Two --x for one command cannot both be meant.
  cli.flag("x", flag, "first");
  cli.flag("x", flag, "second");
  EXPECT_THROW(cli.parse({"run", "c"}), std::logic_error);
}

TEST(CommandLine, VersionLineIsTheProjectVersion) {
  Toy toy;
  EXPECT_EQ(toy.cli.version_line(), std::string("toy ") + RTHS_PROJECT_VERSION);
}

}  // namespace
}  // namespace rths::test_command_line
