#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <spdlog/logger.h>

namespace rths {

// The command line shared by the rths executables: COMMAND CONFIG, --out, repeated --set, --quiet,
// plus each program's own valued options and flags. Kept small on purpose (STYLE: main stays thin).
struct CommandLine {
  std::string command;
  std::filesystem::path config;          // the first positional argument after the command
  std::vector<std::string> positionals;  // every positional argument after the command
  std::filesystem::path out;
  std::vector<std::string> overrides;
  bool quiet = false;
  std::map<std::string, std::string> options;  // --name VALUE or --name=VALUE
  std::set<std::string> flags;                 // --name

  [[nodiscard]] bool has(const std::string& name) const { return options.contains(name) || flags.contains(name); }
  [[nodiscard]] std::string option(const std::string& name, const std::string& fallback = {}) const;
};

// Prints usage for -h/--help or version_line for --version anywhere on the command line; returns
// whether it did (the program then exits 0).
bool answered_help_or_version(int argc, char** argv, const char* usage, const char* version_line);

// Throws std::invalid_argument with a one-line message (unknown option, missing value, ...).
// At most max_positionals arguments may follow the command (one CONFIG by default).
CommandLine parse_command_line(int argc, char** argv, const std::set<std::string>& valued,
                               const std::set<std::string>& flags, std::size_t max_positionals = 1);

// runs/<stem>-<date>-<time> under the current folder.
std::filesystem::path default_run_folder(const std::filesystem::path& config, const std::string& suffix = {});

// Creates the run folder and a logger that writes everything to <dir>/<log_name> and warnings and errors
// (errors only with quiet) to stderr as "<program>: <level>: <message>". Installs it as the default.
// The file is flushed at every warning and error and at least once a second (a thread of spdlog's).
// An empty dir logs to stderr only.
std::shared_ptr<spdlog::logger> start_logging(const std::string& program, const std::filesystem::path& dir,
                                              const std::string& log_name, bool quiet);

// Runs a program's body: a ConfigError becomes exit 2 and any other exception exit 1, each logged as
// one error line; the log is flushed in every case.
int run_logged(const std::function<int()>& body);

// SIGINT and SIGTERM set the returned flag (the step loops read it and stop safely) instead of
// killing the process, so recordings are flushed.
const std::atomic<bool>& install_stop_signals();

}  // namespace rths
