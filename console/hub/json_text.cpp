#include "console/hub/json_text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

namespace rths::console {

namespace {

// A cursor over JSON text: the blank between tokens and single characters, for both readers below.
class JsonCursor {
 protected:
  explicit JsonCursor(std::string_view text) : s_(text) {}
  void skip_blank() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool take(char c) {
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  std::size_t at_ = 0;
};

// A walk over a JSON text that steps over whole values, enough to find an object's top-level
// fields; anything it does not understand ends the walk (the field is then "absent").
class JsonWalk : JsonCursor {
 public:
  explicit JsonWalk(std::string_view text) : JsonCursor(text) {}

  // The top-level value of key in the object the text is: [begin, end) of its text.
  std::optional<std::string_view> field(std::string_view key) {
    skip_blank();
    if (!take('{')) {
      return std::nullopt;
    }
    for (int guard = 0; guard < 100000; ++guard) {
      skip_blank();
      std::string name;
      if (!string(&name)) {
        return std::nullopt;
      }
      skip_blank();
      if (!take(':')) {
        return std::nullopt;
      }
      skip_blank();
      const std::size_t begin = at_;
      if (!value(0)) {
        return std::nullopt;
      }
      if (name == key) {
        return s_.substr(begin, at_ - begin);
      }
      skip_blank();
      if (!take(',')) {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // A JSON string at the cursor, unescaped into out (nullptr: only stepped over).
  bool string(std::string* out) {
    if (!take('"')) {
      return false;
    }
    while (at_ < s_.size()) {
      const char c = s_[at_++];
      if (c == '"') {
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      if (c != '\\') {
        if (out != nullptr) out->push_back(c);
        continue;
      }
      if (at_ >= s_.size()) {
        return false;
      }
      const char e = s_[at_++];
      char plain = 0;
      switch (e) {
        case '"':
          plain = '"';
          break;
        case '\\':
          plain = '\\';
          break;
        case '/':
          plain = '/';
          break;
        case 'b':
          plain = '\b';
          break;
        case 'f':
          plain = '\f';
          break;
        case 'n':
          plain = '\n';
          break;
        case 'r':
          plain = '\r';
          break;
        case 't':
          plain = '\t';
          break;
        case 'u': {
          if (at_ + 4 > s_.size()) return false;
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = s_[at_++];
            code <<= 4U;
            if (h >= '0' && h <= '9')
              code |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
              code |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              code |= static_cast<unsigned>(h - 'A' + 10);
            else
              return false;
          }
          // The console only compares and shows these strings: a code point as UTF-8 (a lone
          // surrogate as is; the page gets the JSON itself, not this).
          if (out != nullptr) {
            if (code < 0x80) {
              out->push_back(static_cast<char>(code));
            } else if (code < 0x800) {
              out->push_back(static_cast<char>(0xC0U | (code >> 6U)));
              out->push_back(static_cast<char>(0x80U | (code & 0x3FU)));
            } else {
              out->push_back(static_cast<char>(0xE0U | (code >> 12U)));
              out->push_back(static_cast<char>(0x80U | ((code >> 6U) & 0x3FU)));
              out->push_back(static_cast<char>(0x80U | (code & 0x3FU)));
            }
          }
          continue;
        }
        default:
          return false;
      }
      if (out != nullptr) out->push_back(plain);
    }
    return false;
  }

 private:
  // Nesting is bounded: a key holder's frame is still data, and deep nesting would be a stack.
  bool value(int depth) {
    if (depth > 32 || at_ >= s_.size()) {
      return false;
    }
    const char c = s_[at_];
    if (c == '"') {
      return string(nullptr);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at_;
      skip_blank();
      if (take(close)) {
        return true;
      }
      while (true) {
        skip_blank();
        if (c == '{') {
          if (!string(nullptr)) return false;
          skip_blank();
          if (!take(':')) return false;
          skip_blank();
        }
        if (!value(depth + 1)) return false;
        skip_blank();
        if (take(close)) return true;
        if (!take(',')) return false;
      }
    }
    // A number, true, false or null: the run of characters that can make one.
    const std::size_t begin = at_;
    while (at_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[at_])) != 0 || s_[at_] == '-' ||
                               s_[at_] == '+' || s_[at_] == '.')) {
      ++at_;
    }
    return at_ > begin;
  }
};

// A strict reader of JSON (RFC 8259) that only says whether the text is valid, so that the hub and
// the page's JSON.parse read a body alike: a duplicate key (the hub would see the first, JSON.parse
// the last), a number JSON has not (NaN, Infinity, 1e999 which JSON.parse makes Infinity) or
// invalid UTF-8 makes the whole body refused.
class StrictJson : JsonCursor {
 public:
  explicit StrictJson(std::string_view text) : JsonCursor(text) {}
  bool object() {
    skip_blank();
    if (at_ >= s_.size() || s_[at_] != '{' || !value(0)) return false;
    skip_blank();
    return at_ == s_.size();
  }

