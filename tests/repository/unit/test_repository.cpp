// A clone stands alone: no file of the repository reaches outside the clone for data (the folder
// the developers keep beside it is absent from a public clone, from CI and from an installed
// package), and every data file it ships is listed with its checksum (examples/data/SHA256SUMS,
// checked byte for byte by the ctest Data.FilesMatchTheirChecksums). The repository speaks of the
// product, never of the tracker's tickets, and every test is registered with the label of its folder.
#include <gtest/gtest.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_repository {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;

// Spelled in pieces so that this file does not match itself: the developers' folder beside the
// clone (by a relative path or its variable in the build and container files) and machine paths.
std::vector<std::string> forbidden_patterns() {
  return {std::string("..") + "/shared", std::string("/") + "shared/", std::string("RTHS_") + "SHARED",
          std::string("/") + "work/"};
}

// Top-level entries that are not the repository's content: git's own, and what .gitignore keeps
// out (build folders, run folders, caches; node_modules below, npm's packages).
bool outside_the_repository(const fs::path& top_level_entry) {
  const std::string name = top_level_entry.filename().string();
  return name == ".git" || name.starts_with("build") || name == "out" || name == "runs" || name == ".cache";
}

std::vector<fs::path> repository_files() {
  std::vector<fs::path> files;
  for (const auto& top : fs::directory_iterator(test::source_dir())) {
    if (outside_the_repository(top.path())) continue;
    if (top.is_regular_file()) {
      files.push_back(top.path());
    } else if (top.is_directory()) {
      for (auto it = fs::recursive_directory_iterator(top.path()); it != fs::recursive_directory_iterator(); ++it) {
        if (it->is_directory() && it->path().filename() == "node_modules") {
          it.disable_recursion_pending();
        } else if (it->is_regular_file()) {
          files.push_back(it->path());
        }
      }
    }
  }
  return files;
}

TEST(Repository, NothingReadsOutsideTheClone) {
  const std::vector<std::string> patterns = forbidden_patterns();
  std::string hits;
  const std::vector<fs::path> files = repository_files();
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      for (const std::string& pattern : patterns) {
        if (line.find(pattern) != std::string::npos) {
          hits += fmt::format("\n{}:{}: `{}` in: {}", fs::relative(file, test::source_dir()).string(), number, pattern,
                              line);
        }
      }
    }
  }
  // The walk saw the repository (a wrong source folder would pass vacuously).
  EXPECT_GT(files.size(), 100U);
  EXPECT_TRUE(hits.empty()) << "files that reach outside the clone (use examples/data):" << hits;
}

TEST(Repository, EveryDataFileHasAChecksum) {
  // SHA256SUMS lines: "<64 hex digits>  <path relative to examples/data>".
  const fs::path data = test::data_dir();
  std::ifstream sums(data / "SHA256SUMS");
  ASSERT_TRUE(sums) << data / "SHA256SUMS";
  std::set<std::string> listed;
  std::string line;
  for (int number = 1; std::getline(sums, line); ++number) {
    ASSERT_GT(line.size(), 66U) << "SHA256SUMS:" << number;
    EXPECT_EQ(line.find_first_not_of("0123456789abcdef"), 64U) << "SHA256SUMS:" << number;
    EXPECT_EQ(line.substr(64, 2), "  ") << "SHA256SUMS:" << number;
    listed.insert(line.substr(66));
  }
  // Every file but the descriptions (README, LICENSE), git's attributes and the list itself is data
  // and is listed.
  std::size_t data_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(data)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name == "SHA256SUMS" || name == "README.md" || name == "LICENSE" ||
        name == ".gitattributes") {
      continue;
    }
    ++data_files;
    EXPECT_TRUE(listed.contains(fs::relative(entry.path(), data).string()))
        << fs::relative(entry.path(), data).string() << " is not in examples/data/SHA256SUMS";
  }
  for (const std::string& file : listed) {
    EXPECT_TRUE(fs::is_regular_file(data / file)) << "SHA256SUMS lists " << file << ", which is not there";
  }
  EXPECT_GE(data_files, 2U);  // El Centro 1940 NS and Kobe 1995 at least
}

