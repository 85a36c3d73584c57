#include "rths/common/command_line.hpp"

#include "rths/common/config.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace rths {

std::string CommandLine::option(const std::string& name, const std::string& fallback) const {
  const auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

bool answered_help_or_version(int argc, char** argv, const char* usage, const char* version_line) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      return true;
    }
    if (a == "--version") {
      std::puts(version_line);
      return true;
    }
  }
  return false;
}

CommandLine parse_command_line(int argc, char** argv, const std::set<std::string>& valued,
                               const std::set<std::string>& flags, std::size_t max_positionals) {
  CommandLine cl;
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    if (a.starts_with("--") && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_value = true;
    }
    const auto take = [&]() -> std::string {
      if (has_value) {
        return value;
      }
      if (i + 1 >= args.size()) {
        throw std::invalid_argument(fmt::format("{} needs a value (see --help)", a));
      }
      return args[++i];
    };
    if (a == "--out") {
      cl.out = take();
    } else if (a == "--set") {
      cl.overrides.push_back(take());
    } else if (a == "--quiet" || a == "-q") {
      cl.quiet = true;
    } else if (a.starts_with("--") && valued.contains(a.substr(2))) {
      cl.options[a.substr(2)] = take();
    } else if (a.starts_with("--") && flags.contains(a.substr(2))) {
      if (has_value) {
        throw std::invalid_argument(fmt::format("{} takes no value, found {}={} (see --help)", a, a, value));
      }
      cl.flags.insert(a.substr(2));
    } else if (a.starts_with("-")) {
      throw std::invalid_argument(fmt::format("unknown option {} (see --help)", a));
    } else if (cl.command.empty()) {
      cl.command = a;
    } else if (cl.positionals.size() < max_positionals) {
      cl.positionals.push_back(a);
      if (cl.positionals.size() == 1) {
        cl.config = a;
      }
    } else {
      throw std::invalid_argument(fmt::format("unexpected argument {} (see --help)", a));
    }
  }
  return cl;
}

std::filesystem::path default_run_folder(const std::filesystem::path& config, const std::string& suffix) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::array<char, 32> stamp{};
  std::strftime(stamp.data(), stamp.size(), "%Y%m%d-%H%M%S", &local);
  return std::filesystem::path("runs") / (config.stem().string() + suffix + "-" + stamp.data());
}

std::shared_ptr<spdlog::logger> start_logging(const std::string& program, const std::filesystem::path& dir,
                                              const std::string& log_name, bool quiet) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(quiet ? spdlog::level::err : spdlog::level::warn);
  console->set_pattern(program + ": %l: %v");
  std::vector<spdlog::sink_ptr> sinks{console};
  if (!dir.empty()) {
    std::filesystem::create_directories(dir);
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir / log_name).string(), true));
  }
  auto log = std::make_shared<spdlog::logger>(program, sinks.begin(), sinks.end());
  log->set_level(spdlog::level::info);
  // A warning or error reaches the file at once; everything else within a second, from spdlog's own
  // flusher thread (never a step thread: nothing logs inside a step), so a node killed with kill -9
  // leaves its log up to the last second.
  log->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(log);
  spdlog::flush_every(std::chrono::seconds(1));
  return log;
}

int run_logged(const std::function<int()>& body) {
  int code = 1;
  try {
    code = body();
  } catch (const ConfigError& e) {
    spdlog::error("{}", e.what());
    code = 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    code = 1;
  }
  spdlog::default_logger()->flush();
  return code;
}

namespace {
// Written by the signal handler, read by the step loops: necessarily a mutable global.
std::atomic<bool> g_stop{false};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
extern "C" void on_stop_signal(int /*signal*/) {
  g_stop.store(true);
}
}  // namespace

const std::atomic<bool>& install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return g_stop;
}

}  // namespace rths
