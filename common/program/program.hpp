#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/command_line.hpp"

namespace rths {

struct TelemetryOptions;

// The skeleton every rths executable's main runs on (docs/architecture.md §10), so that a main is
// only its own options and its own work. What a program does once its command line is read: its
// work, where it logs, whether a signal stops it:
//   return ProgramRun([&](const auto& stop) { return serve(o, stop); }).log_to(out, "site.log").stop_on_signals();
struct ProgramRun {
  using Work = std::function<int(const std::atomic<bool>& stop)>;

  explicit ProgramRun(Work what) : work(std::move(what)) {}
  // Everything to dir/name (dir created) besides warnings and errors to stderr. Without it, or
  // with an empty dir: warnings and errors on stderr only.
  ProgramRun& log_to(std::filesystem::path dir, std::string name);
  // Only errors on stderr.
  ProgramRun& quiet(bool on);
  // SIGINT and SIGTERM set the flag the work is given (it stops safely and flushes its records)
  // instead of killing the process. Without it a signal ends the program as it would any other.
  ProgramRun& stop_on_signals();

  Work work;
  std::filesystem::path log_dir;
  std::string log_name;
  bool errors_only = false;
  bool signals_stop = false;
};

// Runs a program on the skeleton, in this order:
//  1. reads the command line: --help and --version are answered on stdout (exit 0), a bad command
//     line gets one line "PROGRAM: error: WHAT" on stderr and exit 2 (kExitBadInput);
//  2. plan(cli) chooses the run from what was read (a command, its operands); a UsageError it
//     throws is a bad command line as in 1 (a rule between options the declarations cannot state);
//  3. starts the log (start_logging): a folder that cannot be made gets one line "PROGRAM: cannot
//     write DIR: why" and exit 2, before anything ran;
//  4. installs the stop signals when the run asks for them;
//  5. runs the work and returns its exit code; a ConfigError escaping it is logged (a line per
//     problem) and exit 2, any other exception one error line and exit 1 (kExitFailure). The log is
//     flushed in every case.
int run_program(int argc, char** argv, CommandLine& cli, const std::function<ProgramRun(const CommandLine&)>& plan);

// Options more than one executable takes, declared once so that they are spelled, checked and
// explained alike.

// --site NAME (required): the site a program serves, relays or emulates, checked as the config checks
// a site's name (it becomes part of the program's file names). help: what the site is to this program.
CommandLine& site_option(CommandLine& cli, std::string& site, std::string help);

// --console HOST:PORT, --console-key FILE and --telemetry-hz HZ: where a node publishes its telemetry
// (rths-console's --telemetry), the key that seals it and how often.
// console_help says what is published; only_for, the commands that take them (empty: every command).
inline constexpr const char* kConsoleKeyHelp =
    "(with --console) The console's key file, the one rths-console holds (its --key).";
inline constexpr const char* kTelemetryRateHelp = "Telemetry datagrams per second, from 1 to 1000. Default 50.";
CommandLine& console_options(CommandLine& cli, TelemetryOptions& telemetry, std::string console_help,
                             std::vector<std::string> only_for = {}, std::string key_help = kConsoleKeyHelp,
                             std::string rate_help = kTelemetryRateHelp);

}  // namespace rths