 private:
  bool value(int depth) {
    if (depth > 32 || at_ >= s_.size()) return false;
    const char c = s_[at_];
    if (c == '{') return members(depth);
    if (c == '[') return elements(depth);
    if (c == '"') return string(nullptr);
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
  bool members(int depth) {
    ++at_;
    std::set<std::u16string> keys;
    skip_blank();
    if (take('}')) return true;
    while (true) {
      skip_blank();
      std::u16string key;
      if (!string(&key) || !keys.insert(std::move(key)).second) return false;
      skip_blank();
      if (!take(':')) return false;
      skip_blank();
      if (!value(depth + 1)) return false;
      skip_blank();
      if (take('}')) return true;
      if (!take(',')) return false;
    }
  }
  bool elements(int depth) {
    ++at_;
    skip_blank();
    if (take(']')) return true;
    while (true) {
      skip_blank();
      if (!value(depth + 1)) return false;
      skip_blank();
      if (take(']')) return true;
      if (!take(',')) return false;
    }
  }
  bool literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  bool digits() {
    const std::size_t begin = at_;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    return at_ > begin;
  }
  bool number() {
    const std::size_t begin = at_;
    take('-');
    if (take('0')) {
      if (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') return false;  // no leading zero
    } else if (!digits()) {
      return false;
    }
    if (take('.') && !digits()) return false;
    if (take('e') || take('E')) {
      if (!take('+')) take('-');
      if (!digits()) return false;
    }
    const std::string text(s_.substr(begin, at_ - begin));
    return std::isfinite(std::strtod(text.c_str(), nullptr));
  }
  // A string, into out as JSON.parse reads it (UTF-16 code units), so that keys compare as the page's
  // do: "a", "\u0061" and "\u0041" lower-cased are not confused, "a" and "\u0061" are one key.
  bool string(std::u16string* out) {
    if (!take('"')) return false;
    while (at_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[at_]);
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (at_ + 1 >= s_.size()) return false;
        const char e = s_[at_ + 1];
        if (e == 'u') {
          if (at_ + 6 > s_.size()) return false;
          unsigned unit = 0;
          for (std::size_t k = at_ + 2; k < at_ + 6; ++k) {
            const auto h = static_cast<unsigned char>(s_[k]);
            if (std::isxdigit(h) == 0) return false;
            unit = unit * 16 + (h <= '9' ? static_cast<unsigned>(h - '0') : (h | 0x20U) - 'a' + 10);
          }
          if (out != nullptr) out->push_back(static_cast<char16_t>(unit));
          at_ += 6;
          continue;
        }
        static constexpr std::string_view kEscapes = "\"\\/bfnrt";
        static constexpr std::string_view kMeanings = "\"\\/\b\f\n\r\t";
        const auto which = kEscapes.find(e);
        if (which == std::string_view::npos) return false;
        if (out != nullptr) out->push_back(static_cast<char16_t>(kMeanings[which]));
        at_ += 2;
        continue;
      }
      const std::size_t length = utf8_length(at_);
      if (length == 0) return false;
      if (out != nullptr) {
        unsigned code = length == 1 ? c : c & (0x7FU >> length);
        for (std::size_t k = 1; k < length; ++k) {
          code = (code << 6U) | (static_cast<unsigned char>(s_[at_ + k]) & 0x3FU);
        }
        if (code >= 0x10000U) {
          out->push_back(static_cast<char16_t>(0xD800U + ((code - 0x10000U) >> 10U)));
          out->push_back(static_cast<char16_t>(0xDC00U + ((code - 0x10000U) & 0x3FFU)));
        } else {
          out->push_back(static_cast<char16_t>(code));
        }
      }
      at_ += length;
    }
    return false;
  }
  // The length of the valid UTF-8 sequence at `at` (no overlong form, no surrogate, at most
  // U+10FFFF), 0 when it is not one.
  [[nodiscard]] std::size_t utf8_length(std::size_t at) const {
    const auto b = [&](std::size_t k) { return at + k < s_.size() ? static_cast<unsigned char>(s_[at + k]) : 0U; };
    const unsigned c = b(0);
    const auto cont = [&](std::size_t k) { return (b(k) & 0xC0U) == 0x80U; };
    if (c < 0x80U) return 1;
    if (c >= 0xC2U && c <= 0xDFU) return cont(1) ? 2 : 0;
    if (c >= 0xE0U && c <= 0xEFU) {
      if (!cont(1) || !cont(2)) return 0;
      if (c == 0xE0U && b(1) < 0xA0U) return 0;   // overlong
      if (c == 0xEDU && b(1) >= 0xA0U) return 0;  // a surrogate
      return 3;
    }
    if (c >= 0xF0U && c <= 0xF4U) {
      if (!cont(1) || !cont(2) || !cont(3)) return 0;
      if (c == 0xF0U && b(1) < 0x90U) return 0;   // overlong
      if (c == 0xF4U && b(1) >= 0x90U) return 0;  // beyond U+10FFFF
      return 4;
    }
    return 0;
  }
};

}  // namespace

std::optional<std::string> json_string_field(std::string_view json, std::string_view key) {
  JsonWalk walk(json);
  const auto raw = walk.field(key);
  if (!raw || raw->empty() || raw->front() != '"') {
    return std::nullopt;
  }
  std::string out;
  JsonWalk value(*raw);
  if (!value.string(&out)) {
    return std::nullopt;
  }
  return out;
}

std::optional<double> json_number_field(std::string_view json, std::string_view key) {
  JsonWalk walk(json);
  const auto raw = walk.field(key);
  if (!raw || raw->empty()) {
    return std::nullopt;
  }
  const std::string text(*raw);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    return std::nullopt;
  }
  return v;
}

std::optional<std::uint64_t> json_whole_field(std::string_view json, std::string_view key) {
  JsonWalk walk(json);
  const auto raw = walk.field(key);
  if (!raw || raw->empty() || std::isdigit(static_cast<unsigned char>(raw->front())) == 0) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), v);
  if (ec != std::errc{} || end != raw->data() + raw->size()) {
    return std::nullopt;
  }
  return v;
}

bool strict_json_object(std::string_view text) {
  return StrictJson(text).object();
}

}  // namespace rths::console