// Text that points at the tracker instead of saying what a thing is: a ticket by number ("issue"
// and a number, "(#" and a number), by possessive, or as "the ... issue". Matched on lower-cased
// lines that hold "issue" or "#": a regex over every byte of the data files would take seconds.
const std::regex& ticket_reference() {
  static const std::regex pattern(
      R"(\bissues?\s*#?\s*[0-9]|\bissue's|\bthe\s+([a-z0-9-]+\s+){0,2}issue\b|\bissue\s+"|\(#[0-9]+\)|)"
      R"(\b(fixes|closes|resolves|see)\s+#[0-9]+)");
  return pattern;
}

TEST(Repository, NoTextRefersToTicketsOfTheTracker) {
  // LICENSE is the Apache text ("issue tracking systems").
  const std::set<std::string> exempt{"LICENSE"};
  std::string hits;
  for (const fs::path& file : repository_files()) {
    const std::string relative = fs::relative(file, test::source_dir()).string();
    if (exempt.contains(relative)) continue;
    std::ifstream in(file, std::ios::binary);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::transform(line.begin(), line.end(), line.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (line.find("issue") == std::string::npos && line.find('#') == std::string::npos) continue;
      if (std::regex_search(line, ticket_reference())) hits += fmt::format("\n{}:{}: {}", relative, number, line);
    }
  }
  EXPECT_TRUE(hits.empty()) << "say what the thing is, not which ticket asked for it:" << hits;
}

// How many tests the suite holds is what ctest counts (`ctest -N`), not a number written into the
// docs: "539 tests" stayed in the README while the suite grew to 999. The README states no count; the
// docs' tables that record a run of a named commit (its time and its count then) may.
std::string test_counts_in_prose(const std::string& text, bool tables_allowed) {
  static const std::regex count(R"(\b\d[\d,]*\s+(unit |realtime |acceptance |GoogleTest |ctest )?tests\b)");
  std::string hits;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (tables_allowed && line.starts_with("|")) continue;
    if (std::regex_search(line, count)) hits += fmt::format("\n  line {}: {}", number, line);
  }
  return hits;
}

TEST(Repository, NoDocumentWritesDownHowManyTestsTheSuiteHas) {
  std::string hits;
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "docs")) {
    if (entry.path().extension() != ".md") continue;
    if (std::string h = test_counts_in_prose(test::slurp(entry.path()), true); !h.empty()) {
      hits += fmt::format("\n{}:{}", entry.path().filename().string(), h);
    }
  }
  if (std::string h = test_counts_in_prose(test::slurp(test::source_dir() / "README.md"), false); !h.empty()) {
    hits += "\nREADME.md:" + h;
  }
  EXPECT_TRUE(hits.empty()) << "a count of tests goes stale; say `ctest -N` instead:" << hits;
  // The pattern finds what it must, and a table row of a recorded run is left alone in the docs.
  EXPECT_FALSE(test_counts_in_prose("runs `ctest` (539 tests, about 7 minutes)", false).empty());
  EXPECT_FALSE(test_counts_in_prose("the suite's 1,204 unit tests", false).empty());
  EXPECT_TRUE(test_counts_in_prose("| build and test | 667 s (999 tests) |", true).empty());
  EXPECT_TRUE(test_counts_in_prose("20 plants, 3 runs, the tests of MarthsCampaign", false).empty());
}

TEST(Repository, TheTicketPatternFindsWhatItMustAndOnlyThat) {
  // Split literals, so that this file does not hold what it forbids.
  for (const char* reference : {"(iss"
                                "ue 4 item 2)",
                                "iss"
                                "ue #5",
                                "the real-time iss"
                                "ue's acceptance",
                                "the core iss"
                                "ue",
                                "the actuator-control iss"
                                "ue",
                                "(iss"
                                "ue \"real-time loop\")",
                                "fixed (#"
                                "12)",
                                "see #"
                                "3"}) {
    EXPECT_TRUE(std::regex_search(std::string(reference), ticket_reference())) << reference;
  }
  for (const char* text : {"commands issued before it", "el centro array #9, 180", "// #include <x>", "a tissue sample",
                           "issues a command"}) {
    EXPECT_FALSE(std::regex_search(std::string(text), ticket_reference())) << text;
  }
}

