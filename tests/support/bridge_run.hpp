// The fixture of a site driving rths-target over the UDP bridge on 127.0.0.1 (support/spring_bridge.hpp's
// spring, calibrated into the run folder): the target, and the site with the numerical node against it.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/spring_bridge.hpp"

namespace rths::test {

class BridgeRun : public RunFolderTest {
 protected:
  static inline const std::string kSite = "spring";

  [[nodiscard]] static std::string config() { return spring_bridge_config(); }
  [[nodiscard]] std::string calibration_set() const {
    return spring_bridge_calibration_set(dir_ / "calibration.textproto");
  }
  void calibrate() const { calibrate_spring_bridge(dir_ / "calibration.textproto"); }
  // rths-target on a free port, at a real-time priority as a lab's controller has its own machine;
  // its address ("" when it did not come up).
  // watchdog_s: the target's; the comparisons give it the default, kSpringBridgeWatchdogS.
  // out: its run folder.
  std::string start_target(std::optional<Process>& target, const std::string& watchdog_s,
                           const std::filesystem::path& out) const {
    target.emplace(
        "rths-target",
        std::vector<std::string>{config(), "--site", kSite, "--listen", "127.0.0.1:0", "--out", out.string(),
                                 "--realtime-priority", "70", "--watchdog-s", watchdog_s, "--set", calibration_set()},
        out);
    return target->wait_for_line("listening on ", std::chrono::seconds(10));
  }
  // rths-physical serving the site with its bridge aimed at target_at, and rths-numerical running
  // duration_s of the test against it (no relay). Both started; the site's address is checked.
  // overrides: more PATH=VALUE for both ends.
  struct SiteAndNumerical {
    std::optional<Process> site;
    std::optional<Process> numerical;
  };
  SiteAndNumerical start_site_and_numerical(const std::string& target_at, const std::filesystem::path& dir,
                                            double duration_s, const std::vector<std::string>& overrides = {}) const {
    SiteAndNumerical run;
    std::vector<std::string> sets{"--set", calibration_set(),
                                  "--set", "site[spring].driver.udp_bridge.target=" + target_at,
                                  "--set", site_key_override(dir, kSite)};
    for (const std::string& o : overrides) sets.insert(sets.end(), {"--set", o});
    std::vector<std::string> site_args{"serve",    config(),      "--site", kSite,
                                       "--listen", "127.0.0.1:0", "--out",  (dir / "site").string()};
    site_args.insert(site_args.end(), sets.begin(), sets.end());
    run.site.emplace("rths-physical", site_args, dir / "site");
    const std::string site_at = run.site->wait_for_line("listening on ", std::chrono::seconds(10));
    EXPECT_FALSE(site_at.empty()) << run.site->err();
    std::vector<std::string> numerical_args{"run",
                                            config(),
                                            "--realtime",
                                            "--set",
                                            "site[spring].address=" + site_at,
                                            "--set",
                                            "duration_s=" + std::to_string(duration_s),
                                            "--out",
                                            (dir / "run").string(),
                                            "--quiet"};
    numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
    run.numerical.emplace("rths-numerical", numerical_args, dir / "numerical");
    return run;
  }
  // Waits until the site's record (in dir, as start_site_and_numerical was given it) holds `into_test` of
  // the test's own steps, so that what the caller does next (a stall, a kill) lands in the test's loop
  // and not in a ramp, however late a loaded machine started the processes. False when the site never
  // got that far.
  static bool wait_into_the_test(const std::filesystem::path& dir, std::chrono::milliseconds into_test) {
    const auto steps = static_cast<std::size_t>(static_cast<double>(into_test.count()) * kBridgeRateHz / 1000);
    return wait_for_rows(site_record(dir), steps, std::chrono::seconds(30));
  }
  // The site's record and summary in a run folder of start_site_and_numerical.
  static std::filesystem::path site_record(const std::filesystem::path& dir) {
    return dir / "site" / ("site_" + kSite + ".csv");
  }
  static std::filesystem::path site_summary(const std::filesystem::path& dir) {
    return dir / "site" / ("site_" + kSite + ".json");
  }
};

}  // namespace rths::test
