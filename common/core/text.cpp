#include "common/core/text.hpp"

namespace rths {

namespace {

constexpr std::string_view kBlanks = " \t\r\n\v\f";

}  // namespace

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  for (auto start = text.find_first_not_of(kBlanks); start != std::string_view::npos;
       start = text.find_first_not_of(kBlanks, start)) {
    const auto end = text.find_first_of(kBlanks, start);
    words.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return words;
}

std::string_view trim_blanks(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::string one_line(std::string_view text) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out.push_back(kHex[u >> 4U]);
      out.push_back(kHex[u & 0xfU]);
    }
  }
  return out;
}

std::string shortened(std::string_view text, std::size_t most) {
  if (text.size() <= most) return std::string(text);
  return std::string(text.substr(0, most)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace rths
