#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/records/telemetry.hpp"
#include "node_physical/site/physical_substructure.hpp"
#include "results.pb.h"

namespace rths {

struct SiteServerOptions {
  std::string site_name;
  HostPort listen;
  std::filesystem::path out_dir;
  // Print "listening on HOST:PORT" on stdout once bound (the loopback launcher reads it).
  bool announce = true;
  // How long to wait for the numerical node's hello (0: forever).
  double wait_s = 0.0;
  // Where the site publishes telemetry (rths-console); none when its console is empty.
  TelemetryOptions telemetry;
};

// One physical site in real time (docs/architecture.md §3-§5): listens, agrees the session terms with the numerical
// node's hello (refusing with the differing field named), starts at the agreed instant, steps on the
// wall clock, and stops safely on a stop/abort, a silent peer, a stroke-limit breach or stop_flag.
// Writes site_<name>.csv and site_<name>.json into out_dir in every case. Returns an ExitCode.
int serve_site(const LoadedConfig& loaded, const SiteServerOptions& options, const std::atomic<bool>& stop_flag);

// After a test that moved the actuators, whatever stopped it: hold, then move to the site's safe
// positions (SafeMotion) on the wall clock at rt's rate, and, when the ramp ran to its end on
// equipment (a driver), disarm it (PhysicalSubstructure::disarm) at once after the ramp's last
// command, before anything that can wait (a log line), so that its watchdog does not count that wait
// as a lost site. report: what the ramp did and where it ended, and the disarm's outcome is logged.
// Returns what went wrong, if anything: a ramp the equipment or the interlock stopped, or a disarm the
// equipment did not confirm. After a test that completed, that is the site's exit: the actuators are
// not known to be at rest where the site put them, and such a run must not report success.
struct StopRampFault {
  int exit_code = 0;  // an ExitCode: kExitEquipment or kExitLimit
  std::string reason;
};
[[nodiscard]] std::optional<StopRampFault> run_stop_ramp(PhysicalSubstructure& substructure, const config::Site& site,
                                                         const RealtimeOptions& rt, results::SafeMotionReport& report);

}  // namespace rths
