#include "rths/common/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>
#include <sys/stat.h>

#include "rths/common/config.hpp"

namespace rths {

namespace {

std::string mebibytes(std::uintmax_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / static_cast<double>(std::uintmax_t{1} << 20U));
}

const char* kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::uintmax_t check_input_file(const std::filesystem::path& file, std::string_view what) {
  const std::string named = what.empty() ? file.string() : fmt::format("{} {}", what, file.string());
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    throw ConfigError(fmt::format("cannot open {}: {}", named, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    throw ConfigError(fmt::format("cannot open {}: {}", named, std::strerror(EISDIR)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw ConfigError(
        fmt::format("cannot open {}: it is {}; expected a regular text file", named, kind_of(st.st_mode)));
  }
  const auto bytes = static_cast<std::uintmax_t>(st.st_size);
  if (bytes > kMaxInputFileBytes) {
    throw ConfigError(fmt::format("{}: holds {} ({} bytes); expected a text file of at most {}", file.string(),
                                  mebibytes(bytes), bytes, mebibytes(kMaxInputFileBytes)));
  }
  return bytes;
}

bool read_input_line(std::istream& in, std::string& line, const std::filesystem::path& file, std::size_t number) {
  line.clear();
  std::streambuf* buffer = in.rdbuf();
  if (buffer == nullptr) return false;
  bool any = false;
  for (int c = buffer->sbumpc(); c != std::char_traits<char>::eof(); c = buffer->sbumpc()) {
    any = true;
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (line.size() == kMaxInputLineBytes) {
      throw ConfigError(fmt::format("{}:{}: a line longer than {} bytes; expected a text file of shorter lines",
                                    file.string(), number, kMaxInputLineBytes));
    }
    line.push_back(static_cast<char>(c));
  }
  in.setstate(std::ios::eofbit);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

}  // namespace rths
