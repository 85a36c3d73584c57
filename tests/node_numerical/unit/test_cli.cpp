// rths-numerical as a lab engineer meets it: help, runs, and bad configs that stop before anything
// moves with one line naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_cli {
namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

using test::slurp;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::test_folder("rths_cli");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { test::remove_unless_failed(dir_); }

  [[nodiscard]] Result run(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt";
    const fs::path err = dir_ / "stderr.txt";
    const std::string cmd =
        std::string(RTHS_NUMERICAL_EXE) + " " + args + " >" + out.string() + " 2>" + err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());  // NOLINT(cert-env33-c): test harness runs our own binary
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  [[nodiscard]] fs::path write_config(const std::string& name, const std::string& text) const {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  fs::path dir_;
};

// A small valid experiment on the synthetic ground motion (no data file).
std::string valid_config() {
  return R"(name: "cli"
structure {
  dofs: 2
  mass_kg: [2701, 0, 0, 2701]
  stiffness_n_per_m: [558343, -279171, -279171, 279171]
  damping_ns_per_m { value: [3684, -1228, -1228, 2456] }
}
ground_motion { synthetic { seed: 3 duration_s: 2 } }
site {
  name: "lab"
  influence: [-1, 0]
  channel { specimen { spring { stiffness_n_per_m: 55834.4 } } }
  link { forward { delay_s: 0.01 } backward { delay_s: 0.01 } }
}
)";
}

