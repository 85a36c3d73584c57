#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/records/recorder.hpp"

namespace rths {

// Streams a Recorder to a CSV file while the run records it, from a thread of its own, so that a
// run killed at any moment leaves its time history up to the last flush (docs/architecture.md §7).
//
// Design:
// - The step only calls Recorder::record() (no lock, no allocation, no I/O); the writer thread reads
//   the rows the recorder has published (see Recorder) and never touches the step's thread. The
//   mutex and condition variable here are only between the writer and the thread that finishes it.
// - Every flush period the writer formats the new rows and hands them to the kernel with write(2):
//   from then on they survive the death of the process (kill -9), so a kill loses at most the last
//   flush period (0.25 s by default; the guarantee stated to users is "at most the last second").
//   Every sync period it also calls fdatasync(2), so that a power cut loses at most that much.
// - The file is the same text as Recorder::write_csv: header `name_unit,...`, then one line per row
//   at full round-trip precision. A kill can cut the file inside its last line; every line that
//   ends with a newline is a complete row, and the rows are contiguous from the first.
// - The thread runs with normal scheduling (it demotes itself, in case its creator already runs
//   SCHED_FIFO): it must never compete with a step thread for its deadline. It inherits its
//   creator's CPU set, so create it before the step thread pins itself (acquire_realtime).
// - finish() (or the destructor, on every other way out of a run: safe stop, exception) writes every
//   row recorded until then, syncs, closes and joins. Nothing is lost on an orderly end.
class RecordWriter {
 public:
  struct Options {
    std::chrono::milliseconds flush_period{250};
    std::chrono::milliseconds sync_period{5000};  // 0: never fdatasync (not even at the end)
  };

  // What the writer did, for the log and the benchmarks (valid after finish()).
  struct Stats {
    std::uint64_t rows = 0;
    std::uint64_t bytes = 0;
    std::uint64_t syncs = 0;
    double busy_s = 0.0;      // formatting and writing, syncs included
    double sync_s = 0.0;      // in fdatasync
    double max_sync_s = 0.0;  // the longest single fdatasync
  };

  // Creates (truncates) path and writes the header at once, so a missing or unwritable folder
  // throws here with the path named, before the run starts; then starts the writer thread.
  RecordWriter(const Recorder& recorder, std::filesystem::path path, Options options);
  RecordWriter(const Recorder& recorder, std::filesystem::path path);
  // Finishes if finish() was not called; an error is then logged instead of thrown.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  RecordWriter(RecordWriter&&) = delete;
  RecordWriter& operator=(RecordWriter&&) = delete;

  // Writes every row published so far, syncs (unless sync_period is 0), closes the file and joins
  // the thread. Throws std::runtime_error naming the file when any write failed during the run.
  // Further calls do nothing.
  void finish();

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  void run();
  // Writes the rows published since the last call; false after a write error (then stops writing).
  bool write_new_rows();
  void sync();

  const Recorder& recorder_;
  std::filesystem::path path_;
  Options options_;
  int fd_ = -1;
  std::size_t written_rows_ = 0;
  fmt::memory_buffer text_;  // reused: its capacity grows to one chunk of rows and stays
  std::string error_;        // the first write error, reported by finish()
  Stats stats_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool finishing_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace rths
