// Records that survive a crash (docs/architecture.md §7): the CSV streamed by RecordWriter holds exactly what the
// Recorder holds and is complete after any orderly stop (while the run goes on and after kill -9:
// realtime/test_recording.cpp). deploy/check-sanitizers.sh runs these under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/core/exit_codes.hpp"
#include "common/records/csv_rows.hpp"
#include "common/records/record_writer.hpp"
#include "common/records/recorder.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/alloc_counter.hpp"
#include "support/process.hpp"
#include "support/recording.hpp"
#include "support/test_support.hpp"

namespace rths::test_recording {
namespace {

using test::same_bits;

using std::chrono::milliseconds;
using test::columns_named;
using test::Csv;
using test::expect_file_holds;
using test::read_complete_rows;
using test::Recording;

// Values that test a text format: signed zeros, subnormals, extremes, infinities, NaN, decimals
// that have no exact binary form, and arbitrary bit patterns.
std::vector<double> awkward_row(std::size_t r, std::size_t columns, std::mt19937_64& bits) {
  constexpr std::array kSpecial{0.0,
                                -0.0,
                                0.1,
                                1.0 / 3.0,
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::lowest(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(),
                                1e-300,
                                -123456789.123456789};
  std::vector<double> row(columns);
  row[0] = static_cast<double>(r) / 1024.0;
  for (std::size_t c = 1; c < columns; ++c) {
    row[c] = (r + c) % 7 == 0 ? kSpecial[(r * columns + c) % kSpecial.size()] : std::bit_cast<double>(bits());
  }
  return row;
}

TEST_F(Recording, StreamedCsvHoldsExactlyWhatWasRecorded) {
  constexpr std::size_t kRows = 20000;  // several of the writer's chunks
  Recorder rec(columns_named(5), kRows);
  {
    // A short flush period, so the file is written in many pieces while the rows arrive.
    RecordWriter writer(rec, dir_ / "streamed.csv", {milliseconds(2), milliseconds(0)});
    std::thread step([&] {
      std::mt19937_64 bits(42);
      for (std::size_t r = 0; r < kRows; ++r) {
        rec.record(awkward_row(r, rec.columns(), bits));
        if (r % 500 == 0) {
          std::this_thread::sleep_for(milliseconds(1));
        }
      }
    });
    step.join();
    writer.finish();
  }
  const Csv csv = read_complete_rows(dir_ / "streamed.csv");
  EXPECT_EQ(csv.header, (std::vector<std::string>{"t_s", "x1_N", "x2_m", "x3_N", "x4_m"}));
  expect_file_holds(dir_ / "streamed.csv", rec);
  // Byte for byte the file the write-at-once path gives (the reference uses it).
  rec.write_csv(dir_ / "at_once.csv");
  EXPECT_TRUE(test::slurp(dir_ / "streamed.csv") == test::slurp(dir_ / "at_once.csv"));  // not printed: 2 MB
}

// A write that fails ends the rows there: the rows before its chunk are in the file and counted, the
// ones from its first row on are neither. The file may grow by one chunk and a few bytes (the limit
// on file size, RLIMIT_FSIZE, with SIGXFSZ ignored so that the write fails with EFBIG instead).
TEST_F(Recording, AFailedWriteEndsTheRowsAtTheFirstRowOfItsChunk) {
  constexpr std::size_t kRows = 2 * csv::kRowsPerWrite + 10;
  Recorder rec(columns_named(3), kRows);
  std::mt19937_64 bits(3);
  for (std::size_t r = 0; r < kRows; ++r) rec.record(awkward_row(r, rec.columns(), bits));
  fmt::memory_buffer first_chunk;
  csv::append_rows(first_chunk, rec, 0, csv::kRowsPerWrite);

  const std::filesystem::path file = dir_ / "limited.csv";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  rlimit limited = before;
  limited.rlim_cur = first_chunk.size() + 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  fmt::memory_buffer out;
  std::uint64_t bytes = 0;
  const std::size_t reached = csv::write_rows(fd, out, rec, 0, kRows, bytes);
  const int error = errno;
  std::signal(SIGXFSZ, previous_handler);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &before), 0);
  ::close(fd);

