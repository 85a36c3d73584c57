// Records that survive a crash (docs/architecture.md §7): the CSV streamed by RecordWriter holds exactly what the
// Recorder holds, reaches the file while the run goes on, is complete after any orderly stop, and a
// node killed with kill -9 leaves its log and its record up to about the last second.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rths/common/exit_codes.hpp"
#include "rths/common/record_writer.hpp"
#include "rths/common/recorder.hpp"
#include "rths/node_numerical/experiment.hpp"
#include "support/alloc_counter.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::Process;

// An rths CSV as a reader after a crash sees it: the header and every complete line (one that ends
// with a newline); a last line cut by a kill is not a row.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
};

Csv read_complete_rows(const std::filesystem::path& file) {
  std::string text = test::slurp(file);
  text.erase(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  Csv csv;
  std::size_t at = 0;
  bool first = true;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string_view line(text.data() + at, end - at);
    std::vector<double> row;
    for (std::size_t cell = 0; cell <= line.size();) {
      const std::size_t comma = std::min(line.find(',', cell), line.size());
      const std::string_view field = line.substr(cell, comma - cell);
      if (first) {
        csv.header.emplace_back(field);
      } else {
        double v = 0.0;
        const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
        EXPECT_TRUE(ec == std::errc() && ptr == field.data() + field.size()) << file << ": '" << field << "'";
        row.push_back(v);
      }
      cell = comma + 1;
    }
    if (!first) {
      csv.rows.push_back(std::move(row));
    }
    first = false;
    at = end + 1;
  }
  return csv;
}

bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Every row of rec, bit for bit, and nothing else.
void expect_file_holds(const std::filesystem::path& file, const Recorder& rec) {
  const Csv csv = read_complete_rows(file);
  ASSERT_EQ(csv.rows.size(), rec.rows()) << file;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    ASSERT_EQ(csv.rows[r].size(), rec.columns()) << file << " row " << r;
    for (std::size_t c = 0; c < rec.columns(); ++c) {
      ASSERT_TRUE(same_bits(csv.rows[r][c], rec.at(r, c)))
          << file << " row " << r << " column " << c << ": " << csv.rows[r][c] << " recorded " << rec.at(r, c);
    }
  }
}

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

std::vector<Column> columns_named(std::size_t n) {
  std::vector<Column> cols{{"t", "s"}};
  for (std::size_t c = 1; c < n; ++c) {
    // fmt rather than "x" + std::to_string: GCC 12 raises a false -Wrestrict on the latter.
    cols.push_back({fmt::format("x{}", c), c % 2 == 0 ? "m" : "N"});
  }
  return cols;
}

class Recording : public test::RunFolderTest {};

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

