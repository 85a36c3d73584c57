// rths-target: an emulator of a laboratory's real-time controller behind rths's UDP bridge, so that
// a site with driver { udp_bridge { ... } } runs end to end without the lab. Thin (STYLE): parse,
// build, run, report.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/os.h>
#include <spdlog/spdlog.h>

#include <asio/io_context.hpp>
#include <asio/ip/udp.hpp>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/udp_link.hpp"
#include "node_physical/target/target_emulator.hpp"

namespace {

// Rows between the tick and the CSV writer: four seconds at 4096 Hz. The writer empties the queue
// every kWriterPeriod, so it fills only when the disk stalls for seconds (rows are then dropped and
// counted in the summary, never waited for).
constexpr std::size_t kQueueRows = 16384;
constexpr auto kWriterPeriod = std::chrono::milliseconds(10);
// The first tick is due this long after the loop is set up, so that it starts on time.
constexpr std::int64_t kStartDelayNs = 10'000'000;

struct Options {
  std::string site;
  std::optional<rths::HostPort> listen;
  std::optional<rths::HostPort> peer;
  double rate_hz = 4096;
  double watchdog_s = 0.05;
  double duration_s = 0;
  int priority = 0;
  std::filesystem::path out;
  std::vector<std::string> overrides;
  rths::TelemetryOptions telemetry;
};

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-target", "an emulator of a lab's real-time controller behind rths's UDP bridge");
  cli.command("", "CONFIG", "");
  cli.description(R"(Behaves as the real-time target that site NAME's driver { udp_bridge { ... } } talks to: each
channel's actuator and specimen from CONFIG, ticked at --rate. Each tick it answers every datagram
with the sensors of that tick and the datagram's counter (counter 0, a probe, only reads), takes the
newest command (clamped to the stroke: actuator.limits.stroke_m, else stroke_limit_m), and advances
the plants. Only one sender commands it: --peer, else the sender of the first command taken (others
are answered, never obeyed, and counted as foreign); each reply says which counter and command are in
force. Its watchdog, armed by the first command, trips when no newer counter came for more than
--watchdog-s: the actuator's velocity ramps to zero within 10 ms and it holds there until the target
is restarted (a trip latches; nothing re-arms it). The site's disarm after its stop ramp (ENABLE 0
with the next counter) switches the watchdog off and ends the session: the actuator holds, further
commands are ignored until the target is restarted. With a setup transformation (site.setup) the
datagrams carry its actuators: strokes are clamped to setup.stroke_limit_m, mapped to the channels
by the setup's inverse, and answered with the sensed strokes and load-cell forces.
docs/plant-drivers.md has the protocol.)");
  rths::site_option(cli, o.site, "The site whose equipment is emulated (site.name in CONFIG).");
  cli.option(
      "listen", "HOST:PORT", [&o](const std::string& v) { o.listen = rths::parse_listen_address(v); },
      "Address to listen on. Default: the bridge's target address; port 0 picks a free\n"
      "port (printed as \"listening on HOST:PORT\").");
  cli.option(
      "peer", "HOST:PORT", [&o](const std::string& v) { o.peer = rths::parse_address(v, false); },
      "The only sender whose commands are taken (the site's udp_bridge.bind). Default: the\n"
      "sender of the first command taken.");
  cli.number("rate", "HZ", o.rate_hz, {0.0, 1e5, true, "a rate in Hz"},
             "The target's own tick rate, up to 100000 (not the site's). Default 4096.");
  cli.number("watchdog-s", "S", o.watchdog_s, {0.0, 10.0, true, "a time in seconds"},
             "Trip when no new command came for longer than this (above 0, at most 10,\n"
             "and longer than one site step). Default 0.05 (docs/performance.md, UDP bridge).");
  cli.number("duration-s", "S", o.duration_s, {0.0, 86400.0, false, "a time in seconds"},
             "Run this long (0 to 86400; default 0: until SIGINT or SIGTERM).");
  cli.whole("realtime-priority", "N", o.priority, {0, 99, "a SCHED_FIFO priority"},
            "SCHED_FIFO priority of the tick thread, 1..99; 0 (the default): normal scheduling.");
  cli.path("out", "DIR", o.out,
           "Folder for target_<NAME>.csv (every tick: counter, commands, sensors, status)\n"
           "and target_<NAME>.log (created). Default: nothing written.");
  cli.repeated("set", "PATH=VALUE", o.overrides, "Override a config field (as rths-numerical --set).");
  rths::console_options(cli, o.telemetry,
                        "Publish the newest tick's row and the watchdog's state to rths-console listening there.\n"
                        "Default: none.");
  cli.epilogue(R"(On exit it prints one summary line: ticks, datagrams, probes, commands applied, stroke clamps, the
watchdog, tick lateness. A trip prints "watchdog: no new command for 50.1 ms at t=3.456 s; holding at
1.234 mm" when it happens, a disarm "disarmed by the site (counter 61441) at t=62.100 s; holding at
0.000 mm". Status word of each channel's reply: bit 0 the command was clamped to the stroke, bit 1
the watchdog tripped, bit 2 the site disarmed it.

Exit codes: 0 ran for --duration-s or until SIGINT/SIGTERM (a watchdog trip included); 1 failure;
2 bad command line or config.
)");
  return cli;
}

