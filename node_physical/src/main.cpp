// rths-physical: one physical site in real time. Kept thin (STYLE): parse, build, run.
#include <charconv>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include "rths/common/address.hpp"
#include "rths/common/command_line.hpp"
#include "rths/common/config.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/node_physical/site_server.hpp"

namespace {

constexpr const char* kUsage = R"(rths-physical — a physical site of rths (distributed real-time hybrid simulation)

Usage:
  rths-physical serve CONFIG --site NAME [--listen HOST:PORT] [--out DIR] [--set PATH=VALUE]...
                             [--wait SECONDS] [--quiet]
  rths-physical --help | --version

Commands:
  serve      Listen for the numerical node, agree the session (rate, channels, stroke limits,
             compensation mode and the prediction model's digest: any difference is refused with the
             field named), start at the agreed instant and step on the wall clock at the config's rate:
             take the newest command, drive the site's channels, return the Smith part-2 model error.
             CONFIG is the experiment file the numerical node runs; only site NAME is used.

Options:
  --site NAME       The site to serve (site.name in CONFIG).
  --listen H:P      Address to listen on. Default: the site's address in CONFIG (127.0.0.1:47000);
                    port 0 picks a free port (printed as "listening on HOST:PORT").
  --out DIR         Folder for site_<NAME>.csv, site_<NAME>.json and site_<NAME>.log (created).
                    Default: runs/<config name>-<site>-<date>-<time>
  --set PATH=VALUE  Override a config field (as rths-numerical --set); both ends must agree.
  --wait SECONDS    Give up when no numerical node says hello within this time (0 to 86400 s;
                    default 0: wait forever).
  --quiet           Print only errors.

Exit codes: 0 completed or stopped by the numerical node; 1 failure; 2 bad command line or config;
3 handshake refused, or a start refused because the site's record would exceed output.memory_budget_mb;
4 numerical node lost (no packet within realtime.peer_timeout_s); 5 aborted by the numerical node;
6 interrupted (SIGINT/SIGTERM); 7 no hello within --wait; 8 stroke limit. In every case but 1, 2 and a
refused start the actuator holds its last position and the recordings are written.
)";

// The longest --wait: a day, more than any lab waits for a peer (0 waits forever).
constexpr double kMaxWaitS = 86400.0;

double parse_wait_s(const std::string& text) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() ||
      !(value >= 0.0 && value <= kMaxWaitS)) {
    throw std::invalid_argument(
        fmt::format("--wait: \"{}\" is not a time; expected seconds from 0 (wait forever) to {:g}", text, kMaxWaitS));
  }
  return value;
}

// A listening address: host:port (port 0: any free port) whose host resolves on this machine.
rths::HostPort parse_listen(const std::string& what, const std::string& text) {
  rths::HostPort address;
  try {
    address = rths::parse_host_port(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + ": " + e.what());
  }
  if (const std::string problem = rths::resolve_problem(address.host); !problem.empty()) {
    throw std::invalid_argument(fmt::format("{}: \"{}\": cannot resolve {}: {}; expected an address of this host", what,
                                            text, address.host, problem));
  }
  return address;
}

}  // namespace

int main(int argc, char** argv) {
  if (rths::answered_help_or_version(argc, argv, kUsage, "rths-physical 0.1.0")) {
    return rths::kExitCompleted;
  }
  rths::CommandLine cl;
  double wait_s = 0.0;
  std::optional<rths::HostPort> listen;
  try {
    cl = rths::parse_command_line(argc, argv, {"site", "listen", "wait"}, {});
    if (cl.command != "serve") {
      throw std::invalid_argument(cl.command.empty() ? "missing command (see --help)"
                                                     : "unknown command " + cl.command + " (see --help)");
    }
    if (cl.config.empty() || !cl.has("site")) {
      throw std::invalid_argument("serve needs CONFIG and --site NAME (see --help)");
    }
    wait_s = parse_wait_s(cl.option("wait", "0"));
    if (cl.has("listen")) {
      listen = parse_listen("--listen", cl.option("listen"));
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "rths-physical: %s\n", e.what());
    return rths::kExitBadInput;
  }
  const std::string site = cl.option("site");
  const auto out = cl.out.empty() ? rths::default_run_folder(cl.config, "-" + site) : cl.out;
  try {
    rths::start_logging("rths-physical", out, "site_" + site + ".log", cl.quiet);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rths-physical: cannot write %s: %s\n", out.c_str(), e.what());
    return rths::kExitBadInput;
  }
  const auto& stop = rths::install_stop_signals();
  return rths::run_logged([&] {
    const rths::LoadedConfig loaded = rths::load_experiment(cl.config, cl.overrides);
    rths::SiteServerOptions options;
    options.site_name = site;
    options.out_dir = out;
    options.wait_s = wait_s;
    if (listen) {
      options.listen = *listen;
    } else {
      // The site's own address in the config (validated there), which must also resolve here.
      for (int i = 0; i < loaded.experiment.site_size(); ++i) {
        if (loaded.experiment.site(i).name() == site) {
          try {
            options.listen = parse_listen(fmt::format("site[{}].address", i), loaded.experiment.site(i).address());
          } catch (const std::invalid_argument& e) {
            throw rths::ConfigError(fmt::format("{}: {}", cl.config.string(), e.what()));
          }
        }
      }
    }
    return rths::serve_site(loaded, options, stop);
  });
}