// ---------------------------------------------------------------------------------------------
// Where the tests are and how ctest knows them (tests/CMakeLists.txt): each test file in
// tests/<module>/<tier>/ or tests/<module>/<tier>/serial/, each tier one test program, each test
// registered with ctest once, with its folder's tier as its label and RUN_SERIAL when in serial/.

const std::set<std::string>& tiers() {
  static const std::set<std::string> t{"unit", "realtime", "netns", "container", "acceptance"};
  return t;
}

// Where a test file stands under tests/ (a path relative to it).
struct TestFolder {
  std::string module;
  std::string tier;
  bool serial = false;
};

// The folder of `relative` (a test file's path under tests/); nullopt when it is in no
// <module>/<tier>/ or <module>/<tier>/serial/ folder of a known tier.
std::optional<TestFolder> test_folder_of(const std::string& relative) {
  static const std::regex path(R"(^([a-z_]+)/([a-z]+)/(serial/)?test_[a-z0-9_]+\.cpp$)");
  std::smatch m;
  if (!std::regex_match(relative, m, path) || !tiers().contains(m[2].str())) return std::nullopt;
  return TestFolder{m[1].str(), m[2].str(), m[3].matched};
}

// The test program of a tier's files (tests/CMakeLists.txt).
std::string program_of(const TestFolder& folder) {
  return "rths_" + folder.tier + (folder.serial ? "_serial" : "") + "_tests";
}

// Every test_*.cpp under tests/, by its path relative to tests/.
std::vector<std::string> test_files() {
  std::vector<std::string> files;
  const fs::path tests = test::source_dir() / "tests";
  for (const auto& entry : fs::recursive_directory_iterator(tests)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("test_") && name.ends_with(".cpp")) {
      files.push_back(fs::relative(entry.path(), tests).generic_string());
    }
  }
  return files;
}

TEST(Repository, EveryTestFileIsInAModuleAndTierFolder) {
  const std::vector<std::string> files = test_files();
  EXPECT_GT(files.size(), 80U) << "the walk did not see tests/";
  for (const std::string& file : files) {
    const std::optional<TestFolder> folder = test_folder_of(file);
    ASSERT_TRUE(folder) << "tests/" << file << ": a test file belongs in tests/<module>/<tier>/ or "
                        << "tests/<module>/<tier>/serial/, <tier> one of unit, realtime, netns, container, acceptance";
    // The module is a folder of the product (one with its own CMakeLists.txt) or the whole repository.
    EXPECT_TRUE(folder->module == "repository" ||
                (folder->module != "tests" && fs::exists(test::source_dir() / folder->module / "CMakeLists.txt")))
        << "tests/" << file << ": " << folder->module
        << " is no top-level folder of the product (nor `repository`, for rules over the whole of it)";
  }
  EXPECT_FALSE(test_folder_of("common/units/test_a.cpp"));
  EXPECT_FALSE(test_folder_of("test_a.cpp"));
  EXPECT_FALSE(test_folder_of("common/unit/alone/test_a.cpp"));
  EXPECT_TRUE(test_folder_of("common/realtime/serial/test_a.cpp")->serial);
}

// What is wrong with the namespaces of test file STEM.cpp whose text is TEXT: its first problem, as
// "STEM.cpp:LINE: WHAT", or "" when there is none. A test program compiles its files in unity batches
// (tests/CMakeLists.txt), so each file keeps its code in a namespace of its own name, test_STEM
// (alone or inside rths::…); a helper outside it would clash with a neighbour's of the same name, or
// serve a neighbour that forgot its own. A macro knows no namespace: a test file defines none. The
// namespaces are followed by their closing comments, which clang-format writes for every namespace
// longer than one line.
std::string namespace_problem(const std::string& stem, const std::string& text) {
  static const std::regex kOpening(R"(^namespace ([A-Za-z0-9_:]+) \{$)");
  static const std::regex kMacro(R"(^\s*#\s*define\b)");
  const std::regex own("^((rths::)([a-z0-9_]+::)*)?" + stem + "$");
  std::istringstream lines(text);
  std::ostringstream problem;
  std::string line;
  int depth = 0;  // namespaces open around the line, the file's own at depth 1
  bool opened = false;
  for (int number = 1; std::getline(lines, line) && problem.tellp() == 0; ++number) {
    const auto at = [&]() -> std::ostringstream& {
      problem << stem << ".cpp:" << number << ": ";
      return problem;
    };
    std::smatch m;
    if (std::regex_search(line, kMacro)) {
      at() << "a macro, which no namespace holds";
    } else if (line == "namespace {") {
      if (depth == 0) at() << "an anonymous namespace outside the namespace " << stem;
      ++depth;
    } else if (std::regex_match(line, m, kOpening)) {
      if (depth == 0 && !std::regex_match(m[1].str(), own)) at() << "namespace " << m[1] << " is not " << stem;
      opened = true;
      ++depth;
    } else if (line.starts_with("}  // namespace")) {
      --depth;
    } else if (depth == 0 && !line.empty() && !line.starts_with("#include") && !line.starts_with("//")) {
      at() << "code outside the namespace " << stem;
    }
  }
  if (problem.tellp() == 0 && !opened) problem << stem << ".cpp: no namespace " << stem;
  return problem.str();
}

