#include "common/core/input_file.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <sys/stat.h>

#include "common/core/config_error.hpp"

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

std::string read_text_file(const std::filesystem::path& file) {
  const auto cannot = [&](const char* what, int error) {
    return ConfigError(fmt::format("cannot {} {}: {}", what, file.string(), std::generic_category().message(error)));
  };
  const std::uintmax_t bytes = check_input_file(file);
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw cannot("open", errno != 0 ? errno : ENOENT);
  // Read up to the bound, not to the end: a file that grew since it was checked is refused, not read on.
  std::string text;
  text.reserve(static_cast<std::size_t>(bytes));
  std::array<char, 1U << 16U> chunk{};
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) {
      throw ConfigError(fmt::format("{}: holds more than {} bytes; expected a text file of at most that", file.string(),
                                    kMaxInputFileBytes));
    }
  }
  if (in.bad()) throw cannot("read", errno != 0 ? errno : EIO);
  std::size_t number = 1;
  for (std::size_t at = 0; at < text.size(); ++number) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    if (end - at > kMaxInputLineBytes) {
      throw ConfigError(
          fmt::format("{}:{}: a line of {} bytes; expected lines of at most {} bytes (is it a text file?)",
                      file.string(), number, end - at, kMaxInputLineBytes));
    }
    at = end + 1;
  }
  return text;
}

}  // namespace rths
