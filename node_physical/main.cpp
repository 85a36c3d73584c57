// rths-physical: one physical site in real time. Kept thin (STYLE): parse, build, run.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include "common/config/config.hpp"
#include "common/config/setup_checks.hpp"
#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/records/telemetry.hpp"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/server/site_server.hpp"

namespace {

// What the command line asks for.
struct Options {
  std::string site;
  std::optional<rths::HostPort> listen;
  std::filesystem::path out;
  std::vector<std::string> overrides;
  double wait_s = 0.0;
  bool quiet = false;
  rths::TelemetryOptions telemetry;
};

// The longest --wait: a day, more than any lab waits for a peer (0 waits forever).
constexpr double kMaxWaitS = 86400.0;

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-physical", "a physical site of rths (distributed real-time hybrid simulation)");
  cli.command("serve", "CONFIG",
              "Listen for the numerical node, agree the session (rate, channels, stroke limits,\n"
              "compensation mode and the prediction model's digest: any difference is refused with the\n"
              "field named), start at the agreed instant and step on the wall clock at the config's rate:\n"
              "take the newest command, drive the site's channels, return the Smith part-2 model error.\n"
              "CONFIG is the experiment file the numerical node runs; only site NAME is used.");
  cli.command("layout", "CONFIG",
              "Print the byte layout of site NAME's UDP bridge (driver { udp_bridge { ... } }) for the\n"
              "real-time target's Byte Pack / Byte Unpack blocks: offset, bytes, type, byte order,\n"
              "quantity, channel, scale, offset and unit of every field, and the protocol.");
  rths::site_option(cli, o.site, "The site to serve or lay out (site.name in CONFIG).");
  cli.option(
         "listen", "HOST:PORT", [&o](const std::string& v) { o.listen = rths::parse_listen_address(v); },
         "Address to listen on. Default: the site's address in CONFIG (127.0.0.1:47000);\n"
         "port 0 picks a free port (printed as \"listening on HOST:PORT\").")
      .only_for({"serve"});
  cli.path("out", "DIR", o.out,
           "Folder for site_<NAME>.csv, site_<NAME>.json and site_<NAME>.log (created).\n"
           "Default: runs/<config name>-<site>-<date>-<time>")
      .only_for({"serve"});
  cli.repeated("set", "PATH=VALUE", o.overrides,
               "Override a config field (as rths-numerical --set); both ends must agree.");
  cli.number("wait", "SECONDS", o.wait_s, {0.0, kMaxWaitS, false, "a time in seconds"},
             "Give up when no numerical node has started a session within this time (0 to 86400 s;\n"
             "default 0: wait forever). A hello answered but not followed by its start (a replayed\n"
             "one, or a node that stopped) does not end the wait.")
      .only_for({"serve"});
  rths::console_options(cli, o.telemetry,
                        "Publish the site's telemetry to rths-console listening there (its --telemetry) while the\n"
                        "test runs. Default: none.",
                        {"serve"});
  cli.flag("quiet", o.quiet, "Print only errors.").alias("-q").only_for({"serve"});
  cli.epilogue(R"(Exit codes: 0 completed or stopped by the numerical node; 1 failure; 2 bad command line or config;
3 handshake refused, or a start refused because the site's record would exceed output.memory_budget_mb;
4 numerical node lost (no packet within realtime.peer_timeout_s); 5 aborted by the numerical node;
6 interrupted (SIGINT/SIGTERM); 7 no session started within --wait; 8 stroke limit. In every case but 1, 2 and a
refused start the actuator holds its last position and the recordings are written.
layout: 0 with the table on stdout, 2 for a bad config or a site without a UDP bridge.
)");
  return cli;
}

// `layout`: the table of the site's bridge on stdout; nothing is written, nothing listens.
int print_layout(const std::filesystem::path& config, const Options& o) {
  // Calibration files are the controllers' business, not the layout's.
  const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides, /*resolve_calibration_files=*/false);
  for (int i = 0; i < loaded.experiment.site_size(); ++i) {
    const rths::config::Site& site = loaded.experiment.site(i);
    if (site.name() != o.site) continue;
    if (!site.driver().has_udp_bridge()) {
      throw rths::ConfigError(fmt::format("{}: site[{}].driver: site \"{}\" has no driver {{ udp_bridge {{ ... }} }}",
                                          config.string(), i, o.site));
    }
    std::fputs(rths::bridge_layout_table(site.driver().udp_bridge(), site.name(), rths::driven_channels(site),
                                         loaded.experiment.rate_hz(), site.has_setup())
                   .c_str(),
               stdout);
    return rths::kExitCompleted;
  }
  throw rths::ConfigError(fmt::format("{}: no site named \"{}\"", config.string(), o.site));
}

// `serve`: the site's session, until it ends or a signal stops it.
int serve(const std::filesystem::path& config, const Options& o, const std::filesystem::path& out,
          const std::atomic<bool>& stop) {
  const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides);
  rths::SiteServerOptions options;
  options.site_name = o.site;
  options.out_dir = out;
  options.wait_s = o.wait_s;
  options.telemetry = o.telemetry;
  rths::load_telemetry_key(options.telemetry);
  if (o.listen) {
    options.listen = *o.listen;
  } else {
    // The site's own address in the config (validated there), which must also resolve here.
    for (int i = 0; i < loaded.experiment.site_size(); ++i) {
      const std::string& address = loaded.experiment.site(i).address();
      if (loaded.experiment.site(i).name() == o.site) {
        try {
          options.listen = rths::parse_listen_address(address);
        } catch (const rths::Expected& e) {
          throw rths::ConfigError(
              fmt::format("{}: site[{}].address: expected {}, got '{}'", config.string(), i, e.what(), address));
        }
      }
    }
  }
  // Telemetry sent to the site's own port would arrive as datagrams it cannot open, among its session's.
  if (!o.telemetry.console.empty() && options.listen.port != 0 &&
      rths::same_endpoint(rths::parse_host_port(o.telemetry.console), options.listen)) {
    throw rths::ConfigError(
        fmt::format("--console: {} is the address this site listens on for the session ({}:{}); expected the address "
                    "rths-console listens on for telemetry (its --telemetry)",
                    o.telemetry.console, options.listen.host, options.listen.port));
  }
  return rths::serve_site(loaded, options, stop);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  return rths::run_program(argc, argv, cli, [&o](const rths::CommandLine& line) {
    const std::filesystem::path config = line.operands().front();
    if (line.command() == "layout") {
      return rths::ProgramRun([&o, config](const auto&) { return print_layout(config, o); });
    }
    const auto out = o.out.empty() ? rths::default_run_folder(config, "-" + o.site) : o.out;
    return rths::ProgramRun([&o, config, out](const auto& stop) { return serve(config, o, out, stop); })
        .log_to(out, "site_" + o.site + ".log")
        .quiet(o.quiet)
        .stop_on_signals();
  });
}
