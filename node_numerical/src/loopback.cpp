#include "rths/node_numerical/loopback.hpp"

#include <chrono>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rths/common/secret_key.hpp"

// POSIX has the program declare environ (glibc also does with _GNU_SOURCE), for posix_spawn.
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables,readability-redundant-declaration)
extern char** environ;

namespace rths {

namespace {

// Reads the first line the child prints ("listening on HOST:PORT"), for at most timeout.
std::string read_line(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) {
      continue;
    }
    char c = 0;
    const ssize_t n = read(fd, &c, 1);
    if (n <= 0) {
      break;  // the child closed its stdout: it failed before listening
    }
    if (c == '\n') {
      return line;
    }
    line.push_back(c);
  }
  return line;
}

}  // namespace

std::filesystem::path sibling_executable(const std::string& name) {
  return std::filesystem::canonical("/proc/self/exe").parent_path() / name;
}

LoopbackSites::LoopbackSites(std::filesystem::path config, std::vector<std::string> overrides,
                             std::filesystem::path out)
    : config_(std::move(config)), overrides_(std::move(overrides)), out_(std::move(out)) {}

LoopbackSites::~LoopbackSites() {
  for (const Child& c : children_) {
    if (c.pid > 0) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, nullptr, 0);
    }
  }
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
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    std::array<int, 2> pipe_fds{};
    if (pipe2(pipe_fds.data(), O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (rc != 0) {
      close(pipe_fds[0]);
      throw std::runtime_error(
          fmt::format("cannot start {} for site {}: {}", exe.string(), site.name(), std::strerror(rc)));
    }
    children_.push_back({site.name(), pid});
    const std::string line = read_line(pipe_fds[0], std::chrono::seconds(10));
    close(pipe_fds[0]);
    const std::string prefix = "listening on ";
    if (!line.starts_with(prefix)) {
      throw std::runtime_error(fmt::format("site {} did not start listening (see site_{}.log in {})", site.name(),
                                           site.name(), out_.string()));
    }
    site.set_address(line.substr(prefix.size()));
    spdlog::info("site {}: process {} listening on {}", site.name(), pid, site.address());
  }
}

int LoopbackSites::wait() {
  int first_failure = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (Child& c : children_) {
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(c.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      spdlog::error("site {} did not stop; terminating it", c.site);
      kill(c.pid, SIGTERM);
      waitpid(c.pid, &status, 0);
    }
    c.pid = -1;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0) {
      spdlog::warn("site {} exited with code {}", c.site, code);
      first_failure = first_failure == 0 ? code : first_failure;
    }
  }
  return first_failure;
}

}  // namespace rths
