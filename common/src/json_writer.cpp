#include "rths/common/json_writer.hpp"

#include <cmath>

#include <fmt/format.h>

namespace rths {

void JsonWriter::indent() {
  out_.push_back('\n');
  out_.append(2 * first_.size(), ' ');
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) {
      out_.push_back(',');
    }
    first_.back() = false;
    indent();
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) {
    indent();
  }
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) {
    indent();
  }
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  value(name);
  out_.append(": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  separate();
  if (std::isfinite(v)) {
    out_.append(fmt::format("{}", v));
  } else {
    out_.append("null");
  }
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
  separate();
  out_.append(fmt::format("{}", v));
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t v) {
  separate();
  out_.append(fmt::format("{}", v));
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_.append(json);
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view v) {
  separate();
  out_.push_back('"');
  for (const char c : v) {
    switch (c) {
      case '"':
        out_.append("\\\"");
        break;
      case '\\':
        out_.append("\\\\");
        break;
      case '\n':
        out_.append("\\n");
        break;
      case '\t':
        out_.append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out_.append(fmt::format("\\u{:04x}", static_cast<unsigned>(c)));
        } else {
          out_.push_back(c);
        }
    }
  }
  out_.push_back('"');
  return *this;
}

}  // namespace rths
