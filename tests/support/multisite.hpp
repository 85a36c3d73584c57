// The fixture of the multisite tests: a topology of network namespaces of its own per test process
// (deploy/netns-topology.sh), the seed 002 Case III example run across it, and its removal after.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test {

class Multisite : public ::testing::Test {
 protected:
  static constexpr int kExitSkipped = 77;                 // the script's "namespaces cannot be made here"
  static constexpr std::size_t kRows = 10U * 1024U + 1U;  // duration_s=10 at 1024 Hz, steps 0..10240
  static constexpr const char* kConfig = "multisite/case3_two_sites.textproto";

  void SetUp() override {
    // Unique per test process, so parallel ctest runs and a developer's default topology (prefix
    // rths, subnet 10.77) cannot collide with it.
    prefix_ = "rthsT" + std::to_string(getpid());
    dir_ = test_folder(prefix_);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    // The script's trap removes the namespaces; this is the belt to its braces (idempotent).
    Process down(script().string(), {"down", "--prefix", prefix_}, dir_ / "down");
    EXPECT_EQ(down.wait(std::chrono::seconds(30)), 0) << down.err();
    remove_unless_failed(dir_);
  }

  static std::filesystem::path script() { return source_dir() / "deploy" / "netns-topology.sh"; }

  // Runs the example across the topology into dir_/out with `--set` overrides, through the relay
  // host when `relay`; the exit code.
  int run_topology(const std::string& out, const std::vector<std::string>& sets, bool relay = false) {
    std::vector<std::string> args{
        "run",   example(kConfig).string(), "--prefix", prefix_, "--subnet", "10.78", "--bin", RTHS_BIN_DIR,
        "--out", (dir_ / out).string()};
    if (relay) {
      args.emplace_back("--relay");
    }
    for (const auto& s : sets) {
      args.emplace_back("--set");
      args.push_back(s);
    }
    Process run(script().string(), args, dir_ / out);
    const int code = run.wait(std::chrono::seconds(90));
    err_ = run.err();
    return code;
  }

  std::string prefix_;
  std::filesystem::path dir_;
  std::string err_;
};

}  // namespace rths::test
