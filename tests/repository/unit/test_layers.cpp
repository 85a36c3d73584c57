// The folders' dependency order as docs/architecture.md §2 states it: every #include of the
// product's code goes to its own folder, one of its sub-libraries or a folder its row allows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace rths {
namespace {

namespace fs = std::filesystem;

struct Row {
  std::set<std::string> allowed;  // folders, as the table spells them (no trailing '/')
  bool all = false;
};

// The table's rows: "| `folder/` | role | dependency, dependency |".
std::map<std::string, Row> folder_table() {
  std::ifstream in(test::source_dir() / "docs" / "architecture.md");
  const std::regex row(R"(^\| `([a-z_/]+)/` \|.*\| ([^|]+) \|$)");
  std::map<std::string, Row> table;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    Row r;
    std::stringstream deps(m[2].str());
    for (std::string dep; std::getline(deps, dep, ',');) {
      dep.erase(0, dep.find_first_not_of(' '));
      dep.erase(dep.find_last_not_of(' ') + 1);
      if (dep == "all") r.all = true;
      if (dep != "—" && !dep.empty()) r.allowed.insert(dep);
    }
    table[m[1].str()] = r;
  }
  return table;
}

// The most specific folder of the table that holds `relative` (a path in the repository).
std::string folder_of(const std::map<std::string, Row>& table, const std::string& relative) {
  std::string best;
  for (const auto& [folder, row] : table) {
    if (relative.starts_with(folder + "/") && folder.size() > best.size()) best = folder;
  }
  return best;
}

// Where an include goes: a folder of the table, "proto" for generated messages, "" for a header
// beside the file (or the standard library and other packages, which <> includes are).
std::string target_of(const std::map<std::string, Row>& table, const std::string& header) {
  if (header.ends_with(".pb.h")) return "proto";
  static const std::map<std::string, std::string> kPublic{{"rths/common/", "common"},
                                                          {"rths/smith_predictor/", "smith_predictor"},
                                                          {"rths/node_physical/", "node_physical"},
                                                          {"rths/node_numerical/", "node_numerical"},
                                                          {"rths/console/", "console"}};
  for (const auto& [prefix, folder] : kPublic) {
    if (header.starts_with(prefix)) return folder;
  }
  if (header.starts_with("rths/")) return "deploy";  // the tools' libraries: rths/target, rths/study
  return folder_of(table, header);
}

// Whether code in `from` may include code in `to`: its own folder and sub-libraries, and what its
// row allows, transitively (a folder allowed brings its sub-libraries and what it may include).
bool allows(const std::map<std::string, Row>& table, const std::string& from, const std::string& to) {
  std::set<std::string> reached{from};
  std::vector<std::string> pending{from};
  while (!pending.empty()) {
    const std::string folder = pending.back();
    pending.pop_back();
    if (to.empty() || to == folder || to.starts_with(folder + "/")) return true;
    const auto row = table.find(folder);
    if (row == table.end()) continue;
    if (row->second.all) return true;
    for (const std::string& next : row->second.allowed) {
      if (reached.insert(next).second) pending.push_back(next);
    }
  }
  return false;
}

// Each .cpp and .hpp file under `folder` (a path in the repository), with its path in the repository.
void for_each_source(const std::string& folder, const std::function<void(const fs::path&, const std::string&)>& visit) {
  for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() / folder)) {
    const std::string extension = entry.path().extension().string();
    if (!entry.is_regular_file() || (extension != ".cpp" && extension != ".hpp")) continue;
    visit(entry.path(), fs::relative(entry.path(), test::source_dir()).generic_string());
  }
}

// Each #include "..." of a source file: its line number and the header.
void for_each_include(const fs::path& file, const std::function<void(int, const std::string&)>& visit) {
  static const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::ifstream in(file);
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    std::smatch m;
    if (std::regex_search(line, m, include)) visit(line_number, m[1].str());
  }
}

TEST(Layers, TheFolderTableHasTheProductsFoldersAndItsSubLibraries) {
  const auto table = folder_table();
  for (const char* folder :
       {"proto", "common", "common/ground_motions", "common/impairments", "common/dampings", "smith_predictor",
        "smith_predictor/interfaces", "smith_predictor/models", "node_physical", "node_physical/interfaces",
        "node_physical/controllers", "node_physical/drivers", "node_physical/setups", "node_physical/actuators",
        "node_numerical", "console", "deploy", "tests"}) {
    EXPECT_EQ(table.count(folder), 1U) << folder << " has no row in docs/architecture.md §2";
  }
  EXPECT_FALSE(allows(table, "node_physical/controllers", "node_physical")) << "a sub-library under its parent";
  EXPECT_TRUE(allows(table, "node_physical", "node_physical/controllers"));
  EXPECT_FALSE(allows(table, "smith_predictor/models", "smith_predictor")) << "a sub-library under its parent";
  EXPECT_TRUE(allows(table, "smith_predictor/models", "smith_predictor/interfaces"));
  EXPECT_FALSE(allows(table, "smith_predictor/interfaces", "smith_predictor/models"));
  EXPECT_FALSE(allows(table, "common", "node_physical/controllers"));
  EXPECT_FALSE(allows(table, "common", "node_physical/setups")) << "common asks the registry, never a setup kind";
  EXPECT_FALSE(allows(table, "node_physical/setups", "node_physical")) << "a sub-library under its parent";
  EXPECT_FALSE(allows(table, "node_physical", "node_numerical"));
}

TEST(Layers, EveryIncludeFollowsTheFolderTable) {
  const auto table = folder_table();
  int checked = 0;
  for (const auto& entry : table) {
    const std::string& folder = entry.first;  // not a structured binding: clang 14 cannot capture one
    if (entry.second.all || !fs::is_directory(test::source_dir() / folder)) continue;
    for_each_source(folder, [&](const fs::path& file, const std::string& relative) {
      if (folder_of(table, relative) != folder) return;  // a sub-library's file: checked under its row
      for_each_include(file, [&](int line_number, const std::string& header) {
        ++checked;
        const std::string to = target_of(table, header);
        EXPECT_TRUE(allows(table, folder, to))
            << relative << ":" << line_number << ": includes " << header << " of " << to << ", which the row of "
            << folder << " in docs/architecture.md §2 does not allow";
      });
    });
  }
  EXPECT_GT(checked, 300);  // the walk found the sources
}

// common/ is the base the components of its own families build on (the registry, the readers): it
// builds them through the registry and includes none of its sub-libraries, so that they stay
// components (docs/architecture.md §2).
TEST(Layers, CommonReachesItsComponentsThroughTheRegistryOnly) {
  const auto table = folder_table();
  int checked = 0;
  for_each_source("common", [&](const fs::path& file, const std::string& relative) {
    if (folder_of(table, relative) != "common") return;
    for_each_include(file, [&](int line_number, const std::string& header) {
      ++checked;
      EXPECT_FALSE(target_of(table, header).starts_with("common/"))
          << relative << ":" << line_number << ": includes " << header;
    });
  });
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace rths