TEST(Repository, EveryTestFileKeepsItsCodeInANamespaceOfItsName) {
  std::map<std::string, std::set<std::string>> stems;  // by test program
  for (const std::string& file : test_files()) {
    const std::string stem = fs::path(file).stem().string();
    EXPECT_EQ(namespace_problem(stem, test::slurp(test::source_dir() / "tests" / file)), "") << "tests/" << file;
    // Two files of one name in one program would share their namespace.
    if (const std::optional<TestFolder> folder = test_folder_of(file)) {
      EXPECT_TRUE(stems[program_of(*folder)].insert(stem).second)
          << "tests/" << file << ": another file of " << program_of(*folder) << " has its name";
    }
  }
  // The rule on made-up files: each that breaks it is refused for what it breaks, on its line.
  const std::string ok =
      "#include <a>\n// A test.\n\nnamespace rths::test_a {\nnamespace {\nint x;\n}  // namespace\n"
      "}  // namespace rths::test_a\n";
  EXPECT_EQ(namespace_problem("test_a", ok), "");
  EXPECT_EQ(namespace_problem("test_a", "namespace test_a {\nnamespace {\n}  // namespace\n}  // namespace test_a\n"),
            "");
  EXPECT_EQ(namespace_problem("test_b", ok), "test_b.cpp:4: namespace rths::test_a is not test_b");
  EXPECT_EQ(namespace_problem("test_a", "namespace rths {\nint x;\n}  // namespace rths\n"),
            "test_a.cpp:1: namespace rths is not test_a");
  EXPECT_EQ(namespace_problem("test_a", "namespace test_a {\n}  // namespace test_a\nnamespace {\n"),
            "test_a.cpp:3: an anonymous namespace outside the namespace test_a");
  EXPECT_EQ(namespace_problem("test_a", ok + "int y;\n"), "test_a.cpp:9: code outside the namespace test_a");
  EXPECT_EQ(namespace_problem("test_a", "using namespace std;\n" + ok),
            "test_a.cpp:1: code outside the namespace test_a");
  EXPECT_EQ(namespace_problem("test_a", ok + "::rths::X y;\n"), "test_a.cpp:9: code outside the namespace test_a");
  EXPECT_EQ(namespace_problem("test_a", "namespace test_a {\n#define kDt 1\n}  // namespace test_a\n"),
            "test_a.cpp:2: a macro, which no namespace holds");
  EXPECT_EQ(namespace_problem("test_a", "#include <a>\n"), "test_a.cpp: no namespace test_a");
}

// A JSON document as protobuf's Struct: ctest's and GoogleTest's listings.
pb::Struct json_of(const std::string& text, const std::string& what) {
  pb::Struct document;
  const auto status = pb::util::JsonStringToMessage(text, &document);
  EXPECT_TRUE(status.ok()) << what << ": " << status.ToString();
  return document;
}

// A test as ctest has it registered: the program its command runs, its labels, RUN_SERIAL.
struct Registration {
  std::string program;
  std::set<std::string> labels;
  bool serial = false;
};

