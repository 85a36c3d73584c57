// What the tests of non-finite runs share: a valid config whose run overflows within a hundred steps,
// its fixture, and whether a history holds only numbers.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace rths::test {

// A 1-DOF structure whose natural frequency (sqrt(4e8 / 1) = 2e4 rad/s, omega dt = 19.5 at 1024 Hz)
// is far beyond RK4's stability limit on the imaginary axis (2 sqrt 2): each step multiplies the
// motion by |R(19.5 i)| ~ 5e3, so the state overflows within ~90 steps. A valid config that a run
// cannot survive: the case that used to report J_peak 0 % and exit 0.
inline std::string diverging_config() {
  return R"(name: "diverging"
rate_hz: 1024
duration_s: 2
structure {
  dofs: 1
  mass_kg: [1]
  stiffness_n_per_m: [4e8]
}
ground_motion { synthetic { seed: 3 duration_s: 2 } }
site {
  name: "lab"
  influence: [-1]
  channel { specimen { spring { stiffness_n_per_m: 1000 } } }
}
)";
}

// The diverging config written into the run folder.
class NonFiniteRun : public RunFolderTest {
 protected:
  [[nodiscard]] std::filesystem::path config_file() const {
    auto file = dir_ / "diverging.textproto";
    std::ofstream(file) << diverging_config();
    return file;
  }
};

inline bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

}  // namespace rths::test