  EXPECT_EQ(reached, csv::kRowsPerWrite);
  EXPECT_EQ(bytes, first_chunk.size());
  EXPECT_EQ(error, EFBIG);
  EXPECT_EQ(test::slurp(file).substr(0, first_chunk.size()), std::string(first_chunk.data(), first_chunk.size()));

  // Without the limit every row is written, as append_rows formats them.
  const int whole = ::open((dir_ / "whole.csv").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(whole, 0);
  bytes = 0;
  EXPECT_EQ(csv::write_rows(whole, out, rec, 0, kRows, bytes), kRows);
  ::close(whole);
  fmt::memory_buffer all;
  csv::append_rows(all, rec, 0, kRows);
  EXPECT_EQ(bytes, all.size());
  EXPECT_TRUE(test::slurp(dir_ / "whole.csv") == std::string(all.data(), all.size()));
}

TEST_F(Recording, OrderlyStopBeforeMaxRowsLeavesEveryRow) {
  constexpr std::size_t kRecorded = 3777;
  Recorder rec(columns_named(4), 10000);
  {
    // Left without finish(): the destructor is what an exception or an early return runs.
    const RecordWriter writer(rec, dir_ / "stopped.csv");
    std::mt19937_64 bits(7);
    for (std::size_t r = 0; r < kRecorded; ++r) {
      rec.record(awkward_row(r, rec.columns(), bits));
    }
  }
  ASSERT_EQ(rec.rows(), kRecorded);
  expect_file_holds(dir_ / "stopped.csv", rec);
}

TEST_F(Recording, RecordAllocatesNothingWhileTheWriterStreams) {
  constexpr std::size_t kRows = 30000;
  Recorder rec(columns_named(134), kRows);  // the numerical node's row with 32 sites
  RecordWriter writer(rec, dir_ / "busy.csv", {milliseconds(1), milliseconds(0)});
  const std::vector<double> row(rec.columns(), 0.125);
  const std::uint64_t before = test::allocations_on_this_thread();
  for (std::size_t r = 0; r < kRows; ++r) {
    rec.record(row);
    if (r % 1000 == 0) {
      std::this_thread::yield();  // let the writer format and allocate meanwhile
    }
  }
  const std::uint64_t made = test::allocations_on_this_thread() - before;
  writer.finish();
  EXPECT_EQ(made, 0U) << "allocations in " << kRows << " calls of record()";
  EXPECT_EQ(writer.stats().rows, kRows);
}

TEST_F(Recording, ExperimentStoppedEarlyLeavesEveryRecordedStep) {
  // The demo's synthetic ground motion: no data file.
  auto ex = std::make_unique<Experiment>(test::load_example("demo.textproto", {"duration_s=5"}));
  ex->stream_outputs(dir_);
  // The folder starts with the run: the config and each CSV's header are there before step 0.
  EXPECT_TRUE(std::filesystem::exists(dir_ / "config.textproto"));
  EXPECT_EQ(read_complete_rows(dir_ / "numerical.csv").header.front(), "t_s");
  EXPECT_EQ(read_complete_rows(dir_ / "site_lab.csv").header.front(), "t_s");
  constexpr std::int64_t kSteps = 3000;  // of 5121 planned
  ex->run_hybrid_steps(0, kSteps);
  const Recorder& numerical = ex->numerical();
  ASSERT_EQ(numerical.rows(), static_cast<std::size_t>(kSteps));
  std::vector<std::vector<double>> expected(numerical.columns());
  for (std::size_t c = 0; c < numerical.columns(); ++c) {
    expected[c] = numerical.column(c);
  }
  ex.reset();  // no write_outputs: the way out of a run that threw
  const Csv csv = read_complete_rows(dir_ / "numerical.csv");
  ASSERT_EQ(csv.rows.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    for (std::size_t c = 0; c < expected.size(); ++c) {
      ASSERT_TRUE(same_bits(csv.rows[r][c], expected[c][r])) << "row " << r << " column " << c;
    }
  }
  const Csv site = read_complete_rows(dir_ / "site_lab.csv");
  ASSERT_EQ(site.rows.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t r = 0; r < site.rows.size(); ++r) {
    ASSERT_EQ(site.rows[r][0], static_cast<double>(r) / 1024.0) << "site row " << r;
  }
}

}  // namespace
}  // namespace rths::test_recording