// Every test of the build folder, by name (`ctest --show-only=json-v1`). ctest writes a log into the
// folder it reads, also with --show-only, and would replace the one the suite's own ctest is writing,
// whose skip reasons deploy/skip-reasons.sh reads: it reads a copy of the build's CTestTestfile.cmake
// tree instead (the test programs' lists are included from the build by absolute path).
std::multimap<std::string, Registration> registrations(const fs::path& scratch) {
  const fs::path build(RTHS_BUILD_DIR);
  const fs::path tree = scratch / "registered";
  for (const auto& entry : fs::recursive_directory_iterator(build)) {
    if (entry.is_regular_file() && entry.path().filename() == "CTestTestfile.cmake") {
      const fs::path to = tree / fs::relative(entry.path(), build);
      fs::create_directories(to.parent_path());
      fs::copy_file(entry.path(), to, fs::copy_options::overwrite_existing);
    }
  }
  test::Process ctest(RTHS_CTEST_COMMAND, {"--test-dir", tree.string(), "--show-only=json-v1"}, scratch / "ctest");
  EXPECT_EQ(ctest.wait(std::chrono::seconds(60)), 0) << ctest.err();
  const pb::Struct document = json_of(ctest.out(), "ctest --show-only=json-v1");
  std::multimap<std::string, Registration> tests;
  if (!document.fields().contains("tests")) return tests;
  for (const pb::Value& test : document.fields().at("tests").list_value().values()) {
    const auto& fields = test.struct_value().fields();
    Registration r;
    if (fields.contains("command") && fields.at("command").list_value().values_size() > 0) {
      r.program = fields.at("command").list_value().values(0).string_value();
    }
    if (fields.contains("properties")) {
      for (const pb::Value& property : fields.at("properties").list_value().values()) {
        const auto& p = property.struct_value().fields();
        const std::string& name = p.at("name").string_value();
        if (name == "LABELS") {
          for (const pb::Value& label : p.at("value").list_value().values()) r.labels.insert(label.string_value());
        } else if (name == "RUN_SERIAL") {
          r.serial = p.at("value").bool_value();
        }
      }
    }
    tests.emplace(fields.at("name").string_value(), r);
  }
  return tests;
}

// The tests a test program holds (SUITE.TEST, as ctest names them), each with the file it is
// written in, relative to tests/.
std::map<std::string, std::string> tests_of(const fs::path& program, const fs::path& scratch) {
  const fs::path listing = scratch / (program.filename().string() + ".json");
  test::Process list(program.string(), {"--gtest_list_tests", "--gtest_output=json:" + listing.string()},
                     scratch / program.filename());
  EXPECT_EQ(list.wait(std::chrono::seconds(60)), 0) << list.err();
  const pb::Struct document = json_of(test::slurp(listing), listing.string());
  std::map<std::string, std::string> tests;
  if (!document.fields().contains("testsuites")) return tests;
  for (const pb::Value& suite : document.fields().at("testsuites").list_value().values()) {
    const auto& s = suite.struct_value().fields();
    for (const pb::Value& test : s.at("testsuite").list_value().values()) {
      const auto& t = test.struct_value().fields();
      // The file as the compiler was given it: absolute, or relative to the build folder (ccache's
      // base_dir); either way its part from the repository's tests/ on.
      const std::string file = "/" + t.at("file").string_value();
      const std::size_t at = file.rfind("/tests/");
      tests[s.at("name").string_value() + "." + t.at("name").string_value()] =
          at == std::string::npos ? file : file.substr(at + 7);
    }
  }
  return tests;
}

