// Starting a child process (common/core/child_process.hpp): its exit code, its output into files or a
// pipe, its working folder, a program that cannot start, and no child left behind.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "common/core/child_process.hpp"
#include "support/process.hpp"
#include "support/scratch_folder.hpp"

namespace rths::test_child_process {
namespace {

using test::slurp;

ChildProcess shell(const std::string& script, const SpawnOptions& options = {}) {
  return ChildProcess({"/bin/sh", "-c", script}, options);
}

TEST(ChildProcess, ExitCodeOrSignalAsAShellSaysIt) {
  EXPECT_EQ(shell("exit 3").wait(), 3);
  EXPECT_EQ(shell("exit 0").wait(), 0);
  EXPECT_EQ(shell("kill -TERM $$").wait(), 128 + SIGTERM);
}

TEST(ChildProcess, OutputGoesToItsFilesAppendedWhenAsked) {
  const test::ScratchFolder dir;
  SpawnOptions options;
  options.stdout_file = dir.path() / "out.txt";
  options.stderr_file = dir.path() / "err.txt";
  ASSERT_EQ(shell("echo one; echo two >&2", options).wait(), 0);
  EXPECT_EQ(slurp(dir.path() / "out.txt"), "one\n");
  EXPECT_EQ(slurp(dir.path() / "err.txt"), "two\n");
  options.append = true;
  options.stderr_to_stdout = true;
  ASSERT_EQ(shell("echo three; echo four >&2", options).wait(), 0);
  EXPECT_EQ(slurp(dir.path() / "out.txt"), "one\nthree\nfour\n");
  options.append = false;
  ASSERT_EQ(shell("echo five", options).wait(), 0);
  EXPECT_EQ(slurp(dir.path() / "out.txt"), "five\n");  // truncated
}

TEST(ChildProcess, ARelativeLogIsTheCallersNotTheChildsFolders) {
  // gnuplot runs in the study folder with its log given relative to where rths-study was started.
  const test::ScratchFolder dir;
  std::filesystem::create_directories(dir.path() / "runs/linear");
  const auto was = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  SpawnOptions options;
  options.working_dir = "runs/linear";
  options.stdout_file = "runs/linear/log.txt";
  const int code = shell("pwd", options).wait();
  std::filesystem::current_path(was);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(slurp(dir.path() / "runs/linear/log.txt"),
            std::filesystem::canonical(dir.path() / "runs/linear").string() + "\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "runs/linear/runs"));
}

TEST(ChildProcess, TheFirstLineThroughThePipe) {
  SpawnOptions options;
  options.stdout_to_pipe = true;
  // exec: the shell becomes the sleep, so the end kills it, not a grandchild that would hold the test
  // program's output open for 30 s (ctest waits for it).
  ChildProcess child = shell("echo 'listening on 127.0.0.1:5000'; echo more; exec sleep 30", options);
  EXPECT_EQ(child.read_line(std::chrono::seconds(10)), "listening on 127.0.0.1:5000");
  child.close_pipe();
  // A child that ends before writing a line gives what it wrote.
  ChildProcess silent = shell("printf partial", options);
  EXPECT_EQ(silent.read_line(std::chrono::seconds(10)), "partial");
  EXPECT_EQ(silent.wait(), 0);
}

TEST(ChildProcess, AProgramThatCannotStartIsNamed) {
  try {
    ChildProcess child({"/nonexistent/gnuplot", "x.gp"});
    FAIL() << "started a missing program";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/gnuplot"), std::string::npos) << e.what();
  }
}

TEST(ChildProcess, WaitForAnswersNothingWhileItRunsAndTheEndKillsIt) {
  pid_t pid = -1;
  {
    ChildProcess child = shell("exec sleep 30");
    pid = child.pid();
    EXPECT_FALSE(child.wait_for(std::chrono::milliseconds(20)));
    EXPECT_TRUE(child.running());
    ChildProcess moved = std::move(child);  // the moved-from object owns nothing
    EXPECT_FALSE(child.running());          // NOLINT(bugprone-use-after-move,hicpp-invalid-access-moved)
    EXPECT_TRUE(moved.running());
  }
  // Killed and reaped: the pid names no process of ours any more.
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(ChildProcess, FindProgramSearchesPathInOrder) {
  const test::ScratchFolder dir;
  for (const char* sub : {"a", "b"}) {
    std::filesystem::create_directories(dir.path() / sub);
    std::ofstream(dir.path() / sub / "tool") << "#!/bin/sh\n";
    std::filesystem::permissions(dir.path() / sub / "tool", std::filesystem::perms::owner_all);
  }
  std::ofstream(dir.path() / "a/plain") << "not executable\n";
  const char* path = std::getenv("PATH");
  const std::string saved = path == nullptr ? "" : path;
  setenv("PATH",
         ((dir.path() / "missing").string() + ":" + (dir.path() / "a").string() + ":" + (dir.path() / "b").string())
             .c_str(),
         1);
  const auto tool = find_program("tool");
  const auto plain = find_program("plain");
  const auto none = find_program("none");
  setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(tool);
  EXPECT_EQ(*tool, dir.path() / "a/tool");
  EXPECT_FALSE(plain);
  EXPECT_FALSE(none);
}

}  // namespace
}  // namespace rths::test_child_process
