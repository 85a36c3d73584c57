#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rths {

// The words of text: what blanks (spaces, tabs, line ends) separate.
std::vector<std::string> split_words(std::string_view text);

// text without its leading and trailing blanks (spaces, tabs, carriage returns).
std::string_view trim_blanks(std::string_view text);

// text on one line: every control character (a line end, a tab, an escape, DEL) written as C writes
// it in a string (\n, \r, \t, \xNN). An error message is one line whatever user text it quotes, so
// that a log, a terminal and a script reading the last line see the whole message and nothing else.
// Text without control characters comes back unchanged, so escaping twice is escaping once.
std::string one_line(std::string_view text);

// text as a message quotes it: whole when it has at most `most` bytes, else its first `most` bytes and
// "... (N bytes)", so that a value of ten thousand characters does not become the message.
std::string shortened(std::string_view text, std::size_t most = 60);

}  // namespace rths
