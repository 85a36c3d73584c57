#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace rths {

// Where a child's standard streams go. Files are opened by the child before it runs, relative to
// this process's working directory even when the child is given another one (a relative log such as
// runs/linear/gnuplot.log must not be looked for in runs/linear/runs/linear/).
struct SpawnOptions {
  std::filesystem::path working_dir;  // empty: this process's
  bool stdin_from_null = true;        // stdin from /dev/null; false: inherited
  std::filesystem::path stdout_file;  // empty: inherited (or the pipe with stdout_to_pipe)
  std::filesystem::path stderr_file;  // empty: inherited (or stdout with stderr_to_stdout)
  bool append = false;                // append to the files instead of truncating them
  bool stderr_to_stdout = false;      // stderr goes wherever stdout goes
  bool stdout_to_pipe = false;        // stdout into a pipe this process reads (read_line)
};

// The exit code of a wait status: the code of a normal exit, 128 + N for a death by signal N (as a
// shell reports it).
int exit_code_of(int wait_status);

// The executable `name` in the first folder of PATH that has one (an empty entry: the working
// folder), or nullopt.
std::optional<std::filesystem::path> find_program(const std::string& name);

// One child process started with posix_spawn: the executables started by the tests, the site
// processes of a loopback run, gnuplot for the study plots. A child still running when its object
// goes is killed (SIGKILL) and reaped, so no path out of a caller leaves a process behind.
class ChildProcess {
 public:
  // Starts argv[0] (a path: PATH is not searched) with arguments argv. Throws std::system_error
  // naming the program when it cannot be started (missing, not executable, a file not openable).
  explicit ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Whether it has not been waited for yet.
  [[nodiscard]] bool running() const { return pid_ > 0; }

  // Its exit code (exit_code_of) once it has ended within timeout; nullopt while it still runs.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  // Blocks until it ends; its exit code.
  int wait();
  // Sends signal sig (nothing once it has been waited for).
  void signal(int sig) const;

  // With stdout_to_pipe: the first line the child writes (without its newline), read for at most
  // timeout; what came before a timeout or the end of its output otherwise.
  std::string read_line(std::chrono::milliseconds timeout);
  // Closes this end of the stdout pipe (the child's later writes then fail).
  void close_pipe();

 private:
  void release();

  pid_t pid_ = -1;
  int pipe_fd_ = -1;
};

}  // namespace rths
