// rths-bench-loop: the bare clock_nanosleep loop of the nodes, with nothing in the tick, to show what
// lateness this host gives a node before any node work is added. Thin (STYLE): parse,
// acquire, run, report.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/realtime/realtime_loop.hpp"

namespace {

struct Options {
  rths::RealtimeOptions rt;
  double seconds = 10.0;
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
  EmptyTick tick;
  // Step 0 a few periods ahead, so that start-up does not make it late.
  const std::int64_t start = rths::monotonic_ns() + 4 * loop.step_offset_ns(1);
  const rths::RunResult result = loop.run(start, 0, steps, tick, stop);
  report(loop, result, steps);
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
