// What the tests of local actuator control share: the RLS example and the override that names its
// calibration file, a virtual-time run in process with its tracking metrics, and the fixtures that
// calibrate the compensator into a run folder or run the commands there.
#pragma once

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "common/metrics/metrics.hpp"
#include "node_numerical/analysis/calibration.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test {

inline constexpr const char* kRls = "actuator/spring_iisl_rls.textproto";
inline constexpr const char* kCalibrationPath = "site[0].channel[0].controller.rls.calibration_path";

// A virtual-time run in process: its report, the tracking metrics of its first channel, and whether
// x2 stayed finite throughout.
struct Outcome {
  RunReport report;
  TrackingMetrics tracking;
  bool finite = true;
};

inline Outcome run_virtual(const LoadedConfig& loaded) {
  Experiment experiment(loaded);
  Outcome o;
  o.report = experiment.run();
  o.tracking = o.report.sites.at(0).tracking.at(0);
  for (const double v : experiment.numerical().column(experiment.numerical().column_index("x2"))) {
    o.finite = o.finite && std::isfinite(v);
  }
  return o;
}

// Calibrates the RLS example (optionally with extra overrides) into a file and returns the override
// that makes the config read it.
class CalibratedRls : public RunFolderTest {
 protected:
  std::string calibrate(const std::vector<std::string>& overrides = {}) {
    const LoadedConfig raw = load_experiment(example(kRls), overrides, /*resolve_calibration_files=*/false);
    const auto file = dir_ / "calibration.textproto";
    std::ofstream(file) << calibration_text(calibrate_rls(raw), "test");
    return std::string(kCalibrationPath) + "=" + file.string();
  }
  LoadedConfig rls_config(std::vector<std::string> overrides) {
    overrides.push_back(calibrate(overrides));
    return load_example(kRls, overrides);
  }
};

// The commands, as a lab engineer runs them, each in a run folder of its own.
class ActuatorCli : public RunFolderTest {};

}  // namespace rths::test
