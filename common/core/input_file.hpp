#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <string>
#include <string_view>

namespace rths {

// Every file a config names or a command reads (configs, matrices, DOF maps, ground motions, delay
// traces, calibrations, key files, studies) is bounded before it is read: a regular file (a device,
// a FIFO or a folder is refused at once: /dev/zero would never end, a FIFO would block) of at most
// kMaxInputFileBytes, with lines of at most kMaxInputLineBytes. The largest legitimate inputs fit
// with room: a record of 10 million samples (kMaxGroundMotionSamples) is about 400 MB, a Matrix
// Market file of a million entries 40 MB, the widest line a dense CSV row of 20 000 values.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{512} << 20U;  // 512 MiB
inline constexpr std::size_t kMaxInputLineBytes = std::size_t{1} << 20U;          // 1 MiB

// The size of file in bytes; throws ConfigError naming it ("cannot open [WHAT ]FILE: ...") unless it
// exists, is a regular file (after symbolic links) and holds at most kMaxInputFileBytes.
std::uintmax_t check_input_file(const std::filesystem::path& file, std::string_view what = {});

// The next line of `in` (without its line end, LF or CRLF) into `line`; false after the last one.
// A line longer than kMaxInputLineBytes throws ConfigError "FILE:NUMBER: ..." before it is kept
// (number is the line's, from 1).
bool read_input_line(std::istream& in, std::string& line, const std::filesystem::path& file, std::size_t number);

// The whole of a text file, checked as check_input_file does; throws ConfigError "cannot open FILE:
// <reason>" (or "cannot read").
std::string read_text_file(const std::filesystem::path& file);

}  // namespace rths
