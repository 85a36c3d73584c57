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

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_layers {
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
  for (const char* folder : {"proto",
                             "common",
                             "common/core",
                             "common/dynamics",
                             "common/transport",
                             "common/metrics",
                             "common/realtime",
                             "common/config",
                             "common/protocol",
                             "common/records",
                             "common/program",
                             "common/ground_motions",
                             "common/impairments",
                             "common/dampings",
                             "smith_predictor",
                             "smith_predictor/interfaces",
                             "smith_predictor/models",
                             "smith_predictor/frame_model",
                             "smith_predictor/site_models",
                             "smith_predictor/parts",
                             "node_physical",
                             "node_physical/interfaces",
                             "node_physical/controllers",
                             "node_physical/drivers",
                             "node_physical/setups",
                             "node_physical/actuators",
                             "node_physical/plants",
                             "node_physical/site",
                             "node_physical/server",
                             "node_numerical",
                             "node_numerical/structure",
                             "node_numerical/integrators",
                             "node_numerical/engine",
                             "node_numerical/analysis",
                             "console",
                             "console/hub",
                             "console/server",
                             "deploy",
                             "tests"}) {
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
  EXPECT_FALSE(allows(table, "smith_predictor/frame_model", "smith_predictor/parts"));
  EXPECT_FALSE(allows(table, "smith_predictor/parts", "smith_predictor/site_models")) << "a part is handed its model";
  EXPECT_FALSE(allows(table, "smith_predictor/site_models", "smith_predictor/parts"));
  EXPECT_FALSE(allows(table, "node_physical/controllers", "smith_predictor/parts")) << "a component knows interfaces";
  EXPECT_FALSE(allows(table, "node_physical/plants", "node_physical/site")) << "a plant knows no interlock";
  EXPECT_FALSE(allows(table, "node_physical/site", "node_physical/server")) << "in-process sites run without it";
  EXPECT_TRUE(allows(table, "node_physical/server", "node_physical/plants"));
  EXPECT_FALSE(allows(table, "common/core", "common/config")) << "the base under what builds on it";
  EXPECT_FALSE(allows(table, "common/transport", "common/protocol")) << "links carry bytes, not packets";
  EXPECT_FALSE(allows(table, "common/config", "common/records"));
  EXPECT_FALSE(allows(table, "common/records", "common/program"));
  EXPECT_TRUE(allows(table, "common/program", "common/core"));
  EXPECT_FALSE(allows(table, "node_numerical/structure", "node_numerical/integrators"));
  EXPECT_FALSE(allows(table, "node_numerical/integrators", "node_numerical/engine"));
  EXPECT_FALSE(allows(table, "node_numerical/engine", "node_numerical/analysis"));
  EXPECT_FALSE(allows(table, "node_numerical/structure", "node_physical")) << "a structure knows no site";
}

// The folders of the executables' mains (docs/architecture.md §10's table).
std::set<std::string> main_folders() {
  std::istringstream lines(test::slurp(test::source_dir() / "docs" / "architecture.md"));
  const std::regex row(R"(^\| `rths-[a-z-]+` \| `([a-z_/]+)/[a-z_]+\.cpp` \|.*$)");
  std::set<std::string> folders;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) folders.insert(m[1].str());
  }
  return folders;
}

