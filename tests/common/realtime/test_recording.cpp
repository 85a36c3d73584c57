// Records that survive a crash (docs/architecture.md §7), in real time: the CSV streamed by RecordWriter
// reaches the file while the run goes on, and a node killed with kill -9 leaves its log and its record
// up to about the last second (what the CSV holds and orderly stops: unit/test_recording.cpp).
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

#include "common/core/exit_codes.hpp"
#include "common/records/record_writer.hpp"
#include "common/records/recorder.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/alloc_counter.hpp"
#include "support/process.hpp"
#include "support/recording.hpp"
#include "support/test_support.hpp"

namespace rths::test_recording {
namespace {

using test::columns_named;
using test::Csv;
using test::expect_file_holds;

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::Process;

using test::read_complete_rows;
using test::Recording;

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
}  // namespace rths::test_recording
