// What the tests of bad inputs share: a small valid experiment to break, and the memory budget's
// fixture, which loads a config written into its run folder.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "support/process.hpp"

namespace rths::test {

// A small valid experiment: two storeys and a remote spring (one channel); synthetic ground motion,
// so no data file is needed.
inline std::string valid_config() {
  return R"(name: "campaign"
rate_hz: 1024
duration_s: 1
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
}
)";
}

// The memory budget's tests: a config written into the run folder and loaded from there.
class MemoryBudget : public RunFolderTest {
 protected:
  [[nodiscard]] LoadedConfig load(const std::string& text, const std::vector<std::string>& overrides = {}) const {
    const auto file = dir_ / "budget.textproto";
    std::ofstream(file) << text;
    return load_experiment(file, overrides);
  }
};

}  // namespace rths::test
