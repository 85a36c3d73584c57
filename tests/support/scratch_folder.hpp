#pragma once

// A test's own folder under the temporary folder, removed when the test passed and kept (and named)
// when it failed, so that a full ctest run leaves nothing behind but what a failure needs looked at.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>
#include <unistd.h>

namespace rths::test {

// PREFIX_<pid>_<Suite>_<Test> under $TMPDIR (or /tmp). The '/' of a parameterised test's name
// (Suite/Test/Case) is replaced: as a path it made a nested folder whose parent was never removed.
inline std::filesystem::path test_folder(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  return std::filesystem::temp_directory_path() / name;
}

// Removes dir when the running test has passed so far; otherwise keeps it and says where, on stdout,
// which ctest --output-on-failure shows with the failure.
inline void remove_unless_failed(const std::filesystem::path& dir) {
  if (::testing::Test::HasFailure()) {
    std::printf("[   kept   ] %s: the files of the failed test, for a look\n", dir.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

// A fresh, empty test_folder(prefix) for the lifetime of the object, then remove_unless_failed. As a
// local of a test body it is cleaned up however the body ends (an ASSERT returns early).
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& prefix = "rths") : path_(test_folder(prefix)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ScratchFolder(ScratchFolder&&) = delete;
  ScratchFolder& operator=(ScratchFolder&&) = delete;
  ~ScratchFolder() { remove_unless_failed(path_); }

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace rths::test
