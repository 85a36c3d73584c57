#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "common/core/text.hpp"

namespace rths {

// A config that cannot be run. what() is one line that names the file, the line, the field and
// what was expected, e.g. `case1.textproto:12: site[0].influence: has 3 entries, structure has 2 DOFs`.
// Whatever user text the message quotes (a name, a value, a file's line), its control characters are
// escaped here, once for every message (one_line). A config with several problems (validate) has
// them all in what(), one per line after a line that counts them.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(one_line(what)) {}
  explicit ConfigError(const char* what) : std::runtime_error(one_line(what)) {}
  explicit ConfigError(const std::vector<std::string>& problems) : std::runtime_error(lines_of(problems)) {}

 private:
  static std::string lines_of(const std::vector<std::string>& problems) {
    std::string all = std::to_string(problems.size()) + " problems:";
    for (const std::string& problem : problems) all += "\n  " + one_line(problem);
    return all;
  }
};

}  // namespace rths
