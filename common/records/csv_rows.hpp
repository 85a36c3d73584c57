#pragma once

// The CSV text of a Recorder, shared by the streaming writer and the write-at-once path so that both
// files are byte for byte the same.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "common/records/recorder.hpp"

namespace rths::csv {

// Rows formatted per write(2): bounds the text buffer (about 1-4 MB for a 32-site record).
constexpr std::size_t kRowsPerWrite = 4096;

// `name_unit,...` and a newline.
void append_header(fmt::memory_buffer& out, const std::vector<Column>& columns);

// Rows [first, last) of rec (all published), one line each. Doubles are written in the shortest form
// that reads back to the same bits: the CSV holds exactly what was computed.
void append_rows(fmt::memory_buffer& out, const Recorder& rec, std::size_t first, std::size_t last);

// Writes all of data to fd (retrying short writes and EINTR); false on an error, errno set.
bool write_all(int fd, const char* data, std::size_t size);

// Writes rows [first, last) of rec (all published) to fd, kRowsPerWrite at a time, formatted in out
// (cleared before each). Returns the row before which every row is written: last, or the first row
// of the write that failed (errno set). bytes grows by what was written.
std::size_t write_rows(int fd, fmt::memory_buffer& out, const Recorder& rec, std::size_t first, std::size_t last,
                       std::uint64_t& bytes);

}  // namespace rths::csv
