// A clone stands alone: no file of the repository reaches outside the clone for data (the folder
// the developers keep beside it is absent from a public clone, from CI and from an installed
// package), and every data file it ships is listed with its checksum (examples/data/SHA256SUMS,
// checked byte for byte by the ctest Data.FilesMatchTheirChecksums). The repository speaks of the
// product, never of the tracker's tickets, and every test has its ctest label.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths {
namespace {

namespace fs = std::filesystem;

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
      hits += "\n" + entry.path().filename().string() + ":" + h;
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

// GoogleTest's filter matching: `*` any run of characters, `?` one character, the rest literally.
bool matches_filter_pattern(std::string_view name, std::string_view pattern) {
  if (pattern.empty()) return name.empty();
  if (pattern.front() == '*') {
    for (std::size_t skip = 0; skip <= name.size(); ++skip) {
      if (matches_filter_pattern(name.substr(skip), pattern.substr(1))) return true;
    }
    return false;
  }
  return !name.empty() && (pattern.front() == '?' || pattern.front() == name.front()) &&
         matches_filter_pattern(name.substr(1), pattern.substr(1));
}

struct LabelLine {
  int number;
  std::string label;
  std::string pattern;
  std::string alone;  // "alone" or empty
};

// tests/labels.txt, as tests/CMakeLists.txt reads it: lines starting with a letter, LABEL PATTERN
// and optionally `alone`.
std::vector<LabelLine> label_lines() {
  std::ifstream in(test::source_dir() / "tests" / "labels.txt");
  std::vector<LabelLine> lines;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || std::islower(static_cast<unsigned char>(line.front())) == 0) continue;
    std::istringstream fields(line);
    LabelLine l{number, "", "", ""};
    fields >> l.label >> l.pattern >> l.alone;
    lines.push_back(l);
  }
  return lines;
}

TEST(Repository, EveryTestHasExactlyOneLabel) {
  const std::vector<LabelLine> lines = label_lines();
  ASSERT_GT(lines.size(), 50U) << "tests/labels.txt was not read";
  const std::set<std::string> labels{"unit", "realtime", "netns", "container", "acceptance"};
  for (const LabelLine& l : lines) {
    EXPECT_TRUE(labels.contains(l.label)) << "tests/labels.txt:" << l.number << ": unknown label " << l.label;
    EXPECT_TRUE(l.alone.empty() || l.alone == "alone")
        << "tests/labels.txt:" << l.number << ": the third word may only be 'alone', not " << l.alone;
  }
  std::map<int, int> used;  // line number -> tests it labels
  const ::testing::UnitTest& all = *::testing::UnitTest::GetInstance();
  int tests = 0;
  for (int s = 0; s < all.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *all.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const std::string name = std::string(suite.name()) + "." + suite.GetTestInfo(t)->name();
      ++tests;
      std::string matched;
      int matches = 0;
      for (const LabelLine& l : lines) {
        if (!matches_filter_pattern(name, l.pattern)) continue;
        matched += fmt::format(" {} (line {})", l.label, l.number);
        ++matches;
        ++used[l.number];
      }
      EXPECT_EQ(matches, 1) << name << " must match exactly one line of tests/labels.txt; it matches"
                            << (matched.empty() ? " none" : matched);
    }
  }
  EXPECT_GT(tests, 400);
  // A line that labels nothing is a test that was renamed or removed.
  for (const LabelLine& l : lines) {
    EXPECT_GT(used[l.number], 0) << "tests/labels.txt:" << l.number << ": " << l.pattern << " matches no test";
  }
}

TEST(Repository, FilterPatternsMatchAsGoogleTestDoes) {
  EXPECT_TRUE(matches_filter_pattern("Relay.ModelError", "Relay.*"));
  EXPECT_FALSE(matches_filter_pattern("Relay.ModelError", "Realtime.*"));
  EXPECT_FALSE(matches_filter_pattern("BadInputs/Campaign.RateZero", "Campaign.*"));  // the whole name
  EXPECT_TRUE(matches_filter_pattern("Recording.KilledSiteLeaves", "Recording.Killed*"));
  EXPECT_TRUE(matches_filter_pattern("A.Bc", "A.B?"));
  EXPECT_FALSE(matches_filter_pattern("A.Bcd", "A.B?"));
  EXPECT_TRUE(matches_filter_pattern("A.B", "*"));
}

}  // namespace
}  // namespace rths