TEST(Repository, EveryTestIsRegisteredOnceWithTheLabelOfItsFolder) {
  const test::ScratchFolder scratch("rths_registration");
  std::set<std::string> programs;  // the test programs the folders make
  for (const std::string& file : test_files()) {
    if (const std::optional<TestFolder> folder = test_folder_of(file)) programs.insert(program_of(*folder));
  }
  ASSERT_TRUE(programs.contains("rths_unit_tests"));
  const std::multimap<std::string, Registration> registered = registrations(scratch.path());
  ASSERT_FALSE(registered.empty()) << "ctest found no test in " << RTHS_BUILD_DIR;
  int checked = 0;
  for (const std::string& name : programs) {
    const fs::path program = test::bin_dir() / name;
    if (!fs::exists(program)) {
      // A stage that runs some tiers builds only their programs (deploy/check-sanitizers.sh); ctest
      // then holds the program's place with NAME_NOT_BUILT, which fails where it is run.
      std::printf("[   note   ] %s is not built here: its tests are not checked\n", name.c_str());
      EXPECT_EQ(registered.count(name + "_NOT_BUILT"), 1U) << name;
      continue;
    }
    const std::map<std::string, std::string> listed_tests = tests_of(program, scratch.path());
    for (const auto& listed : listed_tests) {
      const std::string& test = listed.first;
      ++checked;
      const std::optional<TestFolder> from = test_folder_of(listed.second);
      ASSERT_TRUE(from) << test << " is written in tests/" << listed.second << ", in no <module>/<tier> folder";
      EXPECT_EQ(program_of(*from), name) << test << " of tests/" << listed.second << " is compiled into " << name;
      const auto [first, last] = registered.equal_range(test);
      ASSERT_EQ(std::distance(first, last), 1) << test << " of " << name << " must be registered with ctest once";
      const Registration& r = first->second;
      EXPECT_EQ(fs::path(r.program).filename().string(), name) << test;
      EXPECT_EQ(r.labels, std::set<std::string>{from->tier}) << test << " of tests/" << listed.second;
      EXPECT_EQ(r.serial, from->serial) << test << " of tests/" << listed.second << ": RUN_SERIAL";
    }
    // Nothing registered for the program that it does not hold.
    for (const auto& r : registered) {
      if (fs::path(r.second.program).filename() == name) {
        EXPECT_TRUE(listed_tests.contains(r.first)) << r.first << " is registered for " << name << ", which lacks it";
      }
    }
  }
  EXPECT_GT(checked, 400);
}

// CI keeps only the tail of a long run: the table of stages closes it, and a failed stage's last
// lines (where ctest names its failed tests, a skip its reason, a compiler its error) come just
// before the table, as many as STAGE_TAIL_LINES says, and only the failed stage's.
TEST(CiStages, AFailedStagesLastLinesComeBeforeTheTable) {
  test::ScratchFolder scratch("ci_stages");
  const std::string script = fmt::format(
      "unset RTHS_STAGE; STAGE_TAIL_LINES=2; source '{}'; "
      "stage fine echo fine-output; "
      "stage broken bash -c 'echo one; echo two; echo three; echo the-reason >&2; exit 3'; echo \"returned $?\"; "
      "echo '== stages'; stage_summary",
      (test::source_dir() / "deploy/lib/stage.sh").string());
  test::Process run("/bin/bash", {"-c", script}, scratch.path() / "run");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  const std::string out = run.out();
  EXPECT_NE(out.find("returned 3\n"), std::string::npos) << out;
  const std::size_t end = out.find("== stages\n");
  ASSERT_NE(end, std::string::npos) << out;
  const std::string closing = out.substr(end);
  EXPECT_NE(closing.find("== why broken failed: its last 2 lines\nthree\nthe-reason\n"), std::string::npos) << out;
  EXPECT_EQ(closing.find("two"), std::string::npos) << out;
  EXPECT_EQ(closing.find("fine-output"), std::string::npos) << out;
  EXPECT_EQ(closing.find("why fine"), std::string::npos) << out;
  EXPECT_LT(closing.find("the-reason"), closing.find("broken                       FAILED (exit 3)")) << out;
}

// A stage that is a function of the script runs in the script's shell, where it can wait for the
// script's own background job (deploy/test.sh waits so for the container base image); a pipeline's
// subshell could not ("not a child of this shell", exit 127).
TEST(CiStages, AFunctionStageRunsInTheScriptsShell) {
  test::ScratchFolder scratch("ci_stage_function");
  const std::string script = fmt::format(
      R"(unset RTHS_STAGE; source '{}'; sleep 0.1 & job=$!; waiter() {{ wait "$job"; }}; stage waits waiter; echo "waited $?")",
      (test::source_dir() / "deploy/lib/stage.sh").string());
  test::Process run("/bin/bash", {"-c", script}, scratch.path() / "run");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  EXPECT_NE(run.out().find("waited 0\n"), std::string::npos) << run.out() << run.err();
}

