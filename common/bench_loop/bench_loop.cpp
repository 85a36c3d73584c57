// rths-bench-loop: the bare clock_nanosleep loop of the nodes, with nothing in the tick, to show what
// lateness this host gives a node before any node work is added; with --links N, each tick does what
// the kernel and the UDP link cost a numerical node per remote site (one datagram sent and received
// over 127.0.0.1, drained as the node drains a site's link), so that a node's per-site compute can be
// set beside this host's floor: through a UdpLink per link, or with --shared-socket through one
// UdpHub for all, as the numerical node exchanges with its sites. Thin: parse, acquire, run, report.
#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/transport/udp_hub.hpp"
#include "common/transport/udp_link.hpp"

namespace {

struct Options {
  rths::RealtimeOptions rt;
  double seconds = 10.0;
  int links = 0;               // datagrams sent and received per tick, each over its own pair of UDP links
  bool shared_socket = false;  // the node's end of every link on one socket (UdpHub)
};

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-bench-loop", "lateness of the bare real-time loop on this host");
  cli.description(
      R"(Runs the periodic loop of the rths nodes (absolute CLOCK_MONOTONIC deadlines, clock_nanosleep) with an
empty tick and prints how late the ticks woke: p50, p99, p99.9, max, the share of ticks later than half
a period, and the time spent in the tick. Ctrl-C ends the run early and still prints the figures.)");
  cli.number("rate", "HZ", o.rt.rate_hz, {0.0, 1e5, true, "a rate in Hz"}, "Loop rate, up to 100000. Default 1024.");
  cli.number("seconds", "S", o.seconds, {0.0, 86400.0, true, "a duration in seconds"},
             "Run length, up to 86400. Default 10.");
  cli.option(
      "spin-us", "U",
      [&o](const std::string& v) {
        o.rt.spin_ns = std::llround(rths::parse_number(v, {0.0, 1e6, false, "a time in microseconds"}) * 1e3);
      },
      "Sleep until U µs before each deadline, then busy-wait to it (0 to 1e6). Default 0.");
  cli.whole("priority", "P", o.rt.priority, {1, 99, "a SCHED_FIFO priority"},
            "SCHED_FIFO priority 1..99 (needs CAP_SYS_NICE or ulimit -r). Default: normal scheduling.");
  cli.flag("lock", o.rt.lock_memory,
           "Lock memory (mlockall) and pre-fault the stack (needs CAP_IPC_LOCK or ulimit -l).");
  cli.whole("cpu", "N", o.rt.cpu, {0, CPU_SETSIZE - 1, "a CPU number"},
            "Pin the loop to CPU N (best an isolated one, isolcpus=N).");
  cli.whole("links", "N", o.links, {0, 1024, "a number of links"},
            "Each tick sends one datagram on each of N links over 127.0.0.1 and drains them, as a\n"
            "numerical node does per remote site (0 to 1024). Default 0: an empty tick.");
  cli.flag("shared-socket", o.shared_socket,
           "With --links: the node's end of every link on one socket, read and written once per tick\n"
           "(recvmmsg, sendmmsg), as the numerical node's UdpHub; the sites' answers are not timed.");
  cli.epilogue(R"(What the process may not have is reported as a warning and the run goes on without it.
Exit codes: 0 success; 2 bad command line.
)");
  return cli;
}

// Scheduling as granted, not as asked: the warnings say what was refused.
std::string scheduling_granted(const rths::RealtimeOptions& rt) {
  int policy = SCHED_OTHER;
  sched_param param{};
  pthread_getschedparam(pthread_self(), &policy, &param);
  std::string text = policy == SCHED_FIFO ? fmt::format("SCHED_FIFO {}", param.sched_priority) : "normal scheduling";
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (rt.cpu >= 0 && pthread_getaffinity_np(pthread_self(), sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) == 1 &&
      CPU_ISSET(static_cast<std::size_t>(rt.cpu), &cpus)) {
    text += fmt::format(", pinned to CPU {}", rt.cpu);
  } else {
    text += ", any CPU";
  }
  return text;
}

