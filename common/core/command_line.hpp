#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "common/core/address.hpp"
#include "common/core/text.hpp"

namespace rths {

class ConfigError;

// A bad command line, as one line that names the option or argument and what was expected
// ("--jobs: expected a whole number from 1 to 1024, got '-3'"). Printed as "PROGRAM: error: WHAT";
// the program exits 2 without doing anything.
// The value it quotes is shown with its control characters escaped (one_line), as ConfigError does.
class UsageError : public std::invalid_argument {
 public:
  explicit UsageError(const std::string& what) : std::invalid_argument(one_line(what)) {}
};

// Thrown by a value parser with what the value should have been ("a whole number from 1 to 1024");
// the command line adds the option's name and the value it got.
class Expected : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The values an option accepts: min..max, or above min when min_excluded.
struct NumberRange {
  double min = 0.0;
  double max = 0.0;
  bool min_excluded = false;
  std::string what = "a number";  // "a time in seconds", "a rate in Hz": what the message calls it
};
struct WholeRange {
  long long min = 0;
  long long max = 0;
  std::string what = "a whole number";
};

// Typed values, each throwing Expected with what it accepts: a finite number in the range (C locale,
// no blanks), a whole number in the range, host:port (port 1..65535 unless port 0 is allowed).
double parse_number(const std::string& text, const NumberRange& range);
long long parse_whole(const std::string& text, const WholeRange& range);
HostPort parse_address(const std::string& text, bool port_zero_allowed);
// An address this machine can listen on: parse_address with port 0 allowed, and a host that
// resolves here (asks the resolver: call it before a run, never inside one).
HostPort parse_listen_address(const std::string& text);

// The command line of an rths executable, declared once: its commands, their operands and typed
// options. The --help text is made from the declarations (an option cannot be accepted without being
// described), --help and --version are answered, and every bad command line gets one line
// "PROGRAM: error: ..." and exit code 2. Kept in one place so that the six executables parse,
// check and explain alike (STYLE: a main only declares, builds and runs).
class CommandLine {
 public:
  enum class Outcome { kRun, kHelp, kVersion };
  using Setter = std::function<void(const std::string& value)>;

  CommandLine(std::string program, std::string title);

  // Free text shown after the usage lines, and after the options (exit codes, file formats).
  CommandLine& description(std::string text);
  CommandLine& epilogue(std::string text);

  // A command (the first argument) and its operands, e.g. "CONFIG", "DIR..." (one or more), "[FILE]"
  // (optional). A program without commands declares one with an empty name. Help text: one line per
  // '\n', indented by the generator.
  CommandLine& command(std::string name, std::string operands, std::string help);

  // Options in the order of the help. Help text is required (a declaration without it throws
  // std::logic_error, so the program cannot start and its --help test fails). Each option applies
  // to every command unless only_for() narrows it; two options may share a name when they apply to
  // different commands (e.g. --out DIR of a run, --out FILE of calibrate).
  CommandLine& flag(std::string name, bool& target, std::string help);
  CommandLine& option(std::string name, std::string value_name, Setter set, std::string help);
  CommandLine& text(std::string name, std::string value_name, std::string& target, std::string help);
  CommandLine& path(std::string name, std::string value_name, std::filesystem::path& target, std::string help);
  CommandLine& repeated(std::string name, std::string value_name, std::vector<std::string>& target, std::string help);
  CommandLine& number(std::string name, std::string value_name, double& target, NumberRange range, std::string help);
  CommandLine& whole(std::string name, std::string value_name, int& target, WholeRange range, std::string help);

  // Modifiers of the option declared last.
  CommandLine& alias(std::string short_name);  // e.g. "-q"
  CommandLine& only_for(std::vector<std::string> commands);
  CommandLine& required();  // in every command it applies to
  CommandLine& required_for(std::vector<std::string> commands);

  // An option this program does not take, answered with why ("--set: belongs in the study file").
  CommandLine& refuse(std::string name, std::string why);

  // Reads args (without the program name) and sets the declared targets; throws UsageError.
  Outcome parse(const std::vector<std::string>& args);
  // For main: answers --help and --version on stdout (exit 0) and a bad command line with one line
  // on stderr (exit 2); nullopt when the program should run.
  std::optional<int> parse(int argc, char** argv);

  [[nodiscard]] const std::string& command() const { return command_; }
  [[nodiscard]] const std::vector<std::string>& operands() const { return operands_; }
  [[nodiscard]] bool given(const std::string& name) const { return given_.contains(name); }
  [[nodiscard]] const std::string& program() const { return program_; }

  [[nodiscard]] std::string help() const;
  [[nodiscard]] std::string version_line() const;  // "PROGRAM VERSION", the CMake project version
  // Every long option name this program accepts, --help and --version included.
  [[nodiscard]] std::set<std::string> option_names() const;

 private:
  struct Command {
    std::string name;
    std::string operands;
    std::string help;
    std::size_t min_operands = 0;
    std::size_t max_operands = 0;
  };
  struct Option {
    std::string name;
    std::string short_name;
    std::string value_name;  // empty for a flag
    std::string help;
    Setter set;
    bool repeatable = false;
    std::vector<std::string> commands;     // empty: all
    std::vector<std::string> required_in;  // commands that need it
    [[nodiscard]] bool applies_to(const std::string& command) const;
  };

  CommandLine& add(Option option);
  Option& last();
  [[nodiscard]] const Command* find_command(const std::string& name) const;
  [[nodiscard]] std::string synopsis(const Command& c) const;
  [[nodiscard]] std::string unknown_option(const std::string& arg) const;

  std::string program_;
  std::string title_;
  std::string description_;
  std::string epilogue_;
  std::vector<Command> commands_;
  std::vector<Option> options_;
  std::vector<std::pair<std::string, std::string>> refused_;
  std::string command_;
  std::vector<std::string> operands_;
  std::set<std::string> given_;
};

// runs/<stem>-<date>-<time> under the current folder.
std::filesystem::path default_run_folder(const std::filesystem::path& config, const std::string& suffix = {});

// Creates the run folder and a logger that writes everything to <dir>/<log_name> and warnings and errors
// (errors only with quiet) to stderr as "<program>: <level>: <message>". Installs it as the default.
// The file is flushed at every warning and error and at least once a second (a thread of spdlog's).
// An empty dir logs to stderr only.
std::shared_ptr<spdlog::logger> start_logging(const std::string& program, const std::filesystem::path& dir,
                                              const std::string& log_name, bool quiet);

// start_logging for a program's run folder, as a node's main starts: nullopt when it started, else
// exit code 2 after one line "PROGRAM: cannot write DIR: why" on stderr (nothing has run).
std::optional<int> start_run_log(const std::string& program, const std::filesystem::path& dir,
                                 const std::string& log_name, bool quiet);

// Runs a program's body: a ConfigError becomes exit 2 (logged by log_config_error) and any other
// exception exit 1 (one error line); the log is flushed in every case.
int run_logged(const std::function<int()>& body);

// Logs a config's problems as error lines, one each (a config with several has a line counting them
// first).
void log_config_error(const ConfigError& error);

// SIGINT and SIGTERM set the returned flag (the step loops read it and stop safely) instead of
// killing the process, so recordings are flushed.
const std::atomic<bool>& install_stop_signals();
// Sets the flag install_stop_signals() returns, as SIGINT does (a stop requested by rths-console).
void request_stop();

}  // namespace rths