// A script that is a stage of .ci/run and names its own stage the same (check-sanitizers.sh) prints
// the heading and the verdict once, the enclosing stage's; a stage of another name inside it keeps
// its own, and the inner command's exit status still reaches its caller.
TEST(CiStages, AStageInsideAStageOfItsNamePrintsOnce) {
  test::ScratchFolder scratch("ci_stage_nested");
  const std::string inner = fmt::format(
      R"(source '{}'; stage same bash -c 'echo inner-work; exit 3'; echo "inner returned $?"; stage other true)",
      (test::source_dir() / "deploy/lib/stage.sh").string());
  const fs::path inner_script = scratch.path() / "inner.sh";
  std::ofstream(inner_script) << inner << "\n";
  const std::string script =
      fmt::format(R"(unset RTHS_STAGE; source '{}'; stage same bash '{}'; echo "outer returned $?")",
                  (test::source_dir() / "deploy/lib/stage.sh").string(), inner_script.string());
  test::Process run("/bin/bash", {"-c", script}, scratch.path() / "run");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  const std::string out = run.out();
  const auto count = [&out](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("== same\n"), 1U) << out;
  EXPECT_EQ(count("== same: "), 1U) << out;
  EXPECT_EQ(count("== other\n"), 1U) << out;
  EXPECT_NE(out.find("inner-work\ninner returned 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("outer returned 0\n"), std::string::npos) << out;
}

// What .ci/run prints last when a stage failed (deploy/failure-digest.sh): a failed test's assertion
// with the lines after it, and the figures a real-time comparison prints; nothing of a test that passed.
TEST(CiStages, TheFailureDigestKeepsAFailedTestsAssertionAndFiguresAndNothingOfAPass) {
  test::ScratchFolder scratch("ci_failure_digest");
  const fs::path log = scratch.path() / "build/Testing/Temporary/LastTest.log";
  fs::create_directories(log.parent_path());
  std::ofstream(log) << R"(1/2 Testing: A.Passes
"A.Passes" start time: Nov 30 11:58 UTC
Output:
----------------------------------------------------------
/x/a.cpp:1: Failure
bridge: passed-test-figures
<end of output>
Test time =   0.01 sec
----------------------------------------------------------
Test Passed.
2/2 Testing: B.Fails
"B.Fails" start time: Nov 30 11:59 UTC
Output:
----------------------------------------------------------
[ RUN      ] B.Fails
held steps beyond the link's start: numerical node 3, site 60 of 10241
noise line
/x/b.cpp:42: Failure
Expected equality of these values:
  code
    Which is: 0
  kExitCompleted
target: 0 stroke clamps; watchdog tripped at t=12.6 s
[  FAILED  ] B.Fails (13000 ms)
<end of output>
Test time =  13.00 sec
----------------------------------------------------------
Test Failed.
)";
  test::Process run((test::source_dir() / "deploy/failure-digest.sh").string(), {(scratch.path() / "build").string()},
                    scratch.path() / "run");
  ASSERT_EQ(run.wait(std::chrono::seconds(30)), 0) << run.err();
  const std::string out = run.out();
  EXPECT_EQ(out.find("failed B.Fails:\n"), 0U) << out;
  EXPECT_NE(out.find("held steps beyond the link's start: numerical node 3, site 60"), std::string::npos) << out;
  EXPECT_NE(out.find("/x/b.cpp:42: Failure\n    Expected equality"), std::string::npos) << out;
  EXPECT_NE(out.find("    Which is: 0"), std::string::npos) << out;
  EXPECT_NE(out.find("watchdog tripped"), std::string::npos) << out;
  EXPECT_EQ(out.find("noise line"), std::string::npos) << out;
  EXPECT_EQ(out.find("[  FAILED  ]"), std::string::npos) << out;  // GoogleTest's marker ends a failure's lines
  EXPECT_EQ(out.find("A.Passes"), std::string::npos) << out;
  EXPECT_EQ(out.find("passed-test-figures"), std::string::npos) << out;
  EXPECT_EQ(out.find("a.cpp"), std::string::npos) << out;
}

// deploy/ holds what deploys (scripts, topologies, recipes, packaging): every executable's code lives
// with its domain (docs/architecture.md).
TEST(Repository, DeployHoldsNoCode) {
  for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() / "deploy")) {
    const std::string extension = entry.path().extension().string();
    EXPECT_FALSE(extension == ".cpp" || extension == ".hpp" || extension == ".h" || extension == ".cc")
        << entry.path().string();
  }
}

}  // namespace
}  // namespace rths::test_repository