std::string us(std::int64_t ns) {
  return fmt::format("{:.1f} µs", static_cast<double>(ns) / 1e3);
}

class EmptyTick final : public rths::TickHandler {
 public:
  bool tick(std::int64_t /*k*/) override { return true; }
};

// The kernel's and the link's share of a numerical node's step per remote site: one datagram of a
// command packet's size sent to each site and one received from it, the link drained to empty as
// the node drains it (receive() until it returns 0). Senders and receivers are UdpLinks on
// 127.0.0.1, so loopback delivery (which the kernel does in the sender's system call) is included.
class LinksTick final : public rths::TickHandler {
 public:
  static constexpr std::size_t kDatagramBytes = 120;  // about a sealed command packet of one channel

  LinksTick(asio::io_context& io, int links) {
    for (int i = 0; i < links; ++i) {
      auto receiver = std::make_unique<rths::UdpLink>(io, "127.0.0.1", 0);
      auto sender = std::make_unique<rths::UdpLink>(io, "127.0.0.1", 0);
      sender->set_peer("127.0.0.1", receiver->local_port());
      senders_.push_back(std::move(sender));
      receivers_.push_back(std::move(receiver));
    }
  }

  bool tick(std::int64_t /*k*/) override {
    for (const auto& sender : senders_) sender->send(std::span<const std::byte>(datagram_.data(), kDatagramBytes));
    for (const auto& receiver : receivers_) {
      while (receiver->receive(buffer_) > 0) ++received_;
    }
    return true;
  }
  [[nodiscard]] std::uint64_t received() const { return received_; }

 private:
  std::vector<std::unique_ptr<rths::UdpLink>> senders_;
  std::vector<std::unique_ptr<rths::UdpLink>> receivers_;
  std::array<std::byte, kDatagramBytes> datagram_{};
  std::array<std::byte, rths::kMaxDatagramBytes> buffer_{};
  std::uint64_t received_ = 0;
};

// The same exchange as LinksTick with the node's ends on one UdpHub: each tick the "sites" (a UdpLink
// each) answer the datagram they were sent with one of their own, untimed, as other processes would;
// then the node's part is timed: begin_step() reads every answer, each hub link sends, end_step()
// hands the sends to the kernel at once.
class SharedSocketTick final : public rths::TickHandler {
 public:
  SharedSocketTick(asio::io_context& io, int links) : hub_(io, "127.0.0.1", 0) {
    for (int i = 0; i < links; ++i) {
      auto site = std::make_unique<rths::UdpLink>(io, "127.0.0.1", 0);
      site->set_peer("127.0.0.1", hub_.local_port());
      node_ends_.push_back(&hub_.add_peer(hub_.resolve("127.0.0.1", site->local_port())));
      sites_.push_back(std::move(site));
    }
  }

  bool tick(std::int64_t k) override {
    for (const auto& site : sites_) {
      while (site->receive(buffer_) > 0) {
      }
      if (k > 0) site->send(std::span<const std::byte>(datagram_.data(), LinksTick::kDatagramBytes));
    }
    const std::int64_t began = rths::monotonic_ns();
    hub_.begin_step();
    for (rths::HubLink* end : node_ends_) {
      while (end->receive(buffer_) > 0) ++received_;
      end->send(std::span<const std::byte>(datagram_.data(), LinksTick::kDatagramBytes));
    }
    hub_.end_step();
    node_.record(rths::monotonic_ns() - began);
    return true;
  }
  [[nodiscard]] std::uint64_t received() const { return received_; }
  [[nodiscard]] const rths::LatencyHistogram& node_time() const { return node_; }

 private:
  rths::UdpHub hub_;
  std::vector<rths::HubLink*> node_ends_;
  std::vector<std::unique_ptr<rths::UdpLink>> sites_;
  std::array<std::byte, LinksTick::kDatagramBytes> datagram_{};
  std::array<std::byte, rths::kMaxDatagramBytes> buffer_{};
  std::uint64_t received_ = 0;
  rths::LatencyHistogram node_;
};

