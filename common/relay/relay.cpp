// rths-relay: a user-space UDP relay between the numerical node and one site that delays, loses,
// duplicates and reorders the datagrams of each direction as the site's link impairments say (the
// delay injector on a kernel without netem). Kept in one file: parse, build, relay, report.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <asio/io_context.hpp>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/realtime/latency_histogram.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/records/results.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/impairment.hpp"
#include "common/transport/link.hpp"
#include "common/transport/udp_link.hpp"

namespace {

constexpr std::size_t kSlots = 16384;          // datagrams in flight, both directions together
constexpr std::size_t kSeqRing = 65536;        // arrival numbers tracked for the reorder count
constexpr std::int64_t kSpinNs = 50'000;       // busy-wait this long before a release
constexpr std::int64_t kMaxSleepNs = 200'000;  // poll the sockets at least this often
constexpr int kMaxReceivesPerPoll = 256;       // per socket and wake-up: a flood cannot starve releases

std::int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until_monotonic(std::int64_t t_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t_ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(t_ns % 1'000'000'000);
  // EINTR (a signal) returns early too: the loop then looks at the stop flag.
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

struct DirectionStats {
  std::uint64_t received = 0;
  std::uint64_t delivered = 0;  // copies handed to the kernel (duplicates included)
  std::uint64_t lost = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t reordered = 0;
  std::uint64_t dropped_overflow = 0;
  std::uint64_t send_errors = 0;
  std::uint64_t pending_at_exit = 0;
  rths::LatencyHistogram lateness;
};

// A direction's counters as the telemetry thread reads them: copied from DirectionStats by the relay's
// loop (relaxed stores, no lock).
struct LiveDirection {
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> delivered{0};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> reordered{0};
  std::atomic<std::uint64_t> dropped_overflow{0};
};

// One direction: its impairment, the order it keeps, and what happened to its datagrams.
struct Direction {
  Direction(const char* name_, rths::Impairment impairment_, rths::UdpLink& out_)
      : name(name_), impairment(std::move(impairment_)), out(&out_) {}
  const char* name;
  rths::Impairment impairment;
  rths::UdpLink* out;
  std::int64_t last_release_ns = 0;  // order-preserving: no copy leaves before this
  std::uint64_t next_seq = 0;        // arrival number of the next datagram
  std::uint64_t min_pending = 0;     // lowest arrival number with a copy still waiting
  std::vector<std::uint8_t> copies_waiting = std::vector<std::uint8_t>(kSeqRing, 0);  // by seq % kSeqRing
  DirectionStats stats;
};

struct Slot {
  std::array<std::byte, rths::kMaxDatagramBytes> data{};
  std::size_t size = 0;
  std::uint64_t seq = 0;
  int direction = 0;
};

struct Pending {
  std::int64_t release_ns;
  std::uint64_t order;  // FIFO among equal release times
  std::uint32_t slot;
  bool operator>(const Pending& o) const {
    return release_ns != o.release_ns ? release_ns > o.release_ns : order > o.order;
  }
};

class Relay {
 public:
  Relay(const rths::LoadedConfig& loaded, const rths::config::Site& site, rths::UdpLink& to_numerical,
        rths::UdpLink& to_site)
      : slots_(kSlots),
        dirs_{Direction("forward", rths::Impairment(site.link().forward(), loaded.base_dir), to_site),
              Direction("backward", rths::Impairment(site.link().backward(), loaded.base_dir), to_numerical)},
        from_{&to_numerical, &to_site} {
    free_.reserve(kSlots);
    for (std::size_t i = kSlots; i > 0; --i) {
      free_.push_back(static_cast<std::uint32_t>(i - 1));
    }
    heap_.reserve(kSlots);
  }

  // Relays until stop is set or, once traffic has started, nothing arrived for idle_ns (0: never).
  void run(const std::atomic<bool>& stop, std::int64_t idle_ns, std::int64_t spin_ns) {
    std::int64_t last_traffic_ns = 0;
    bool started = false;
    while (!stop.load(std::memory_order_relaxed)) {
      if (poll()) {
        started = true;
        last_traffic_ns = rths::monotonic_ns();
      }
      std::int64_t now = rths::monotonic_ns();
      while (!heap_.empty() && heap_.front().release_ns <= now) {
        release();
        now = rths::monotonic_ns();
      }
      if (started && idle_ns > 0 && heap_.empty() && now - last_traffic_ns > idle_ns) {
        spdlog::info("no datagram for {:.1f} s: stopping", static_cast<double>(now - last_traffic_ns) * 1e-9);
        break;
      }
      std::int64_t wake = now + kMaxSleepNs;
      if (!heap_.empty()) {
        wake = std::min(wake, heap_.front().release_ns - spin_ns);
      }
      if (wake > now) {
        mirror_live();  // before a sleep: off the release path
        sleep_until_monotonic(wake);
      }
      // Otherwise within the spin window: loop, polling the sockets, until the release is due.
    }
    for (const Pending& p : heap_) {
      ++dirs_[slots_[p.slot].direction].stats.pending_at_exit;
    }
  }

  [[nodiscard]] const Direction& direction(int i) const { return dirs_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] const LiveDirection& live(int i) const { return live_[static_cast<std::size_t>(i)]; }

 private:
  void mirror_live() {
    for (std::size_t d = 0; d < 2; ++d) {
      const DirectionStats& s = dirs_[d].stats;
      LiveDirection& l = live_[d];
      l.received.store(s.received, std::memory_order_relaxed);
      l.delivered.store(s.delivered, std::memory_order_relaxed);
      l.lost.store(s.lost, std::memory_order_relaxed);
      l.reordered.store(s.reordered, std::memory_order_relaxed);
      l.dropped_overflow.store(s.dropped_overflow, std::memory_order_relaxed);
    }
  }

  // Drains both sockets; true when anything arrived.
  bool poll() {
    bool any = false;
    for (int d = 0; d < 2; ++d) {
      rths::UdpLink& in = *from_[static_cast<std::size_t>(d)];
      for (int i = 0; i < kMaxReceivesPerPoll; ++i) {
        std::array<std::byte, rths::kMaxDatagramBytes>& buffer = scratch_;
        const std::size_t n = in.receive(buffer);
        if (n == 0) {
          break;
        }
        any = true;
        if (!in.has_peer()) {
          // The relay cannot authenticate (it holds no key): the first sender is taken for the
          // numerical node, and the nodes themselves drop whatever a stranger sends through it.
          in.adopt_last_source();
        }
        // The kernel stamped the arrival in CLOCK_REALTIME: its age now, subtracted from the monotonic
        // clock, places the arrival on the time base of the releases.
        const std::int64_t mono = rths::monotonic_ns();
        const std::int64_t age = std::max<std::int64_t>(0, realtime_ns() - in.last_receive_ns());
        accept(d, std::span<const std::byte>(buffer.data(), n), mono - age);
      }
    }
    return any;
  }

  void accept(int d, std::span<const std::byte> datagram, std::int64_t arrival_ns) {
    Direction& dir = dirs_[static_cast<std::size_t>(d)];
    ++dir.stats.received;
    const std::uint64_t seq = dir.next_seq++;
    std::uint8_t& waiting = dir.copies_waiting[seq % kSeqRing];
    waiting = 0;
    const rths::PacketFate fate = dir.impairment.next_packet();
    if (fate.lost()) {
      ++dir.stats.lost;
    }
    if (fate.copies > 1) {
      ++dir.stats.duplicated;
    }
    for (int c = 0; c < fate.copies; ++c) {
      if (free_.empty()) {
        ++dir.stats.dropped_overflow;
        continue;
      }
      std::int64_t release_ns = arrival_ns + static_cast<std::int64_t>(fate.delay_s[static_cast<std::size_t>(c)] * 1e9);
      if (dir.impairment.preserves_order()) {
        release_ns = std::max(release_ns, dir.last_release_ns);
        dir.last_release_ns = release_ns;
      }
      const std::uint32_t s = free_.back();
      free_.pop_back();
      Slot& slot = slots_[s];
      std::copy(datagram.begin(), datagram.end(), slot.data.begin());
      slot.size = datagram.size();
      slot.seq = seq;
      slot.direction = d;
      heap_.push_back(Pending{release_ns, order_++, s});
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      ++waiting;
    }
    advance_min_pending(dir);
  }

  void release() {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Pending p = heap_.back();
    heap_.pop_back();
    Slot& slot = slots_[p.slot];
    Direction& dir = dirs_[static_cast<std::size_t>(slot.direction)];
    const std::uint64_t errors_before = dir.out->counters().send_errors + dir.out->counters().unsent;
    // Lateness is taken as the datagram is handed to the kernel: on loopback sendto() itself runs the
    // receiver's network stack (10-20 us) and that is the receiving host's time, not the relay's.
    const std::int64_t sent_ns = rths::monotonic_ns();
    dir.out->send(std::span<const std::byte>(slot.data.data(), slot.size));
    if (dir.out->counters().send_errors + dir.out->counters().unsent != errors_before) {
      ++dir.stats.send_errors;
    } else {
      ++dir.stats.delivered;
    }
    dir.stats.lateness.record(sent_ns - p.release_ns);
    // Reordered: released while a datagram that arrived before it is still waiting.
    if (dir.min_pending < slot.seq) {
      ++dir.stats.reordered;
    }
    --dir.copies_waiting[slot.seq % kSeqRing];
    advance_min_pending(dir);
    free_.push_back(p.slot);
  }

  static void advance_min_pending(Direction& dir) {
    // A datagram overtaken by more than the ring's span stops being tracked (counts only, never delivery).
    if (dir.next_seq - dir.min_pending > kSeqRing / 2) {
      dir.min_pending = dir.next_seq - kSeqRing / 2;
    }
    while (dir.min_pending < dir.next_seq && dir.copies_waiting[dir.min_pending % kSeqRing] == 0) {
      ++dir.min_pending;
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<Pending> heap_;  // min-heap by release time
  std::uint64_t order_ = 0;
  std::array<Direction, 2> dirs_;       // 0: numerical -> site, 1: site -> numerical
  std::array<rths::UdpLink*, 2> from_;  // where each direction's datagrams come from
  std::array<LiveDirection, 2> live_;
  std::array<std::byte, rths::kMaxDatagramBytes> scratch_{};
};

double us(std::int64_t ns) {
  return static_cast<double>(ns) * 1e-3;
}

// One direction's counters, with what its receiving socket dropped itself (in).
rths::results::RelayDirection direction_summary(const Direction& dir, const rths::UdpCounters& in) {
  const DirectionStats& s = dir.stats;
  rths::results::RelayDirection out;
  out.set_received(s.received);
  out.set_delivered(s.delivered);
  out.set_lost(s.lost);
  out.set_duplicated(s.duplicated);
  out.set_reordered(s.reordered);
  out.set_dropped_overflow(s.dropped_overflow);
  out.set_send_errors(s.send_errors);
  out.set_pending_at_exit(s.pending_at_exit);
  out.set_foreign(in.foreign);
  out.set_oversized(in.oversized);
  rths::results::RelayLateness& lateness = *out.mutable_lateness_us();
  lateness.set_count(s.lateness.count());
  lateness.set_p50(us(s.lateness.percentile(50)));
  lateness.set_p99(us(s.lateness.percentile(99)));
  lateness.set_p99_9(us(s.lateness.percentile(99.9)));
  lateness.set_max(us(s.lateness.max_ns()));
  return out;
}

std::string summary_line(const Direction& dir) {
  const DirectionStats& s = dir.stats;
  char line[512];
  std::snprintf(line, sizeof line,
                "%-8s received %llu, delivered %llu, lost %llu, duplicated %llu, reordered %llu, overflow %llu; "
                "lateness p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us",
                dir.name, static_cast<unsigned long long>(s.received), static_cast<unsigned long long>(s.delivered),
                static_cast<unsigned long long>(s.lost), static_cast<unsigned long long>(s.duplicated),
                static_cast<unsigned long long>(s.reordered), static_cast<unsigned long long>(s.dropped_overflow),
                us(s.lateness.percentile(50)), us(s.lateness.percentile(99)), us(s.lateness.percentile(99.9)),
                us(s.lateness.max_ns()));
  return line;
}

// What the command line asks for.
struct Options {
  std::string site;
  rths::HostPort listen;
  rths::HostPort to;
  std::filesystem::path out;
  std::vector<std::string> overrides;
  double idle_s = 2.0;
  double spin_us = static_cast<double>(kSpinNs) / 1e3;
  bool quiet = false;
  rths::TelemetryOptions telemetry;
};

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-relay", "a UDP relay that imposes a site's link impairments (rths)");
  cli.command("", "CONFIG", "");
  cli.description(R"(Sits between the numerical node and site NAME. The numerical node sends to --listen (point
site[NAME].address at it); each datagram is forwarded to --to (where rths-physical serve listens)
after the delay, loss and duplication of site[NAME].link.forward; the site's answers go back to the
numerical node (the sender of the first datagram) through site[NAME].link.backward. Delays count
from the kernel's receive timestamp; order is kept unless the impairment allows reordering.)");
  rths::site_option(cli, o.site, "The site whose link is imposed (site.name in CONFIG).");
  cli.option(
         "listen", "HOST:PORT", [&o](const std::string& v) { o.listen = rths::parse_listen_address(v); },
         "Address the numerical node sends to; port 0 picks a free port (printed as\n"
         "\"relaying on HOST:PORT\").")
      .required();
  cli.option(
         "to", "HOST:PORT", [&o](const std::string& v) { o.to = rths::parse_address(v, false); }, "The site's address.")
      .required();
  cli.repeated("set", "PATH=VALUE", o.overrides, "Override a config field (as rths-numerical --set).");
  cli.path("out", "DIR", o.out,
           "Folder for relay_<NAME>.json and relay_<NAME>.log (created).\n"
           "Default: runs/<config name>-relay-<site>-<date>-<time>");
  cli.number("idle-exit", "SECONDS", o.idle_s, {0.0, 86400.0, false, "a time in seconds"},
             "Stop after this long without a datagram once traffic has started (default 2;\n"
             "0: only SIGINT/SIGTERM stop it; at most 86400).");
  cli.number("spin-us", "US", o.spin_us, {0.0, 1e6, false, "a time in microseconds"},
             "Sleep until this long before each release, then busy-wait to it (default 50,\n"
             "at most 1e6; raise it to the host's wake-up latency, see rths-bench-loop).");
  rths::console_options(cli, o.telemetry,
                        "Publish each direction's counters to rths-console listening there. Default: none.");
  cli.flag("quiet", o.quiet, "Print only errors (the summary is still written).").alias("-q");
  cli.epilogue(R"(On exit it prints and writes per direction: received, delivered, lost, duplicated, reordered (released
while a datagram that arrived earlier was still waiting), dropped_overflow, and the release lateness
(actual send time - target) p50/p99/p99.9/max in microseconds.

Exit codes: 0 stopped normally (idle or SIGINT/SIGTERM); 1 failure; 2 bad command line or config.
)");
  return cli;
}

int relay(const std::filesystem::path& config, const Options& o, const std::filesystem::path& out,
          const std::atomic<bool>& stop) {
  const std::string& site_name = o.site;
  const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides);
  const rths::config::Site* site = nullptr;
  for (const auto& s : loaded.experiment.site()) {
    if (s.name() == site_name) {
      site = &s;
    }
  }
  if (site == nullptr) {
    throw rths::ConfigError(loaded.source.string() + ": no site named \"" + site_name + "\"");
  }
  const rths::HostPort& listen = o.listen;
  const rths::HostPort& to = o.to;

  asio::io_context io;
  rths::UdpLink to_numerical(io, listen.host, listen.port);
  to_numerical.lock_peer(true);  // the first sender is the numerical node; strangers are dropped
  rths::UdpLink to_site(io, to.host.find(':') != std::string::npos ? "::" : "0.0.0.0", 0);
  to_site.set_peer(to.host, to.port);
  to_site.lock_peer(true);
  Relay relay(loaded, *site, to_numerical, to_site);

  // The node's priority and locked memory; not its CPU, which the relay would contend for.
  rths::RealtimeOptions rt = rths::realtime_options(loaded.experiment);
  rt.cpu = -1;
  try {
    for (const std::string& warning : rths::acquire_realtime(rt)) {
      spdlog::warn("{}", warning);
    }
  } catch (const std::invalid_argument& e) {
    throw rths::ConfigError(std::string("realtime.priority: ") + e.what());
  }

  const std::string where = listen.host + ":" + std::to_string(to_numerical.local_port());
  spdlog::info("site {}: relaying on {} to {}:{} (forward: {}; backward: {})", site_name, where, to.host, to.port,
               site->link().forward().ShortDebugString(), site->link().backward().ShortDebugString());
  std::printf("relaying on %s\n", where.c_str());
  std::fflush(stdout);

  std::optional<rths::TelemetryPublisher> telemetry;
  if (!o.telemetry.console.empty()) {
    telemetry.emplace("relay " + site_name, o.telemetry);
    for (int d = 0; d < 2; ++d) {
      const LiveDirection& live = relay.live(d);
      const std::string name = d == 0 ? "forward_" : "backward_";
      telemetry->add_figure(name + "received", live.received);
      telemetry->add_figure(name + "delivered", live.delivered);
      telemetry->add_figure(name + "lost", live.lost);
      telemetry->add_figure(name + "reordered", live.reordered);
      telemetry->add_figure(name + "dropped_overflow", live.dropped_overflow);
    }
    telemetry->set_state(rths::NodeState::kRunning);
    telemetry->start();
  }
  relay.run(stop, std::llround(o.idle_s * 1e9), std::llround(o.spin_us * 1e3));
  if (telemetry) {
    telemetry->set_state(rths::NodeState::kStopped, "exit 0: relayed until idle or stopped");
  }

  rths::results::RelaySummary summary;
  summary.set_site(site_name);
  summary.set_listen(where);
  summary.set_numerical(to_numerical.peer_description());
  summary.set_to(to_site.peer_description());
  *summary.mutable_forward() = direction_summary(relay.direction(0), to_numerical.counters());
  *summary.mutable_backward() = direction_summary(relay.direction(1), to_site.counters());
  summary.set_exit_code(rths::kExitCompleted);
  rths::write_results_json(out / ("relay_" + site_name + ".json"), summary);
  for (int d = 0; d < 2; ++d) {
    const std::string line = summary_line(relay.direction(d));
    spdlog::info("{}", line);
    if (!o.quiet) {
      std::printf("%s\n", line.c_str());
    }
  }
  std::fflush(stdout);
  return rths::kExitCompleted;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  return rths::run_program(argc, argv, cli, [&o](const rths::CommandLine& line) {
    const std::filesystem::path config = line.operands().front();
    const auto out = o.out.empty() ? rths::default_run_folder(config, "-relay-" + o.site) : o.out;
    return rths::ProgramRun([&o, config, out](const auto& stop) {
             rths::load_telemetry_key(o.telemetry);
             return relay(config, o, out, stop);
           })
        .log_to(out, "relay_" + o.site + ".log")
        .quiet(o.quiet)
        .stop_on_signals();
  });
}
