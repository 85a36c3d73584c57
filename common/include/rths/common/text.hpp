#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rths {

// The words of text: what blanks (spaces, tabs, line ends) separate.
std::vector<std::string> split_words(std::string_view text);

// text without its leading and trailing blanks (spaces, tabs, carriage returns).
std::string_view trim_blanks(std::string_view text);

}  // namespace rths