TEST_F(Cli, HelpDescribesTheCommand) {
  const Result r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("rths-numerical run CONFIG"), std::string::npos);
  EXPECT_NE(r.out.find("--set"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST_F(Cli, RunWritesTheRunFolder) {
  const fs::path cfg = write_config("ok.textproto", valid_config());
  const fs::path out = dir_ / "run";
  const Result r = run("run " + cfg.string() + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f :
       {"config.textproto", "numerical.csv", "site_lab.csv", "reference.csv", "summary.json", "run.log"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  // 2 s at 1024 Hz: rows for t = 0 .. 2 s, plus the header.
  std::ifstream csv(out / "numerical.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("t_s,ag_m_per_s2,x1_m,x2_m,", 0), 0U) << header;
  std::size_t rows = 0;
  for (std::string line; std::getline(csv, line);) {
    ++rows;
  }
  EXPECT_EQ(rows, 2049U);
  const results::RunSummary summary = test::read_summary(out / "summary.json");
  EXPECT_EQ(summary.steps(), 2049);
  EXPECT_GT(summary.run_time_s(), 0.0);
  for (const char* response : {"x1", "x2", "f_lab"}) {
    ASSERT_TRUE(summary.responses().contains(response)) << response;
    const results::ResponseMetrics& m = summary.responses().at(response);
    // The metrics of a completed run are numbers, each response with a peak and a spread.
    for (const double v :
         {m.peak(), m.reference_peak(), m.j_peak_pct(), m.j_rms_pct(), m.rho(), m.sd(), m.reference_sd()}) {
      EXPECT_TRUE(std::isfinite(v)) << response << ": " << m.DebugString();
    }
    EXPECT_GT(m.reference_peak(), 0.0) << response;
  }
  EXPECT_NE(r.out.find("J_peak"), std::string::npos);
}

TEST_F(Cli, SetOverridesAField) {
  const fs::path cfg = write_config("ok.textproto", valid_config());
  const fs::path out = dir_ / "run";
  const Result r = run("run " + cfg.string() + " --out " + out.string() +
                       " --set duration_s=1 --set site[lab].link.forward.delay_s=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_summary(out / "summary.json").steps(), 1025);
  EXPECT_NE(slurp(out / "config.textproto").find("duration_s: 1"), std::string::npos);
}

struct BadConfig {
  const char* label;
  std::string from;  // text replaced in the valid config
  std::string to;
  const char* expected;  // must appear in the one error line
};

// gtest prints a parameter with this (--gtest_list_tests, failures): the case, not its bytes.
void PrintTo(const BadConfig& bad, std::ostream* os) {
  *os << bad.label;
}

class CliBadConfig : public Cli, public ::testing::WithParamInterface<BadConfig> {};

TEST_P(CliBadConfig, RejectedWithOneLineNamingTheFieldAndNothingWritten) {
  const BadConfig& bad = GetParam();
  std::string text = valid_config();
  const auto at = text.find(bad.from);
  ASSERT_NE(at, std::string::npos) << bad.from;
  text.replace(at, bad.from.size(), bad.to);
  const fs::path cfg = write_config("bad.textproto", text);
  const fs::path out = dir_ / "run";
  const Result r = run("run " + cfg.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << bad.label;
  // One clear line on stderr, naming the field.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(bad.expected), std::string::npos) << bad.label << ": " << r.err;
  // Nothing written but the log.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(out)) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_EQ(files, std::vector<std::string>{"run.log"}) << bad.label;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadConfig,
    ::testing::Values(BadConfig{"missing field", "  dofs: 2\n", "", "structure.dofs"},
                      BadConfig{"wrong matrix size", "mass_kg: [2701, 0, 0, 2701]", "mass_kg: [2701, 0, 2701]",
                                "structure.mass_kg"},
                      BadConfig{"mass not symmetric", "mass_kg: [2701, 0, 0, 2701]", "mass_kg: [2701, 5, 0, 2701]",
                                "structure.mass_kg"},
                      BadConfig{"mass not positive definite", "mass_kg: [2701, 0, 0, 2701]",
                                "mass_kg: [2701, 0, 0, -2701]", "structure.mass_kg"},
                      BadConfig{"unknown key", "  dofs: 2\n", "  dofs: 2\n  floors: 2\n", "floors"},
                      BadConfig{"influence size", "influence: [-1, 0]", "influence: [-1, 0, 0]", "influence"},
                      BadConfig{"missing ground-motion file", "synthetic { seed: 3 duration_s: 2 }",
                                "record { path: \"no_such_record.dat\" unit: G }", "no_such_record.dat"}),
    [](const ::testing::TestParamInfo<BadConfig>& p) { return test::camel_case(p.param.label); });

TEST_F(Cli, MalformedRecordNamesItsLine) {
  std::ofstream(dir_ / "bad.dat") << "0.00 0.1\n0.02 0.2\n0.04 zzz\n";
  std::string text = valid_config();
  text.replace(text.find("synthetic { seed: 3 duration_s: 2 }"), 36, "record { path: \"bad.dat\" unit: G }");
  const fs::path cfg = write_config("bad.textproto", text);
  const Result r = run("run " + cfg.string() + " --out " + (dir_ / "run").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.dat:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ground_motion"), std::string::npos) << r.err;
}

TEST_F(Cli, UnknownOptionAndMissingConfigAreUsageErrors) {
  EXPECT_EQ(run("run --frobnicate").exit_code, 2);
  EXPECT_EQ(run("run").exit_code, 2);
  EXPECT_EQ(run("fly x").exit_code, 2);
  const Result missing = run("run " + (dir_ / "absent.textproto").string() + " --out " + (dir_ / "run").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("absent.textproto"), std::string::npos);
}

// Every executable, with every option it takes: the test's list is the documented interface.
struct Tool {
  const char* program;
  std::set<std::string> options;
};

const std::vector<Tool>& tools() {
  static const std::vector<Tool> kTools{
      {"rths-numerical", {"realtime",    "out",          "plants",   "first-seed", "noise-per-run", "jobs", "steps",
                          "share",       "storeys",      "bays",     "name",       "ground-motion", "set",  "console",
                          "console-key", "telemetry-hz", "no-plots", "dof",        "quiet",         "help", "version"}},
      {"rths-physical",
       {"site", "listen", "out", "set", "wait", "console", "console-key", "telemetry-hz", "quiet", "help", "version"}},
      {"rths-relay",
       {"site", "listen", "to", "set", "out", "idle-exit", "spin-us", "console", "console-key", "telemetry-hz", "quiet",
        "help", "version"}},
      {"rths-target",
       {"site", "listen", "peer", "rate", "watchdog-s", "duration-s", "realtime-priority", "out", "set", "console",
        "console-key", "telemetry-hz", "help", "version"}},
      {"rths-console",
       {"listen", "telemetry", "key", "token", "allow-host", "request-timeout-s", "max-streams",
        "max-streams-per-client", "max-connections", "max-nodes", "web", "replay", "quiet", "help", "version"}},
      {"rths-study", {"out", "jobs", "shard", "quiet", "help", "version"}},
      {"rths-bench-loop",
       {"rate", "seconds", "spin-us", "priority", "lock", "cpu", "links", "shared-socket", "help", "version"}},
  };
  return kTools;
}

// The long names in the Options section of a help text: its rows start "  -" (continuation lines are
// indented further).
std::set<std::string> options_in_help(const std::string& help) {
  std::set<std::string> names;
  const auto start = help.find("\nOptions:\n");
  if (start == std::string::npos) {
    return names;
  }
  std::istringstream in(help.substr(start + 10));
  for (std::string line; std::getline(in, line) && !line.empty();) {
    const auto dashes = line.find("--");
    if (line.starts_with("  -") && dashes != std::string::npos) {
      const auto end = line.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-", dashes + 2);
      names.insert(line.substr(dashes + 2, end - dashes - 2));
    }
  }
  return names;
}

TEST_F(Cli, EveryExecutablePrintsTheProjectVersion) {
  for (const Tool& tool : tools()) {
    test::Process p(tool.program, {"--version"}, dir_ / tool.program);
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), 0) << tool.program;
    EXPECT_EQ(p.out(), std::string(tool.program) + " " + RTHS_PROJECT_VERSION + "\n") << tool.program;
    EXPECT_EQ(p.err(), "") << tool.program;
  }
}

// --help exits 0 and its Options section names exactly the options of the list; every option it names
// is accepted (the parser does not call it unknown). The help is made from the parser's declarations,
// which refuse an option without help text, so an option added without help fails here.
TEST_F(Cli, EveryExecutableHelpDescribesEveryOptionItAccepts) {
  for (const Tool& tool : tools()) {
    test::Process help(tool.program, {"--help"}, dir_ / tool.program);
    if (help.wait(std::chrono::seconds(10)) != 0) {
      ADD_FAILURE() << tool.program << " --help failed: " << help.err();
      continue;
    }
    const std::string text = help.out();
    EXPECT_EQ(options_in_help(text), tool.options) << tool.program << "\n" << text;
    EXPECT_NE(text.find("Usage:\n  " + std::string(tool.program)), std::string::npos) << text;
    EXPECT_NE(text.find("Exit codes"), std::string::npos) << tool.program;
    for (const auto& name : tool.options) {
      if (name == "help" || name == "version") continue;
      // With a stray operand, so that no probe is a valid command line (rths-bench-loop --lock would run).
      test::Process probe(tool.program, {"--" + name, "x"}, dir_ / (std::string(tool.program) + "-" + name));
      EXPECT_EQ(probe.wait(std::chrono::seconds(10)), 2) << tool.program << " --" << name;
      EXPECT_EQ(probe.err().find("unknown option"), std::string::npos) << tool.program << ": " << probe.err();
    }
  }
}

// Synopses: lines that start with "rths-" (after the indentation of a usage section), each joined
// with the lines indented below it that continue it ("[--idle-exit SECONDS] ..."), blanks collapsed.
std::set<std::string> synopses(const std::string& text) {
  std::set<std::string> found;
  std::string current;
  const auto flush = [&] {
    if (!current.empty()) found.insert(current);
    current.clear();
  };
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) {
      flush();
      continue;
    }
    const std::string rest = line.substr(first);
    if (rest.starts_with("rths-")) {
      flush();
      current = rest;
    } else if (!current.empty() && first > 2 && (rest.starts_with("[") || rest.starts_with("--"))) {
      current += " " + rest;
    } else {
      flush();
    }
  }
  flush();
  std::set<std::string> collapsed;
  for (const auto& s : found) {
    std::string c;
    for (const char ch : s) {
      if (ch != ' ' || (!c.empty() && c.back() != ' ')) c += ch;
    }
    collapsed.insert(c);
  }
  return collapsed;
}

// The usage blocks of docs/usage.md, the page of every executable's command lines, hold every usage
// line of every executable's --help, so that no command or option goes undocumented there.
TEST_F(Cli, UsagePageShowsTheUsageOfEveryCommand) {
  const std::set<std::string> usage_page = synopses(slurp(test::source_dir() / "docs" / "usage.md"));
  for (const Tool& tool : tools()) {
    test::Process help(tool.program, {"--help"}, dir_ / tool.program);
    ASSERT_EQ(help.wait(std::chrono::seconds(10)), 0) << tool.program;
    const std::string text = help.out();
    const auto usage = text.find("Usage:\n");
    ASSERT_NE(usage, std::string::npos) << text;
    const std::set<std::string> lines = synopses(text.substr(usage + 7, text.find("\n\n", usage) - usage - 7));
    EXPECT_GE(lines.size(), 2U) << tool.program;
    for (const auto& line : lines) {
      EXPECT_TRUE(usage_page.contains(line)) << "docs/usage.md has no usage line\n  " << line;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The docs' command lines against the programs: every rths executable, command and --option that
// README.md and docs/*.md show in a command exists in that program's --help.

// What a program's --help declares: per command ("" for a program without commands) the options of
// its usage lines.
std::map<std::string, std::set<std::string>> declared_options(const std::string& program, const std::string& help) {
  std::map<std::string, std::set<std::string>> out;
  const auto usage = help.find("Usage:\n");
  const auto end = help.find("\n\n", usage);
  for (const std::string& line : synopses(help.substr(usage + 7, end - usage - 7))) {
    std::istringstream words(line);
    std::string word;
    words >> word;  // the program
    if (word != program || !(words >> word) || word.starts_with("--help")) continue;
    const bool command =
        std::all_of(word.begin(), word.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
    std::set<std::string>& options = out[command ? word : std::string()];
    for (std::string w = word; !w.empty() || (words >> w);) {
      const auto dashes = w.find("--");
      if (dashes != std::string::npos) {
        const auto stop = w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-", dashes + 2);
        options.insert(w.substr(dashes, stop == std::string::npos ? std::string::npos : stop - dashes));
      }
      w.clear();
    }
  }
  return out;
}

// The command lines a Markdown text shows, each with its line: every line of a fenced block (a line
// ending in a backslash joined with the next) and every inline code span, split at ;, &&, ||, | and &.
std::vector<std::pair<int, std::string>> shown_commands(const std::string& text) {
  std::vector<std::pair<int, std::string>> lines;
  std::istringstream in(text);
  bool fenced = false;
  std::string pending;
  int number = 0;
  int pending_from = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      if (pending.empty()) pending_from = number;
      if (!line.empty() && line.back() == '\\') {
        pending += line.substr(0, line.size() - 1) + " ";
        continue;
      }
      lines.emplace_back(pending_from, pending + line.substr(0, line.find(" #")));
      pending.clear();
      continue;
    }
    for (auto open = line.find('`'); open != std::string::npos; open = line.find('`', open)) {
      const auto close = line.find('`', open + 1);
      if (close == std::string::npos) break;
      lines.emplace_back(number, line.substr(open + 1, close - open - 1));
      open = close + 1;
    }
  }
  std::vector<std::pair<int, std::string>> commands;
  for (const auto& [at, line] : lines) {
    std::string split;  // each of ;, |, & (and so && and ||) as a line end
    for (const char c : line) split.push_back(c == ';' || c == '|' || c == '&' ? '\n' : c);
    std::istringstream parts(split);
    for (std::string part; std::getline(parts, part);) commands.emplace_back(at, part);
  }
  return commands;
}

TEST_F(Cli, EveryCommandLineTheDocsShowUsesWhatItsProgramDeclares) {
  std::map<std::string, std::map<std::string, std::set<std::string>>> programs;
  for (const char* program : {"rths-numerical", "rths-physical", "rths-relay", "rths-target", "rths-plan", "rths-study",
                              "rths-bench-loop", "rths-console"}) {
    test::Process help(program, {"--help"}, dir_ / program);
    ASSERT_EQ(help.wait(std::chrono::seconds(10)), 0) << program;
    programs[program] = declared_options(program, help.out());
    ASSERT_FALSE(programs[program].empty()) << program << "\n" << help.out();
  }
  std::vector<fs::path> files{test::source_dir() / "README.md"};
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  std::size_t checked = 0;
  std::string wrong;
  for (const fs::path& file : files) {
    for (const auto& [line, command] : shown_commands(slurp(file))) {
      std::istringstream words(command);
      std::string word;
      // A program comes after a prompt, variables set for it, sudo, or a folder (build/bin/).
      while (words >> word && (word == "$" || word == "sudo" || word.find('=') != std::string::npos)) {
      }
      const std::string program = word.substr(word.rfind('/') == std::string::npos ? 0 : word.rfind('/') + 1);
      const auto declared = programs.find(program);
      if (declared == programs.end()) continue;
      ++checked;
      const std::string where = fmt::format("\n{}:{}: {}", fs::relative(file, test::source_dir()).string(), line,
                                            command.substr(command.find_first_not_of(' ')));
      std::vector<std::string> rest;
      for (std::string w; words >> w;) rest.push_back(w);
      // Options a command line may use: its command's, or any command's when it names none
      // (prose such as `rths-physical --wait`).
      std::set<std::string> allowed{"--help", "--version"};
      const bool has_commands = !declared->second.contains("");
      if (has_commands && !rest.empty() && !rest.front().starts_with("-") && !rest.front().starts_with("[")) {
        const auto options = declared->second.find(rest.front());
        if (options == declared->second.end()) {
          wrong += fmt::format("{}\n  {} has no command {}", where, program, rest.front());
          continue;
        }
        allowed.insert(options->second.begin(), options->second.end());
      } else {
        for (const auto& [name, options] : declared->second) allowed.insert(options.begin(), options.end());
      }
      for (const std::string& w : rest) {
        const auto dashes = w.find("--");
        if (dashes == std::string::npos || dashes + 2 >= w.size() || w[dashes + 2] < 'a' || w[dashes + 2] > 'z' ||
            (dashes > 0 && w.find_first_not_of("[(", 0) < dashes)) {
          continue;
        }
        const auto stop = w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-", dashes + 2);
        const std::string option = w.substr(dashes, stop == std::string::npos ? std::string::npos : stop - dashes);
        if (!allowed.contains(option)) wrong += fmt::format("{}\n  {} does not take {} there", where, program, option);
      }
    }
  }
  EXPECT_GT(checked, 100U) << "the docs' command lines were not found";
  EXPECT_TRUE(wrong.empty()) << "command lines the programs' --help does not declare:" << wrong;
}

}  // namespace
}  // namespace rths::test_cli
