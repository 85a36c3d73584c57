// rths-numerical: the numerical node's command. Kept thin (STYLE): parse, build, run, report.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "rths/common/config.hpp"
#include "rths/node_numerical/virtual_experiment.hpp"

namespace {

// Exit codes (README "Exit codes").
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

constexpr const char* kUsage = R"(rths-numerical — the numerical node of rths (distributed real-time hybrid simulation)

Usage:
  rths-numerical run CONFIG [--out DIR] [--set PATH=VALUE]... [--quiet]
  rths-numerical --help | --version

Commands:
  run        Run the experiment CONFIG (protobuf text format, schema proto/experiment.proto) in
             virtual time: the numerical node and every site stepped on a simulated clock, packets
             encoded and delayed on in-memory links, then the monolithic reference and the error
             metrics of seed 002 (J_peak, J_RMS, rho, SD) against it.

Options:
  --out DIR         Run folder (created). Default: runs/<config name>-<date>-<time>
  --set PATH=VALUE  Override one config field, e.g. --set ground_motion.scale=0.4,
                    --set site[0].link.forward.delay_s=0.025, --set site[purdue].compensation.mode=NONE.
                    Repeatable; applied in order before validation.
  --quiet           Print only errors.
  -h, --help        This text.
  --version         Program version.

The run folder holds config.textproto (the config as run), numerical.csv, site_<name>.csv per remote
site, reference.csv, summary.json and run.log.

Exit codes: 0 success; 1 run failed; 2 bad command line or bad config (nothing run).
)";

struct Options {
  std::string command;
  std::filesystem::path config;
  std::filesystem::path out;
  std::vector<std::string> overrides;
  bool quiet = false;
};

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y%m%d-%H%M%S", &local);
  return buf.data();
}

// Returns an error message, or empty when the command line is fine.
std::string parse(int argc, char** argv, Options& opt) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= args.size()) {
        throw std::invalid_argument(fmt::format("{} needs {}", a, what));
      }
      return args[++i];
    };
    if (a == "--out") {
      opt.out = value("a folder");
    } else if (a == "--set") {
      opt.overrides.push_back(value("PATH=VALUE"));
    } else if (a.starts_with("--set=")) {
      opt.overrides.push_back(a.substr(6));
    } else if (a.starts_with("--out=")) {
      opt.out = a.substr(6);
    } else if (a == "--quiet" || a == "-q") {
      opt.quiet = true;
    } else if (a.starts_with("-")) {
      return fmt::format("unknown option {} (see --help)", a);
    } else if (opt.command.empty()) {
      opt.command = a;
    } else if (opt.config.empty()) {
      opt.config = a;
    } else {
      return fmt::format("unexpected argument {} (see --help)", a);
    }
  }
  if (opt.command != "run") {
    return opt.command.empty() ? "missing command (see --help)"
                               : fmt::format("unknown command {} (see --help)", opt.command);
  }
  if (opt.config.empty()) {
    return "run needs a CONFIG file (see --help)";
  }
  return {};
}

void print_report(const rths::RunReport& r, const std::filesystem::path& out) {
  fmt::print("rths: {} — {} steps at {:g} Hz ({:.2f} s of {}) in {:.3f} s, reference {:.3f} s\n", r.name, r.steps,
             r.rate_hz, r.duration_s, r.ground_motion, r.run_time_s, r.reference_time_s);
  fmt::print("{:<16} {:>12} {:>12} {:>9} {:>9} {:>8} {:>11}\n", "response", "peak", "ref. peak", "J_peak %", "J_RMS %",
             "rho", "SD");
  for (const auto& [name, m] : r.responses) {
    const bool force = name.starts_with("f_");
    const double scale = force ? 1.0 : 1e3;
    const char* unit = force ? "N" : "mm";
    fmt::print("{:<16} {:>9.3f} {:<2} {:>9.3f} {:<2} {:>9.3f} {:>9.3f} {:>8.5f} {:>8.3f} {:<2}\n", name, m.peak * scale,
               unit, m.reference_peak * scale, unit, m.j_peak_pct, m.j_rms_pct, m.rho, m.sd * scale, unit);
  }
  for (const auto& s : r.sites) {
    if (!s.local) {
      fmt::print("site {}: {} packets accepted, {} dropped, {} steps held at the numerical node\n", s.name,
                 s.numerical_side.packets.accepted, s.numerical_side.packets.dropped(), s.numerical_side.held_steps);
    }
  }
  fmt::print("output: {}\n", out.string());
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a == "--version") {
      std::puts("rths-numerical 0.1.0");
      return kExitOk;
    }
  }
  try {
    if (const std::string error = parse(argc, argv, opt); !error.empty()) {
      std::fprintf(stderr, "rths-numerical: %s\n", error.c_str());
      return kExitBadInput;
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "rths-numerical: %s\n", e.what());
    return kExitBadInput;
  }

  if (opt.out.empty()) {
    opt.out = std::filesystem::path("runs") / (opt.config.stem().string() + "-" + timestamp());
  }
  std::error_code ec;
  std::filesystem::create_directories(opt.out, ec);
  if (ec) {
    std::fprintf(stderr, "rths-numerical: cannot create %s: %s\n", opt.out.c_str(), ec.message().c_str());
    return kExitBadInput;
  }
  auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>((opt.out / "run.log").string(), true);
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(opt.quiet ? spdlog::level::err : spdlog::level::warn);
  console->set_pattern("rths-numerical: %l: %v");
  auto log = std::make_shared<spdlog::logger>("rths", spdlog::sinks_init_list{file_sink, console});
  log->set_level(spdlog::level::info);
  spdlog::set_default_logger(log);

  rths::LoadedConfig loaded;
  try {
    loaded = rths::load_experiment(opt.config, opt.overrides);
    spdlog::info("config {} loaded ({} override(s))", opt.config.string(), opt.overrides.size());
    rths::VirtualExperiment experiment(loaded);
    spdlog::info("{}: {} steps at {} Hz, {} site(s)", experiment.report().name, experiment.steps(),
                 loaded.experiment.rate_hz(), loaded.experiment.site_size());
    const rths::RunReport& report = experiment.run();
    experiment.write_outputs(opt.out);
    spdlog::info("run finished in {:.3f} s; outputs written to {}", report.run_time_s, opt.out.string());
    if (!opt.quiet) {
      print_report(report, opt.out);
    }
  } catch (const rths::ConfigError& e) {
    spdlog::error("{}", e.what());
    spdlog::default_logger()->flush();
    return kExitBadInput;
  } catch (const std::exception& e) {
    spdlog::error("run failed: {}", e.what());
    spdlog::default_logger()->flush();
    return kExitFailure;
  }
  spdlog::default_logger()->flush();
  return kExitOk;
}