// Empties the tick's queue into the CSV and the telemetry's newest row, and prints the watchdog's
// line once it trips; off the tick's thread, at normal priority.
class SideThread {
 public:
  SideThread(const rths::TargetEmulator& target, rths::RowQueue* rows, std::optional<fmt::ostream>* csv,
             rths::LatestRow* latest)
      : target_(target), rows_(rows), csv_(csv), latest_(latest), thread_([this] { run(); }) {}
  SideThread(const SideThread&) = delete;
  SideThread& operator=(const SideThread&) = delete;
  SideThread(SideThread&&) = delete;
  SideThread& operator=(SideThread&&) = delete;
  ~SideThread() { finish(); }

  void finish() {
    if (thread_.joinable()) {
      done_.store(true);
      thread_.join();
    }
  }

 private:
  void run() {
    std::vector<double> row(rows_ != nullptr ? rows_->columns() : 0);
    bool printed = false;
    bool printed_disarm = false;
    for (bool last = false; !last;) {
      last = done_.load();
      bool popped = false;
      while (rows_ != nullptr && rows_->pop(row)) {
        popped = true;
        if (csv_->has_value()) {
          csv_->value().print("{:.17g}\n", fmt::join(row, ","));
        }
      }
      if (popped && latest_ != nullptr) {
        latest_->set(row);
      }
      if (!printed && target_.tripped()) {
        printed = true;
        const rths::WatchdogTrip& trip = target_.trip();
        std::string hold;
        for (const double x : trip.hold_m) {
          hold += fmt::format("{}{:.3f} mm", hold.empty() ? "" : ", ", x * 1e3);
        }
        const std::string line = fmt::format("watchdog: no new command for {:.1f} ms at t={:.3f} s; holding at {}",
                                             trip.age_s * 1e3, trip.t_s, hold);
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        spdlog::info("{}", line);
      }
      if (!printed_disarm && target_.disarmed()) {
        printed_disarm = true;
        const rths::Disarm& disarm = target_.disarm();
        std::string hold;
        for (const double x : disarm.hold_m) {
          hold += fmt::format("{}{:.3f} mm", hold.empty() ? "" : ", ", x * 1e3);
        }
        const std::string line = fmt::format("disarmed by the site (counter {}) at t={:.3f} s; holding at {}",
                                             disarm.counter, disarm.t_s, hold);
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        spdlog::info("{}", line);
      }
      if (!last) {
        std::this_thread::sleep_for(kWriterPeriod);
      }
    }
  }

  const rths::TargetEmulator& target_;
  rths::RowQueue* rows_;
  std::optional<fmt::ostream>* csv_;
  rths::LatestRow* latest_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

const rths::config::Site& find_site(const rths::LoadedConfig& loaded, const std::string& name) {
  for (const auto& site : loaded.experiment.site()) {
    if (site.name() == name) {
      return site;
    }
  }
  throw rths::ConfigError(fmt::format("{}: no site named \"{}\"", loaded.source.string(), name));
}

int emulate(const std::filesystem::path& config, const Options& o, const std::atomic<bool>& stop) {
  const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides, /*resolve_calibration_files=*/false);
  const rths::config::Site& site = find_site(loaded, o.site);
  if (!site.driver().has_udp_bridge()) {
    throw rths::ConfigError(fmt::format("{}: site \"{}\" has no driver {{ udp_bridge {{ ... }} }}: nothing to emulate",
                                        config.string(), o.site));
  }
  const double site_step_s = 1.0 / loaded.experiment.rate_hz();
  if (o.watchdog_s <= site_step_s) {
    throw rths::ConfigError(
        fmt::format("--watchdog-s: {:g} s is not longer than one step of site \"{}\" ({:g} s at "
                    "{:g} Hz); expected more, or the watchdog trips between two commands",
                    o.watchdog_s, o.site, site_step_s, loaded.experiment.rate_hz()));
  }
  rths::HostPort listen;
  if (o.listen) {
    listen = *o.listen;
  } else {
    try {
      listen = rths::parse_listen_address(site.driver().udp_bridge().target());
    } catch (const rths::Expected& e) {
      throw rths::ConfigError(
          fmt::format("{}: site \"{}\": driver.udp_bridge.target: expected {}, got '{}'; or give "
                      "--listen",
                      config.string(), o.site, e.what(), site.driver().udp_bridge().target()));
    }
  }

