#include "rths/common/recorder.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace rths {

Recorder::Recorder(std::vector<Column> columns, std::size_t max_rows)
    : columns_(std::move(columns)), data_(columns_.size() * max_rows), max_rows_(max_rows) {}

void Recorder::record(std::span<const double> row) {
  if (rows_ >= max_rows_ || row.size() != columns_.size()) {
    ++dropped_;
    return;
  }
  std::copy(row.begin(), row.end(), data_.begin() + static_cast<std::ptrdiff_t>(rows_ * columns_.size()));
  ++rows_;
}

std::size_t Recorder::column_index(const std::string& name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) {
      return i;
    }
  }
  throw std::out_of_range("no recorded column named " + name);
}

std::vector<double> Recorder::column(std::size_t index) const {
  std::vector<double> out(rows_);
  for (std::size_t r = 0; r < rows_; ++r) {
    out[r] = at(r, index);
  }
  return out;
}

void Recorder::write_csv(const std::filesystem::path& path) const {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!file) {
    throw std::runtime_error("cannot write " + path.string());
  }
  fmt::memory_buffer buf;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    fmt::format_to(std::back_inserter(buf), "{}{}_{}", c == 0 ? "" : ",", columns_[c].name, columns_[c].unit);
  }
  buf.push_back('\n');
  for (std::size_t r = 0; r < rows_; ++r) {
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      // Shortest representation that round-trips: the CSV holds exactly what was computed.
      fmt::format_to(std::back_inserter(buf), "{}{}", c == 0 ? "" : ",", at(r, c));
    }
    buf.push_back('\n');
    if (buf.size() > (1U << 20U)) {
      std::fwrite(buf.data(), 1, buf.size(), file.get());
      buf.clear();
    }
  }
  std::fwrite(buf.data(), 1, buf.size(), file.get());
  if (std::ferror(file.get()) != 0) {
    throw std::runtime_error("error writing " + path.string());
  }
}

}  // namespace rths
