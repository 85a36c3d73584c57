#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rths {

// Where the fields of a parsed experiment came from: the line each field path was written on, and
// the overrides applied after parsing. validate() uses it to point an error at its source.
class FieldLocations {
 public:
  // `path` is spelt as in error messages (`site[0].link.forward.delay_s`); `line` counts from 1.
  void add_line(const std::string& path, int line);
  // An override that assigned `path` (as returned by apply_override_resolved); later ones win.
  void add_override(std::string path, std::string assignment);

  // The start of an error message about `path`: "<source>:<line>: " when the field (or, for a
  // missing one, its nearest enclosing message) was written in the file, "<source>: --set <a>: "
  // when an override assigned it, "<source>: " when neither is known (a field of the root).
  [[nodiscard]] std::string prefix(const std::string& source_name, const std::string& path) const;

  // The line `path` itself was written on, if it was (for tests and tools).
  [[nodiscard]] std::optional<int> line(const std::string& path) const;

 private:
  std::map<std::string, int, std::less<>> lines_;
  std::vector<std::pair<std::string, std::string>> overrides_;  // (resolved path, assignment)
};

}  // namespace rths
