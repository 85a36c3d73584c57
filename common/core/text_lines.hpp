#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace rths {

// A text's lines one by one, numbered from 1, each without its line end (LF or CRLF): the readers of
// line-oriented files (matrices, DOF maps) that name the line of what they refuse.
class TextLines {
 public:
  explicit TextLines(std::string text) : text_(std::move(text)) {}

  // The next line into `line`; false after the last.
  bool next(std::string_view& line) {
    if (at_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', at_);
    if (end == std::string::npos) end = text_.size();
    line = std::string_view(text_).substr(at_, end - at_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    at_ = end + 1;
    ++number_;
    return true;
  }
  // The number of the line next() gave last.
  [[nodiscard]] std::size_t number() const { return number_; }

 private:
  std::string text_;
  std::size_t at_ = 0;
  std::size_t number_ = 0;
};

}  // namespace rths
