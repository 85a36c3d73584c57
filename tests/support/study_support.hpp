#pragma once

// What the study tests read back from a study's files.
#include <sstream>
#include <string>
#include <vector>

namespace rths::test {

// The words of each data line of a plot's .dat text ('#' lines and blank lines skipped).
inline std::vector<std::vector<std::string>> dat_words(const std::string& dat) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(dat);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::istringstream words(line);
    rows.emplace_back();
    for (std::string w; words >> w;) {
      rows.back().push_back(w);
    }
  }
  return rows;
}

}  // namespace rths::test
