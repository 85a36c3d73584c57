// What the tests of a run's plots share: a PNG's size from its header, the check that every figure
// named is drawn and not blank, and the fixture that runs `rths-numerical plot` where gnuplot is.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/core/child_process.hpp"
#include "support/process.hpp"

namespace rths::test {

struct PngSize {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

// The size a PNG's header gives (0 x 0 when the file is no PNG).
inline PngSize png_size(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::array<unsigned char, 24> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  const std::array<unsigned char, 8> signature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!in || !std::equal(signature.begin(), signature.end(), head.begin())) return {};
  const auto be32 = [&head](std::size_t at) {
    return (std::uint32_t{head[at]} << 24) | (std::uint32_t{head[at + 1]} << 16) | (std::uint32_t{head[at + 2]} << 8) |
           std::uint32_t{head[at + 3]};
  };
  return {be32(16), be32(20)};
}

// Every figure named exists as a 1000 x 650 PNG with its script beside it, and is not blank: a blank
// image of that size compresses to 3.4 kB, a frame with its title, labels and key to about 15 kB
// (measured), and gnuplot draws nothing at all from data that are all missing (the plot, and so the
// command, then fails), so a PNG above kBlankBytes has its axes and its data.
inline void expect_drawn(const std::filesystem::path& dir, const std::vector<std::string>& names) {
  constexpr std::uintmax_t kBlankBytes = 8000;
  for (const std::string& name : names) {
    const std::filesystem::path png = dir / (name + ".png");
    ASSERT_TRUE(std::filesystem::exists(png)) << png;
    EXPECT_TRUE(std::filesystem::exists(dir / (name + ".gp"))) << name;
    const PngSize size = png_size(png);
    EXPECT_EQ(size.width, 1000U) << name;
    EXPECT_EQ(size.height, 650U) << name;
    EXPECT_GT(std::filesystem::file_size(png), kBlankBytes) << name << ": blank?";
  }
}

// `rths-numerical plot` into the run folder; skipped where gnuplot is not installed.
class RunPlots : public RunFolderTest {
 protected:
  void SetUp() override {
    RunFolderTest::SetUp();
    if (!find_program("gnuplot")) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox): no PNG to check";
  }
  // rths-numerical plot RUN_DIR: its exit code.
  int plot(const std::filesystem::path& run, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args{"plot", run.string(), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    Process p("rths-numerical", args, dir_ / "plot");
    const int code = p.wait(std::chrono::seconds(120));
    err_ = p.err();
    return code;
  }
  mutable std::string err_;
};

}  // namespace rths::test
