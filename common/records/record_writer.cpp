#include "common/records/record_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "csv_rows.hpp"

namespace rths {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

namespace csv {

void append_header(fmt::memory_buffer& out, const std::vector<Column>& columns) {
  for (std::size_t c = 0; c < columns.size(); ++c) {
    fmt::format_to(std::back_inserter(out), "{}{}_{}", c == 0 ? "" : ",", columns[c].name, columns[c].unit);
  }
  out.push_back('\n');
}

void append_rows(fmt::memory_buffer& out, const Recorder& rec, std::size_t first, std::size_t last) {
  for (std::size_t r = first; r < last; ++r) {
    for (std::size_t c = 0; c < rec.columns(); ++c) {
      // fmt's "{}" is the shortest representation that round-trips (Ryu-like): bit-exact on reading.
      fmt::format_to(std::back_inserter(out), "{}{}", c == 0 ? "" : ",", rec.at(r, c));
    }
    out.push_back('\n');
  }
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::size_t write_rows(int fd, fmt::memory_buffer& out, const Recorder& rec, std::size_t first, std::size_t last,
                       std::uint64_t& bytes) {
  while (first < last) {
    const std::size_t chunk_end = std::min(last, first + kRowsPerWrite);
    out.clear();
    append_rows(out, rec, first, chunk_end);
    if (!write_all(fd, out.data(), out.size())) return first;
    bytes += out.size();
    first = chunk_end;
  }
  return last;
}

}  // namespace csv

RecordWriter::RecordWriter(const Recorder& recorder, std::filesystem::path path)
    : RecordWriter(recorder, std::move(path), Options{}) {}

RecordWriter::RecordWriter(const Recorder& recorder, std::filesystem::path path, Options options)
    : recorder_(recorder),
      path_(std::move(path)),
      options_(options),
      fd_(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
  if (fd_ < 0) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", path_.string(), std::strerror(errno)));
  }
  csv::append_header(text_, recorder_.column_names());
  if (!csv::write_all(fd_, text_.data(), text_.size())) {
    const int error = errno;
    ::close(fd_);
    throw std::runtime_error(fmt::format("error writing {}: {}", path_.string(), std::strerror(error)));
  }
  stats_.bytes = text_.size();
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

RecordWriter::~RecordWriter() {
  try {
    finish();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
}

void RecordWriter::run() {
  // Normal scheduling whatever the creator runs at: the step thread's deadline comes first.
  const sched_param normal{};
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
  auto last_sync = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  for (;;) {
    const bool finishing = wake_.wait_for(lock, options_.flush_period, [this] { return finishing_; });
    lock.unlock();
    const bool ok = write_new_rows();
    const bool sync_due = options_.sync_period.count() > 0 &&
                          (finishing || std::chrono::steady_clock::now() - last_sync >= options_.sync_period);
    if (ok && sync_due) {
      sync();
      last_sync = std::chrono::steady_clock::now();
    }
    if (finishing) {
      return;
    }
    lock.lock();
  }
}

bool RecordWriter::write_new_rows() {
  if (!error_.empty()) {
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::size_t published = recorder_.rows();  // acquire: rows below it are complete
  const std::size_t reached = csv::write_rows(fd_, text_, recorder_, written_rows_, published, stats_.bytes);
  stats_.rows += reached - written_rows_;
  written_rows_ = reached;
  if (reached < published) {
    error_ = fmt::format("error writing {}: {}", path_.string(), std::strerror(errno));
    // Said now, not only at the end: the run goes on (its record stays whole in memory), the
    // operator should know the file stopped at row written_rows_.
    spdlog::error("{}; the file stops at row {}, the run goes on", error_, written_rows_);
  }
  stats_.busy_s += seconds_since(start);
  return error_.empty();
}

void RecordWriter::sync() {
  const auto start = std::chrono::steady_clock::now();
  if (::fdatasync(fd_) != 0 && error_.empty()) {
    error_ = fmt::format("error writing {}: fdatasync: {}", path_.string(), std::strerror(errno));
    spdlog::error("{}", error_);
  }
  const double took = seconds_since(start);
  ++stats_.syncs;
  stats_.sync_s += took;
  stats_.busy_s += took;
  stats_.max_sync_s = std::max(stats_.max_sync_s, took);
}

void RecordWriter::finish() {
  if (finished_) {
    return;
  }
  finished_ = true;
  {
    const std::scoped_lock lock(mutex_);
    finishing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (::close(fd_) != 0 && error_.empty()) {
    error_ = fmt::format("error writing {}: close: {}", path_.string(), std::strerror(errno));
  }
  fd_ = -1;
  if (!error_.empty()) {
    throw std::runtime_error(error_);
  }
  spdlog::info("{}: {} rows, {:.1f} MB streamed; writer busy {:.3f} s, {} fdatasync {:.3f} s (longest {:.1f} ms)",
               path_.filename().string(), stats_.rows, static_cast<double>(stats_.bytes) / 1e6, stats_.busy_s,
               stats_.syncs, stats_.sync_s, stats_.max_sync_s * 1e3);
}

}  // namespace rths