TEST_F(Recording, RowsReachTheFileWhileTheRunGoesOn) {
  Recorder rec(columns_named(3), 100000);
  RecordWriter writer(rec, dir_ / "live.csv");  // default: flushed every 0.25 s
  std::atomic<int> phase{0};
  std::thread step([&] {
    const std::array row{0.0, 1.0, 2.0};
    for (int part = 0; part < 2; ++part) {
      while (phase.load() != part) {
        std::this_thread::sleep_for(milliseconds(1));
      }
      for (int i = 0; i < 1000; ++i) {
        rec.record(row);
      }
    }
  });
  // The file must show each part while the writer is still running (finish() not called): 10 s is a
  // correctness bound, 40 flush periods, not a performance figure.
  for (const std::size_t expected : {1000U, 2000U}) {
    const auto start = std::chrono::steady_clock::now();
    std::size_t seen = 0;
    while (seen < expected && std::chrono::steady_clock::now() - start < seconds(10)) {
      std::this_thread::sleep_for(milliseconds(10));
      seen = read_complete_rows(dir_ / "live.csv").rows.size();
    }
    EXPECT_EQ(seen, expected) << "rows in the file before finish()";
    std::printf("[ measured ] %zu rows on disk %.3f s after they were handed over\n", seen,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    phase.store(phase.load() + 1);
  }
  step.join();
  writer.finish();
  expect_file_holds(dir_ / "live.csv", rec);
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

// A node killed with kill -9 after about 3 s of a 30 s real-time run. Its CSV must hold rows 0, 1, 2,
// ... without a gap (t_s = k / 1024) up to at most one second before it died, and its log must hold
// the lines written before the loop started. The survivor's step count bounds the killed node's: the
// survivor went on for its peer timeout (0.1 s, 102 steps) plus the time to notice (as in the other
// kill tests, at most 48 ms more on a loaded machine).
void expect_record_up_to_the_last_second(const std::filesystem::path& csv_file, double survivor_steps) {
  const Csv csv = read_complete_rows(csv_file);
  ASSERT_FALSE(csv.header.empty()) << csv_file;
  ASSERT_EQ(csv.header.front(), "t_s");
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    ASSERT_NEAR(csv.rows[r][0], static_cast<double>(r) / 1024.0, 1e-9) << csv_file << " row " << r;
  }
  const double missing = survivor_steps - static_cast<double>(csv.rows.size());
  std::printf("[ measured ] %s: %zu rows, the survivor ran %.0f steps: %.0f missing\n", csv_file.filename().c_str(),
              csv.rows.size(), survivor_steps, missing);
  EXPECT_GT(csv.rows.size(), 0U) << csv_file;
  EXPECT_LE(missing, 1024.0 + 102.0 + 50.0) << csv_file;
}

const std::string kDemo = test::example("demo.textproto").string();

enum class Victim { kNumerical, kSite };

// Starts the demo's site and numerical node in real time, kills one with kill -9 after 3 s, and
// checks what it left: its record up to the last second (bounded by the survivor's step count) and
// the log line it wrote when the session started.
void kill_and_expect_records(const std::filesystem::path& dir, Victim victim) {
  Process site("rths-physical",
               {"serve", kDemo, "--site", "lab", "--listen", "127.0.0.1:0", "--out", (dir / "site").string(), "--set",
                test::site_key_override(dir, "lab")},
               dir / "site");
  const std::string where = site.wait_for_line("listening on ", seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  Process numerical("rths-numerical",
                    {"run", kDemo, "--realtime", "--set", "duration_s=30", "--set", "site[0].address=" + where, "--set",
                     test::site_key_override(dir, "lab"), "--out", (dir / "run").string(), "--quiet"},
                    dir / "numerical");
  std::this_thread::sleep_for(seconds(3));
  const bool site_dies = victim == Victim::kSite;
  Process& killed = site_dies ? site : numerical;
  Process& survivor = site_dies ? numerical : site;
  killed.signal(SIGKILL);
  EXPECT_EQ(killed.wait(seconds(10)), 128 + SIGKILL);
  ASSERT_EQ(survivor.wait(seconds(20)), kExitPeerLost) << survivor.err();
  const double survivor_steps = site_dies
                                    ? static_cast<double>(test::read_summary(dir / "run/summary.json").steps())
                                    : static_cast<double>(test::read_site_summary(dir / "site/site_lab.json").steps());
  expect_record_up_to_the_last_second(dir / (site_dies ? "site/site_lab.csv" : "run/numerical.csv"), survivor_steps);
  const std::filesystem::path log = dir / (site_dies ? "site/site_lab.log" : "run/run.log");
  EXPECT_NE(test::slurp(log).find("from the agreed start"), std::string::npos) << log;
}

TEST_F(Recording, KilledNumericalNodeLeavesItsLogAndItsRecordUpToTheLastSecond) {
  kill_and_expect_records(dir_, Victim::kNumerical);
}

TEST_F(Recording, KilledSiteLeavesItsLogAndItsRecordUpToTheLastSecond) {
  kill_and_expect_records(dir_, Victim::kSite);
}

}  // namespace
}  // namespace rths