void report(const rths::RealtimeLoop& loop, const rths::RunResult& result, std::int64_t planned) {
  const rths::LoopStats& s = loop.stats();
  const double period_us = 1e6 / loop.options().rate_hz;
  if (result.end != rths::LoopEnd::kCompleted) {
    fmt::print("{} after {} of {} ticks\n", rths::to_string(result.end), result.steps_run, planned);
  }
  const auto line = [](const char* name, const rths::LatencyHistogram& h) {
    fmt::print("{:<9} p50 {:>9}  p99 {:>9}  p99.9 {:>9}  max {:>9}  mean {:.1f} µs\n", name, us(h.percentile(50)),
               us(h.percentile(99)), us(h.percentile(99.9)), us(h.max_ns()), h.mean_ns() / 1e3);
  };
  line("lateness", s.lateness);
  line("compute", s.compute);
  const double share = s.steps == 0 ? 0.0 : 100.0 * static_cast<double>(s.late) / static_cast<double>(s.steps);
  fmt::print("late by more than half a period ({:.1f} µs): {} of {} ticks ({:.4f} %); overruns: {}\n", period_us / 2,
             s.late, s.steps, share, s.overruns);
}

// The loop as asked, until its end or Ctrl-C; the figures either way.
int bench(Options& opt, const std::atomic<bool>& stop) {
  bool locked = opt.rt.lock_memory;
  for (const std::string& warning : rths::acquire_realtime(opt.rt)) {
    spdlog::warn("{}", warning);
    locked = locked && !warning.starts_with("memory lock refused");
  }

  rths::RealtimeLoop loop(opt.rt);
  const auto steps = static_cast<std::int64_t>(std::llround(opt.seconds * opt.rt.rate_hz));
  fmt::print("bare loop: {} ticks at {:g} Hz ({:g} s), spin {}, {}, memory {}\n", steps, opt.rt.rate_hz, opt.seconds,
             us(opt.rt.spin_ns), scheduling_granted(opt.rt), locked ? "locked" : "not locked");
  std::fflush(stdout);
  asio::io_context io;
  EmptyTick empty;
  LinksTick links(io, opt.shared_socket ? 0 : opt.links);
  SharedSocketTick shared(io, opt.shared_socket ? opt.links : 0);
  rths::TickHandler& tick = opt.links == 0      ? static_cast<rths::TickHandler&>(empty)
                            : opt.shared_socket ? static_cast<rths::TickHandler&>(shared)
                                                : static_cast<rths::TickHandler&>(links);
  // Step 0 a few periods ahead, so that start-up does not make it late.
  const std::int64_t start = rths::monotonic_ns() + 4 * loop.step_offset_ns(1);
  const rths::RunResult result = loop.run(start, 0, steps, tick, stop);
  report(loop, result, steps);
  if (opt.links > 0) {
    const rths::LatencyHistogram& compute = opt.shared_socket ? shared.node_time() : loop.stats().compute;
    fmt::print(
        "per link: compute p50 {:.2f} µs, p99 {:.2f} µs (a datagram sent and received over 127.0.0.1 on each "
        "of {} links per tick, {}; {} of {} received)\n",
        static_cast<double>(compute.percentile(50)) / 1e3 / opt.links,
        static_cast<double>(compute.percentile(99)) / 1e3 / opt.links, opt.links,
        opt.shared_socket ? "the node's ends on one socket" : "a socket per end",
        opt.shared_socket ? shared.received() : links.received(),
        static_cast<std::int64_t>(opt.links) * loop.stats().steps);
  }
  return rths::kExitCompleted;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  rths::CommandLine cli = command_line(opt);
  return rths::run_program(argc, argv, cli, [&opt](const rths::CommandLine&) {
    return rths::ProgramRun([&opt](const auto& stop) { return bench(opt, stop); }).stop_on_signals();
  });
}
