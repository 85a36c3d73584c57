#include "common/records/recorder.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include "csv_rows.hpp"

namespace rths {

Recorder::Recorder(std::vector<Column> columns, std::size_t max_rows)
    : columns_(std::move(columns)), data_(columns_.size() * max_rows), max_rows_(max_rows) {}

void Recorder::record(std::span<const double> row) {
  // Only the recording thread writes rows_, so its own relaxed load is exact.
  const std::size_t r = rows_.load(std::memory_order_relaxed);
  if (r >= max_rows_ || row.size() != columns_.size()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::copy(row.begin(), row.end(), data_.begin() + static_cast<std::ptrdiff_t>(r * columns_.size()));
  // Release: a reader that sees the count r + 1 sees every value of row r.
  rows_.store(r + 1, std::memory_order_release);
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
  const std::size_t n = rows();
  std::vector<double> out(n);
  for (std::size_t r = 0; r < n; ++r) {
    out[r] = at(r, index);
  }
  return out;
}

void Recorder::write_csv(const std::filesystem::path& path) const {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  }
  fmt::memory_buffer buf;
  csv::append_header(buf, columns_);
  std::uint64_t bytes = 0;
  const std::size_t n = rows();
  const bool ok = csv::write_all(fd, buf.data(), buf.size()) && csv::write_rows(fd, buf, *this, 0, n, bytes) == n;
  const int error = errno;
  if (::close(fd) != 0 || !ok) {
    throw std::runtime_error("error writing " + path.string() + ": " + std::strerror(ok ? errno : error));
  }
}

}  // namespace rths
