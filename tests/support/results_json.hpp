// What the tests of the results files share: a JSON text with a member added, and what the schema's
// parser says of a text.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "common/records/results.hpp"

namespace rths::test {

// `text` with `member` (`"name": value,`) put first into the object whose '{' is at `brace`.
inline std::string with_member(std::string text, std::size_t brace, const std::string& member) {
  text.insert(brace + 1, member);
  return text;
}

// Parses text as Message (unknown fields refused); "" when it parses, else the reason.
template <typename Message>
std::string refusal(const std::string& text) {
  Message message;
  try {
    parse_results_json(text, message, "test");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

}  // namespace rths::test
