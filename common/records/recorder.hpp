#pragma once

#include <atomic>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace rths {

// One column of a time history; the unit goes into the CSV header (`x1_m`).
struct Column {
  std::string name;
  std::string unit;
};

// A node's time history, one row per step.
//
// Design (docs/architecture.md §7: a stopped run still leaves complete files up to the stop):
// - Storage for every row of the run is reserved before the run, so record() never allocates
//   (STYLE: the step loop allocates nothing), takes no lock and does no I/O. The evaluation reads
//   the columns from this store after the run.
// - The same store is the buffer between the step and the file. record() writes row r in place and
//   then publishes the count r + 1 with a release store; a reader on another thread (RecordWriter)
//   takes the count with an acquire load and may read every row below it while the step goes on:
//   those rows are never written again. One thread records (the node's step), any number read.
// - Because the store holds the whole run, the writer can fall behind by any amount without
//   anything being lost or the step waiting: there is no queue that could overflow. A row past
//   max_rows is dropped and counted (the run is sized for its planned steps, so none are).
class Recorder {
 public:
  Recorder(std::vector<Column> columns, std::size_t max_rows);

  // Appends one row (exactly one value per column); rows past max_rows are counted and dropped.
  // Real-time safe: a copy into reserved storage and one release store.
  void record(std::span<const double> row);
  // Rows recorded and published so far; every row below this is complete and stays as it is.
  [[nodiscard]] std::size_t rows() const { return rows_.load(std::memory_order_acquire); }
  [[nodiscard]] std::size_t columns() const { return columns_.size(); }
  [[nodiscard]] std::size_t max_rows() const { return max_rows_; }
  [[nodiscard]] std::size_t dropped_rows() const { return dropped_.load(std::memory_order_relaxed); }
  [[nodiscard]] const std::vector<Column>& column_names() const { return columns_; }
  [[nodiscard]] std::size_t column_index(const std::string& name) const;
  // The recorded history of one column (copied out; for evaluation after the run).
  [[nodiscard]] std::vector<double> column(std::size_t index) const;
  // One value of a published row (row < rows()).
  [[nodiscard]] double at(std::size_t row, std::size_t column) const { return data_[row * columns_.size() + column]; }

  // The whole CSV at once (header `name_unit,...`, then every row at full double precision), for a
  // history computed after the run (the monolithic reference). A run's own histories stream to
  // their files while they are recorded (RecordWriter), in the same format.
  void write_csv(const std::filesystem::path& path) const;

 private:
  std::vector<Column> columns_;
  std::vector<double> data_;
  std::size_t max_rows_;
  std::atomic<std::size_t> rows_{0};
  std::atomic<std::size_t> dropped_{0};
};

}  // namespace rths
