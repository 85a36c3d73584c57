// What the tests of a site's safe motion share: a one-storey experiment whose site has the safe motion
// given, and its rate.
#pragma once

#include <string>

namespace rths::test {

inline constexpr double kRampingRateHz = 1024.0;  // ramping_config's rate_hz

// One storey, a remote spring within a 5 cm stroke, 0.2 m/s and 10 kN, with `safe_motion { ... }`; the
// real-time start waits start_delay seconds.
inline std::string ramping_config(const std::string& safe_motion, const std::string& start_delay = "0.5") {
  return R"(name: "ramps"
rate_hz: 1024
duration_s: 0.5
structure {
  dofs: 1
  mass_kg: [1000]
  stiffness_n_per_m: [100000]
  damping_ns_per_m { value: [500] }
}
ground_motion { synthetic { seed: 3 duration_s: 1 } }
realtime { start_delay_s: )" +
         start_delay + R"( }
site {
  name: "lab"
  influence: [-1]
  channel {
    specimen { spring { stiffness_n_per_m: 20000 } }
    stroke_limit_m: 0.05
    velocity_limit_m_per_s: 0.2
    force_limit_n: 1e4
  }
  safe_motion { )" +
         safe_motion + R"( }
}
)";
}

}  // namespace rths::test
