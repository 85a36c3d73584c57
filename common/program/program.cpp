#include "common/program/program.hpp"

#include "common/config/config.hpp"
#include "common/core/exit_codes.hpp"
#include "common/records/telemetry.hpp"

#include <cstdio>
#include <exception>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace rths {

ProgramRun& ProgramRun::log_to(std::filesystem::path dir, std::string name) {
  log_dir = std::move(dir);
  log_name = std::move(name);
  return *this;
}

ProgramRun& ProgramRun::quiet(bool on) {
  errors_only = on;
  return *this;
}

ProgramRun& ProgramRun::stop_on_signals() {
  signals_stop = true;
  return *this;
}

int run_program(int argc, char** argv, CommandLine& cli, const std::function<ProgramRun(const CommandLine&)>& plan) {
  if (const auto answered = cli.parse(argc, argv)) {
    return *answered;
  }
  std::optional<ProgramRun> run;
  try {
    run.emplace(plan(cli));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", cli.program().c_str(), e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", cli.program().c_str(), one_line(e.what()).c_str());
    return kExitFailure;
  }
  if (const auto failed = start_run_log(cli.program(), run->log_dir, run->log_name, run->errors_only)) {
    return *failed;
  }
  static const std::atomic<bool> kNeverStopped{false};
  const std::atomic<bool>& stop = run->signals_stop ? install_stop_signals() : kNeverStopped;
  return run_logged([&] { return run->work(stop); });
}

CommandLine& site_option(CommandLine& cli, std::string& site, std::string help) {
  return cli
      .option(
          "site", "NAME",
          [&site](const std::string& v) {
            if (v.empty()) throw Expected("a NAME (not empty)");
            if (!site_name_problem(v).empty()) {
              throw Expected(fmt::format("a site name of 1 to {} letters, digits, '_' or '-'", kMaxNameBytes));
            }
            site = v;
          },
          std::move(help))
      .required();
}

CommandLine& console_options(CommandLine& cli, TelemetryOptions& telemetry, std::string console_help,
                             std::vector<std::string> only_for, std::string key_help, std::string rate_help) {
  const auto narrowed = [&only_for](CommandLine& c) -> CommandLine& {
    return only_for.empty() ? c : c.only_for(only_for);
  };
  narrowed(cli.option(
      "console", "HOST:PORT", [&telemetry](const std::string& v) { telemetry.console = console_address(v); },
      std::move(console_help)));
  narrowed(cli.path("console-key", "FILE", telemetry.key_file, std::move(key_help)));
  return narrowed(cli.option(
      "telemetry-hz", "HZ", [&telemetry](const std::string& v) { telemetry.rate_hz = telemetry_rate(v); },
      std::move(rate_help)));
}

}  // namespace rths
