#include "node_numerical/engine/loopback.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/protocol/secret_key.hpp"

namespace rths {

std::filesystem::path sibling_executable(const std::string& name) {
  return std::filesystem::canonical("/proc/self/exe").parent_path() / name;
}

LoopbackSites::LoopbackSites(std::filesystem::path config, std::vector<std::string> overrides,
                             std::filesystem::path out, TelemetryOptions telemetry)
    : config_(std::move(config)),
      overrides_(std::move(overrides)),
      out_(std::move(out)),
      telemetry_(std::move(telemetry)) {}

LoopbackSites::~LoopbackSites() {
  children_.clear();  // kills a site still running
  if (!key_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(key_dir_, ec);
  }
}

void LoopbackSites::start(config::Experiment& experiment) {
  const std::filesystem::path exe = sibling_executable("rths-physical");
  if (!std::filesystem::exists(exe)) {
    throw std::runtime_error("cannot find " + exe.string() + " (built with rths-numerical)");
  }
  for (auto& site : *experiment.mutable_site()) {
    if (site.placement() != config::REMOTE) {
      continue;
    }
    std::vector<std::string> args{exe.string(),  "serve", config_.string(), "--site",  site.name(), "--listen",
                                  "127.0.0.1:0", "--out", out_.string(),    "--quiet", "--wait",    "60"};
    for (const auto& o : overrides_) {
      args.emplace_back("--set");
      args.push_back(o);
    }
    if (!telemetry_.console.empty()) {
      args.insert(args.end(), {"--console", telemetry_.console, "--console-key", telemetry_.key_file.string(),
                               "--telemetry-hz", fmt::format("{:g}", telemetry_.rate_hz)});
    }
    if (!site.has_key_file() && !experiment.realtime().insecure()) {
      if (key_dir_.empty()) {
        key_dir_ = out_ / "keys";
        std::filesystem::create_directories(key_dir_);
        std::filesystem::permissions(key_dir_, std::filesystem::perms::owner_all);
      }
      const std::filesystem::path key = std::filesystem::absolute(key_dir_ / (site.name() + ".key"));
      write_key_file(key);
      site.set_key_file(key.string());
      args.emplace_back("--set");
      args.push_back(fmt::format("site[{}].key_file={}", site.name(), key.string()));
    }
    SpawnOptions spawn;
    spawn.stdin_from_null = false;
    spawn.stdout_to_pipe = true;
    try {
      children_.push_back({site.name(), ChildProcess(args, spawn)});
    } catch (const std::system_error& e) {
      throw std::runtime_error(
          fmt::format("cannot start {} for site {}: {}", exe.string(), site.name(), e.code().message()));
    }
    ChildProcess& child = children_.back().process;
    const std::string line = child.read_line(std::chrono::seconds(10));
    child.close_pipe();
    const std::string prefix = "listening on ";
    if (!line.starts_with(prefix)) {
      throw std::runtime_error(fmt::format("site {} did not start listening (see site_{}.log in {})", site.name(),
                                           site.name(), out_.string()));
    }
    site.set_address(line.substr(prefix.size()));
    spdlog::info("site {}: process {} listening on {}", site.name(), child.pid(), site.address());
  }
}

int LoopbackSites::wait() {
  int first_failure = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (Child& c : children_) {
    if (!c.process.running()) {
      continue;  // waited for already
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    std::optional<int> code = c.process.wait_for(std::max(left, std::chrono::milliseconds(0)));
    if (!code) {
      spdlog::error("site {} did not stop; terminating it", c.site);
      c.process.signal(SIGTERM);
      code = c.process.wait();
    }
    if (*code != 0) {
      spdlog::warn("site {} exited with code {}", c.site, *code);
      first_failure = first_failure == 0 ? *code : first_failure;
    }
  }
  return first_failure;
}

}  // namespace rths
