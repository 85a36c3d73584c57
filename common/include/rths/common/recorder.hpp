#pragma once

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

// A node's time history, one row per step. Storage for every row is reserved before the run so
// that record() never allocates (STYLE: the step loop allocates nothing).
class Recorder {
 public:
  Recorder(std::vector<Column> columns, std::size_t max_rows);

  // Appends one row (exactly one value per column); rows past max_rows are counted and dropped.
  void record(std::span<const double> row);
  [[nodiscard]] std::size_t rows() const { return rows_; }
  [[nodiscard]] std::size_t columns() const { return columns_.size(); }
  [[nodiscard]] std::size_t dropped_rows() const { return dropped_; }
  [[nodiscard]] const std::vector<Column>& column_names() const { return columns_; }
  [[nodiscard]] std::size_t column_index(const std::string& name) const;
  // The recorded history of one column (copied out; for evaluation after the run).
  [[nodiscard]] std::vector<double> column(std::size_t index) const;
  [[nodiscard]] double at(std::size_t row, std::size_t column) const { return data_[row * columns_.size() + column]; }

  // CSV with a header row `name_unit,...`, full double precision.
  void write_csv(const std::filesystem::path& path) const;

 private:
  std::vector<Column> columns_;
  std::vector<double> data_;
  std::size_t max_rows_;
  std::size_t rows_ = 0;
  std::size_t dropped_ = 0;
};

}  // namespace rths