  asio::io_context io;
  std::optional<rths::Sender> peer;
  if (o.peer) {
    asio::error_code ec;
    asio::ip::udp::resolver resolver(io);
    const auto found = resolver.resolve(o.peer->host, std::to_string(o.peer->port), ec);
    if (ec || found.empty()) {
      throw rths::ConfigError(fmt::format("--peer: cannot resolve {}: {}", o.peer->host, ec.message()));
    }
    peer = rths::sender_of(found.begin()->endpoint());
  }
  rths::UdpLink link(io, listen.host, listen.port);
  rths::UdpTargetPort port(link);
  std::optional<rths::RowQueue> rows;
  std::optional<fmt::ostream> csv;
  const std::vector<std::string> columns =
      rths::TargetEmulator::columns(rths::TargetEmulator::recorded_kinds(loaded.experiment.structure(), site));
  if (!o.out.empty() || !o.telemetry.console.empty()) {
    rows.emplace(columns.size(), kQueueRows);
  }
  if (!o.out.empty()) {
    csv.emplace(fmt::output_file((o.out / ("target_" + o.site + ".csv")).string()));
    csv->print("{}\n", fmt::join(columns, ","));
  }
  const rths::MonotonicClock clock;
  rths::TargetEmulator target(site, o.rate_hz, o.watchdog_s, port, clock, rows ? &*rows : nullptr, peer);
  std::optional<rths::LatestRow> latest;
  std::optional<rths::TelemetryPublisher> telemetry;
  if (!o.telemetry.console.empty()) {
    latest.emplace(columns);
    telemetry.emplace("target " + o.site, o.telemetry);
    telemetry->add_stream("target", *latest);
    telemetry->add_figure("watchdog_tripped", [&target] { return target.tripped() ? 1.0 : 0.0; });
    telemetry->set_state(rths::NodeState::kRunning);
    telemetry->start();
  }
  SideThread side(target, rows ? &*rows : nullptr, &csv, latest ? &*latest : nullptr);

  rths::RealtimeOptions rt;
  rt.rate_hz = o.rate_hz;
  rt.priority = o.priority;
  for (const std::string& warning : rths::acquire_realtime(rt)) {
    spdlog::warn("{}", warning);
  }
  const std::string where = listen.host + ":" + std::to_string(link.local_port());
  spdlog::info("site {}: emulating its real-time target on {} at {:g} Hz, watchdog {:g} s", o.site, where, o.rate_hz,
               o.watchdog_s);
  std::printf("listening on %s\n", where.c_str());
  std::fflush(stdout);

  rths::RealtimeLoop loop(rt);
  const std::int64_t ticks = o.duration_s > 0 ? static_cast<std::int64_t>(std::floor(o.duration_s * o.rate_hz)) + 1
                                              : std::numeric_limits<std::int64_t>::max();
  const rths::RunResult run = loop.run(rths::monotonic_ns() + kStartDelayNs, 0, ticks, target, stop);
  side.finish();
  if (csv) {
    csv->close();
  }

  const auto& n = target.counters();
  std::uint64_t clamps = 0;
  for (const std::uint64_t c : n.stroke_clamped) {
    clamps += c;
  }
  const rths::LoopStats& stats = loop.stats();
  const std::string watchdog =
      target.tripped()    ? fmt::format("watchdog tripped at t={:.3f} s", target.trip().t_s)
      : target.disarmed() ? fmt::format("watchdog not tripped, disarmed by the site at t={:.3f} s", target.disarm().t_s)
                          : "watchdog not tripped";
  const std::string obeyed = target.peer() ? "obeying " + rths::describe(*target.peer()) : "no command taken";
  const std::string summary = fmt::format(
      "rths-target: site {}, {} ticks at {:g} Hz ({:.3f} s); {} datagrams answered ({} probes), {} commands applied "
      "({}), {} foreign, {} stale, {} disabled, {} not finite, {} outside the setup, {} after the trip, {} after the "
      "disarm, {} of the wrong size; {} stroke clamps; {} (watchdog {:g} s, longest silence of the site {:.1f} ms); {} "
      "rows dropped; tick lateness p99 {:.1f} us, max {:.1f} us, {} late",
      o.site, run.steps_run, o.rate_hz, static_cast<double>(run.steps_run) / o.rate_hz, n.datagrams, n.probes,
      n.applied, obeyed, n.foreign, n.stale, n.disabled, n.not_finite, n.outside_setup, n.after_trip, n.after_disarm,
      n.wrong_size, clamps, watchdog, o.watchdog_s, static_cast<double>(n.longest_silence_ns) * 1e-6,
      rows ? rows->dropped() : 0, static_cast<double>(stats.lateness.percentile(99)) * 1e-3,
      static_cast<double>(stats.lateness.max_ns()) * 1e-3, stats.late);
  spdlog::info("{}", summary);
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);
  if (telemetry) {
    telemetry->set_state(rths::NodeState::kStopped, target.fault().empty() ? watchdog : target.fault());
  }
  if (const std::string fault = target.fault(); !fault.empty()) {
    spdlog::error("site {}: the emulated plant failed and the target stopped: {}", o.site, fault);
    return rths::kExitFailure;
  }
  return rths::kExitCompleted;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  return rths::run_program(argc, argv, cli, [&o](const rths::CommandLine& line) {
    const std::filesystem::path config = line.operands().front();
    return rths::ProgramRun([&o, config](const auto& stop) {
             rths::load_telemetry_key(o.telemetry);
             return emulate(config, o, stop);
           })
        .log_to(o.out, "target_" + o.site + ".log")
        .stop_on_signals();
  });
}