// The order is one: no folder a row allows reaches back to the row's folder. A tool's folder (the relay,
// the target emulator) may name the folder that holds it, whole: the one way a row names a folder above.
TEST(Layers, TheFolderTableHasNoCycle) {
  const auto table = folder_table();
  const std::set<std::string> tools = main_folders();
  EXPECT_TRUE(tools.contains("node_physical/target")) << "docs/architecture.md §10";
  int checked = 0;
  for (const auto& [folder, row] : table) {
    for (const std::string& dependency : row.allowed) {
      if (dependency == "all" || (tools.contains(folder) && folder.starts_with(dependency + "/"))) continue;
      ++checked;
      EXPECT_FALSE(allows(table, dependency, folder))
          << folder << " may include " << dependency << ", which reaches back to it (docs/architecture.md §2)";
    }
  }
  EXPECT_GT(checked, 60);
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

// common/ is the base the components of its own families build on (the registry, the readers): the
// rest of it builds them through the registry and includes none of them, so that they stay components
// (docs/architecture.md §2).
TEST(Layers, CommonReachesItsComponentsThroughTheRegistryOnly) {
  const auto table = folder_table();
  const std::set<std::string> components{"common/ground_motions", "common/impairments", "common/dampings"};
  int checked = 0;
  for_each_source("common", [&](const fs::path& file, const std::string& relative) {
    if (components.contains(folder_of(table, relative))) return;
    for_each_include(file, [&](int line_number, const std::string& header) {
      ++checked;
      EXPECT_FALSE(components.contains(target_of(table, header)))
          << relative << ":" << line_number << ": includes " << header;
    });
  });
  EXPECT_GT(checked, 100);
}

// Each sub-library links the ones below it ("rths_sub_library(PREFIX NAME DEPENDENCY...)" in the
// CMakeLists.txt of common/, smith_predictor/, node_physical/ and node_numerical/), and only those its
// row of the folder table allows, so that the linker holds the order the includes follow.
// rths_components, every registered component linked whole for its registration (docs/architecture.md
// §9), is linked by what builds from a config: no component's row may reach that library, which
// keeps the link acyclic.
TEST(Layers, EachSubLibraryLinksOnlyWhatItsRowAllows) {
  const auto table = folder_table();
  // The folder a sub-library prefix stands for, and the CMake targets of whole folders and of the
  // components that do not follow their folder's prefix.
  const std::map<std::string, std::string> folder_of_prefix{{"rths_common", "common"},
                                                            {"rths_prediction", "smith_predictor"},
                                                            {"rths_physical", "node_physical"},
                                                            {"rths_numerical", "node_numerical"},
                                                            {"rths_console", "console"}};
  const std::map<std::string, std::string> folder_of_target{{"rths_proto", "proto"},
                                                            {"rths_common", "common"},
                                                            {"rths_smith_predictor", "smith_predictor"},
                                                            {"rths_node_physical", "node_physical"},
                                                            {"rths_ground_motions", "common/ground_motions"},
                                                            {"rths_impairment_models", "common/impairments"},
                                                            {"rths_dampings", "common/dampings"}};
  const auto target_folder = [&](const std::string& target) -> std::string {
    if (const auto found = folder_of_target.find(target); found != folder_of_target.end()) return found->second;
    for (const auto& [prefix, folder] : folder_of_prefix) {
      if (target.starts_with(prefix + "_")) return folder + "/" + target.substr(prefix.size() + 1);
    }
    return {};
  };
  // The folders of rths_components' libraries, as CMakeLists.txt lists them.
  std::vector<std::string> components;
  const std::string top = test::slurp(test::source_dir() / "CMakeLists.txt");
  const std::regex whole(R"(WHOLE_ARCHIVE,(rths_[a-z_]+)>)");
  for (auto it = std::sregex_iterator(top.begin(), top.end(), whole); it != std::sregex_iterator(); ++it) {
    components.push_back(target_folder((*it)[1].str()));
    EXPECT_EQ(table.count(components.back()), 1U) << (*it)[1].str() << ": no row in docs/architecture.md §2";
  }
  EXPECT_GE(components.size(), 8U) << "CMakeLists.txt: rths_components";
  const std::regex declaration(R"(^rths_sub_library\(([a-z_]+) ([a-z_]+)((?: [^ )]+)*)\)$)");
  int libraries = 0;
  int links = 0;
  for (const auto& entry : folder_of_prefix) {
    const std::string& folder = entry.second;  // not a structured binding: clang 14 cannot capture one
    const std::string file = folder + "/CMakeLists.txt";
    std::istringstream lines(test::slurp(test::source_dir() / file));
    int declared = 0;
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_match(line, m, declaration)) continue;
      ++declared;
      EXPECT_EQ(m[1].str(), entry.first) << file << ": " << line;
      const std::string library = folder + "/" + m[2].str();
      EXPECT_EQ(table.count(library), 1U) << library << " has no row in docs/architecture.md §2";
      std::stringstream dependencies(m[3].str());
      for (std::string dependency; dependencies >> dependency;) {
        if (!dependency.starts_with("rths_")) continue;  // a package (Eigen, spdlog, libsodium)
        ++links;
        if (dependency == "rths_components") {
          for (const std::string& component : components) {
            EXPECT_FALSE(allows(table, component, library))
                << file << ": " << library << " links rths_components, and the row of " << component
                << " reaches back to it";
          }
          continue;
        }
        const std::string to = target_folder(dependency);
        EXPECT_FALSE(to.empty()) << file << ": " << dependency << " is no folder's library";
        EXPECT_TRUE(allows(table, library, to))
            << file << ": " << library << " links " << dependency << ", which its row does not allow";
      }
    }
    EXPECT_GT(declared, 0) << file << " declares its sub-libraries with rths_sub_library";
    libraries += declared;
  }
  // common 9, smith_predictor 3, node_physical 3, node_numerical 4, console 2.
  EXPECT_GE(libraries, 21);
  EXPECT_GE(links, libraries);
}

// Every executable of docs/architecture.md §10's table has its main where the table says, and runs on
// the one program skeleton (run_program: --help, --version, exit codes, logging, signals).
TEST(Layers, EveryExecutableIsAThinMainOnTheProgramSkeleton) {
  std::istringstream lines(test::slurp(test::source_dir() / "docs" / "architecture.md"));
  const std::regex row(R"(^\| `(rths-[a-z-]+)` \| `([a-z_/]+\.cpp)` \|.*$)");
  int mains = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    ++mains;
    const fs::path main = test::source_dir() / m[2].str();
    ASSERT_TRUE(fs::is_regular_file(main)) << m[1].str() << ": no " << m[2].str();
    EXPECT_NE(test::slurp(main).find("run_program("), std::string::npos)
        << m[2].str() << " does not run on the program skeleton";
    // Declared in the main's folder, or in its parent's.
    const std::string declared = "add_executable(" + m[1].str() + " ";
    const bool beside = test::slurp(main.parent_path() / "CMakeLists.txt").find(declared) != std::string::npos;
    const bool above =
        test::slurp(main.parent_path().parent_path() / "CMakeLists.txt").find(declared) != std::string::npos;
    EXPECT_TRUE(beside || above) << m[1].str() << " is not built from the folder of " << m[2].str();
  }
  EXPECT_GE(mains, 8);
}

}  // namespace
}  // namespace rths::test_layers
