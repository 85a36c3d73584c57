#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// The console's reading of the nodes' JSON bodies: whether a body is strict JSON, and its top-level
// fields. Bodies are data from the network: every reader is bounded and refuses what it does not
// understand.
namespace rths::console {

// The value of a top-level string field of a JSON object ("node", "state"), unescaped; nullopt when
// absent, not a string, or the text is not an object this scanner can walk.
std::optional<std::string> json_string_field(std::string_view json, std::string_view key);
// The value of a top-level number field; nullopt when absent or not a number.
std::optional<double> json_number_field(std::string_view json, std::string_view key);
// The value of a top-level whole-number field exactly (a sequence number); nullopt when absent or
// not a whole number from 0 to 2^64 - 1.
std::optional<std::uint64_t> json_whole_field(std::string_view json, std::string_view key);

// Whether text is one JSON object as RFC 8259 has it, read the same by every parser: no duplicate
// key in any object, numbers that are finite doubles, strings of valid UTF-8, nesting at most 32
// deep, nothing after it.
bool strict_json_object(std::string_view text);

}  // namespace rths::console
