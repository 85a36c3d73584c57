#include "common/core/child_process.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

// POSIX has the program declare environ (glibc also does with _GNU_SOURCE), for posix_spawn.
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables,readability-redundant-declaration)
extern char** environ;

namespace rths {

namespace {

// posix_spawn's file actions, destroyed on every path out.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  FileActions(FileActions&&) = delete;
  FileActions& operator=(FileActions&&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

// posix_spawn's attributes: every child starts with normal scheduling (SCHED_OTHER), whatever the
// thread that starts it runs at. A child of a real-time thread (gnuplot after a run) would otherwise
// inherit its SCHED_FIFO priority and hold a CPU against the real-time loops of the host; a node that
// needs a real-time priority asks for its own (acquire_realtime).
class NormalScheduling {
 public:
  NormalScheduling() {
    posix_spawnattr_init(&attributes_);
    const sched_param normal{};
    posix_spawnattr_setschedpolicy(&attributes_, SCHED_OTHER);
    posix_spawnattr_setschedparam(&attributes_, &normal);
    posix_spawnattr_setflags(&attributes_, POSIX_SPAWN_SETSCHEDULER);
  }
  ~NormalScheduling() { posix_spawnattr_destroy(&attributes_); }
  NormalScheduling(const NormalScheduling&) = delete;
  NormalScheduling& operator=(const NormalScheduling&) = delete;
  NormalScheduling(NormalScheduling&&) = delete;
  NormalScheduling& operator=(NormalScheduling&&) = delete;
  [[nodiscard]] const posix_spawnattr_t* get() const { return &attributes_; }

 private:
  posix_spawnattr_t attributes_{};
};

// The waitpid status of pid once it has ended, waiting at most timeout (0: only a look).
std::optional<int> reap(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      return status;
    }
    if (done < 0 && errno != EINTR) {
      return 0;  // not our child any more (reaped elsewhere): nothing to wait for
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::optional<std::filesystem::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path == nullptr ? std::string_view{} : std::string_view(path);
  for (;;) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    auto candidate = std::filesystem::path(dir.empty() ? std::string_view(".") : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) {
      return std::nullopt;
    }
    dirs.remove_prefix(colon + 1);
  }
}

int exit_code_of(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) {
    throw std::system_error(EINVAL, std::generic_category(), "no program to start");
  }
  std::vector<std::string> args = argv;
  std::vector<char*> pointers;
  pointers.reserve(args.size() + 1);
  for (auto& a : args) {
    pointers.push_back(a.data());
  }
  pointers.push_back(nullptr);
  // Absolute before the child changes its folder (SpawnOptions).
  const auto absolute = [](const std::filesystem::path& p) { return std::filesystem::absolute(p).string(); };
  const std::string out_file = options.stdout_file.empty() ? std::string{} : absolute(options.stdout_file);
  const std::string err_file = options.stderr_file.empty() ? std::string{} : absolute(options.stderr_file);
  const std::string folder = options.working_dir.empty() ? std::string{} : absolute(options.working_dir);
  const int flags = O_WRONLY | O_CREAT | (options.append ? O_APPEND : O_TRUNC);

  std::array<int, 2> pipe_fds{-1, -1};
  if (options.stdout_to_pipe && pipe2(pipe_fds.data(), O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe for " + argv[0]);
  }
  FileActions actions;
  if (!folder.empty()) {
    posix_spawn_file_actions_addchdir_np(actions.get(), folder.c_str());
  }
  if (options.stdin_from_null) {
    posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  if (options.stdout_to_pipe) {
    posix_spawn_file_actions_adddup2(actions.get(), pipe_fds[1], STDOUT_FILENO);
  } else if (!out_file.empty()) {
    posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, out_file.c_str(), flags, 0644);
  }
  if (options.stderr_to_stdout) {
    posix_spawn_file_actions_adddup2(actions.get(), STDOUT_FILENO, STDERR_FILENO);
  } else if (!err_file.empty()) {
    posix_spawn_file_actions_addopen(actions.get(), STDERR_FILENO, err_file.c_str(), flags, 0644);
  }
  const NormalScheduling scheduling;
  const int rc = posix_spawn(&pid_, pointers[0], actions.get(), scheduling.get(), pointers.data(), environ);
  if (options.stdout_to_pipe) {
    close(pipe_fds[1]);
    pipe_fd_ = pipe_fds[0];
  }
  if (rc != 0) {
    pid_ = -1;
    close_pipe();
    throw std::system_error(rc, std::generic_category(), "cannot start " + argv[0]);
  }
}

ChildProcess::~ChildProcess() {
  release();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), pipe_fd_(std::exchange(other.pipe_fd_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    pipe_fd_ = std::exchange(other.pipe_fd_, -1);
  }
  return *this;
}

void ChildProcess::release() {
  close_pipe();
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) {
    return std::nullopt;
  }
  const std::optional<int> status = reap(pid_, timeout);
  if (!status) {
    return std::nullopt;
  }
  pid_ = -1;
  return exit_code_of(*status);
}

int ChildProcess::wait() {
  int status = 0;
  while (pid_ > 0 && waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return exit_code_of(status);
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0) {
    kill(pid_, sig);
  }
}

std::string ChildProcess::read_line(std::chrono::milliseconds timeout) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pipe_fd_ >= 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{pipe_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) {
      continue;
    }
    char c = 0;
    if (read(pipe_fd_, &c, 1) <= 0) {
      break;  // the child closed its stdout: it ended before writing a line
    }
    if (c == '\n') {
      return line;
    }
    line.push_back(c);
  }
  return line;
}

void ChildProcess::close_pipe() {
  if (pipe_fd_ >= 0) {
    close(pipe_fd_);
    pipe_fd_ = -1;
  }
}

}  // namespace rths
