#include "rths/common/text.hpp"

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

}  // namespace rths
