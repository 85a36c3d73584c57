// `--set` overrides of the config loader: one `path=value` assignment applied to an experiment by
// reflection, every error naming the override and the part of its path that is wrong.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/config/config.hpp"
#include "config_loading.hpp"

namespace rths::loading {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// Splits the inside of `[a, "b, c", d]` at the commas outside quotes.
std::vector<std::string_view> split_list(std::string_view inside) {
  std::vector<std::string_view> items;
  if (trim(inside).empty()) return items;
  bool in_quotes = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < inside.size(); ++i) {
    if (inside[i] == '\\' && in_quotes) {
      ++i;
    } else if (inside[i] == '"') {
      in_quotes = !in_quotes;
    } else if (inside[i] == ',' && !in_quotes) {
      items.push_back(trim(inside.substr(start, i - start)));
      start = i + 1;
    }
  }
  items.push_back(trim(inside.substr(start)));
  return items;
}

namespace {

namespace pb = google::protobuf;
using pb::FieldDescriptor;

bool wrapped(std::string_view text, char open, char close) {
  return text.size() >= 2 && text.front() == open && text.back() == close;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A value that could not be read as its field's type; the caller adds the override and path.
struct BadValue {
  std::string what;
};

template <typename T>
T parse_number(std::string_view text, std::string_view expected) {
  std::string_view digits = text;
  if (digits.starts_with('+')) digits.remove_prefix(1);
  T value{};
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error == std::errc::result_out_of_range) {
    throw BadValue{fmt::format("\"{}\" is out of range; expected {}", text, expected)};
  }
  if (error != std::errc{} || end != digits.data() + digits.size() || digits.empty()) {
    throw BadValue{fmt::format("\"{}\" is not {}", text, expected)};
  }
  return value;
}

template <typename Narrow, typename Wide>
Narrow parse_integer(std::string_view text) {
  const std::string expected =
      fmt::format("an integer from {} to {}", std::numeric_limits<Narrow>::min(), std::numeric_limits<Narrow>::max());
  const Wide wide = parse_number<Wide>(text, expected);
  if (wide < static_cast<Wide>(std::numeric_limits<Narrow>::min()) ||
      wide > static_cast<Wide>(std::numeric_limits<Narrow>::max())) {
    throw BadValue{fmt::format("\"{}\" is out of range; expected {}", text, expected)};
  }
  return static_cast<Narrow>(wide);
}

std::string unquote(std::string_view text) {
  if (!wrapped(text, '"', '"')) return std::string(text);
  std::string out;
  for (std::size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == '\\' && i + 2 < text.size()) ++i;
    out.push_back(text[i]);
  }
  return out;
}

using Scalar = std::variant<double, float, std::int32_t, std::int64_t, std::uint32_t, std::uint64_t, bool, std::string,
                            const pb::EnumValueDescriptor*>;

Scalar parse_scalar(const FieldDescriptor& field, std::string_view text) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return parse_number<double>(text, "a number");
    case FieldDescriptor::CPPTYPE_FLOAT:
      return static_cast<float>(parse_number<double>(text, "a number"));
    case FieldDescriptor::CPPTYPE_INT32:
      return parse_integer<std::int32_t, std::int64_t>(text);
    case FieldDescriptor::CPPTYPE_INT64:
      return parse_integer<std::int64_t, std::int64_t>(text);
    case FieldDescriptor::CPPTYPE_UINT32:
      return parse_integer<std::uint32_t, std::uint64_t>(text);
    case FieldDescriptor::CPPTYPE_UINT64:
      return parse_integer<std::uint64_t, std::uint64_t>(text);
    case FieldDescriptor::CPPTYPE_BOOL:
      if (text == "true") return true;
      if (text == "false") return false;
      throw BadValue{fmt::format("\"{}\" is not a bool; expected true or false", text)};
    case FieldDescriptor::CPPTYPE_STRING:
      return unquote(text);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto& type = *field.enum_type();
      if (const auto* value = type.FindValueByName(std::string(text))) return value;
      const auto names = value_names(type);
      throw BadValue{fmt::format("\"{}\" is not a value of {}; {}expected one of: {}", text, type.name(),
                                 did_you_mean(text, names), fmt::join(names, ", "))};
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  throw BadValue{"is a message; expected a body in braces { ... }"};
}

// The three reflection setters of each scalar type: singular, element at an index, appended.
template <typename T>
struct Setters;
template <>
struct Setters<double> {
  static constexpr auto set = &pb::Reflection::SetDouble;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedDouble;
  static constexpr auto add = &pb::Reflection::AddDouble;
};
template <>
struct Setters<float> {
  static constexpr auto set = &pb::Reflection::SetFloat;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedFloat;
  static constexpr auto add = &pb::Reflection::AddFloat;
};
template <>
struct Setters<std::int32_t> {
  static constexpr auto set = &pb::Reflection::SetInt32;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedInt32;
  static constexpr auto add = &pb::Reflection::AddInt32;
};
template <>
struct Setters<std::int64_t> {
  static constexpr auto set = &pb::Reflection::SetInt64;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedInt64;
  static constexpr auto add = &pb::Reflection::AddInt64;
};
template <>
struct Setters<std::uint32_t> {
  static constexpr auto set = &pb::Reflection::SetUInt32;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedUInt32;
  static constexpr auto add = &pb::Reflection::AddUInt32;
};
template <>
struct Setters<std::uint64_t> {
  static constexpr auto set = &pb::Reflection::SetUInt64;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedUInt64;
  static constexpr auto add = &pb::Reflection::AddUInt64;
};
template <>
struct Setters<bool> {
  static constexpr auto set = &pb::Reflection::SetBool;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedBool;
  static constexpr auto add = &pb::Reflection::AddBool;
};
template <>
struct Setters<std::string> {
  static constexpr auto set = &pb::Reflection::SetString;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedString;
  static constexpr auto add = &pb::Reflection::AddString;
};
template <>
struct Setters<const pb::EnumValueDescriptor*> {
  static constexpr auto set = &pb::Reflection::SetEnum;
  static constexpr auto set_at = &pb::Reflection::SetRepeatedEnum;
  static constexpr auto add = &pb::Reflection::AddEnum;
};

// Stores `value` into `field`: the singular field, the element at `index`, or a new element when
// `index` equals the field's size.
void store(pb::Message& message, const FieldDescriptor& field, int index, const Scalar& value) {
  const auto* reflection = message.GetReflection();
  std::visit(
      [&](const auto& v) {
        using Set = Setters<std::decay_t<decltype(v)>>;
        if (!field.is_repeated()) {
          (reflection->*Set::set)(&message, &field, v);
        } else if (index == reflection->FieldSize(message, &field)) {
          (reflection->*Set::add)(&message, &field, v);
        } else {
          (reflection->*Set::set_at)(&message, &field, index, v);
        }
      },
      value);
}

// One `path=value` assignment, applied to a message by reflection. Every error names the override
// and the part of its path that is wrong.
class Override {
 public:
  explicit Override(std::string assignment) : assignment_(std::move(assignment)) {
    const auto equals = assignment_.find('=');
    if (equals == std::string::npos) {
      fail("", "expected path=value, e.g. site[0].link.forward.delay_s=0.025");
    }
    path_ = trim(std::string_view(assignment_).substr(0, equals));
    value_ = trim(std::string_view(assignment_).substr(equals + 1));
    if (path_.empty()) fail("", "the path before '=' is empty; expected e.g. ground_motion.scale=0.4");
  }

  // Applies the assignment; returns the path it set, element names resolved to indices.
  std::string apply(pb::Message& root) {
    pb::Message* message = &root;
    std::string resolved;
    std::string_view rest = path_;  // the part of the path not yet walked
    while (true) {
      const auto [name, selector] = next_step(rest);
      const auto* field = message->GetDescriptor()->FindFieldByName(std::string(name));
      if (field == nullptr) fail(resolved, unknown_field(*message->GetDescriptor(), name));
      const std::string field_path = child_path(resolved, field->name());
      if (rest.empty()) return assign(*message, *field, selector, field_path);
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
        fail(field_path,
             fmt::format("is a {}, not a message; it has no field \"{}\"", field->type_name(), next_step(rest).name));
      }
      const auto* reflection = message->GetReflection();
      if (!field->is_repeated()) {
        if (selector) fail(field_path, "is not a list; expected no [...] after it");
        // Reaching into one member of a oneof selects that member, as assigning it would.
        message = reflection->MutableMessage(message, field);
        resolved = field_path;
        continue;
      }
      if (!selector) fail(field_path, select_hint(*message, *field, field_path));
      const int index = element(*message, *field, *selector, field_path);
      message = index == reflection->FieldSize(*message, field)
                    ? reflection->AddMessage(message, field)
                    : reflection->MutableRepeatedMessage(message, field, index);
      resolved = element_path(field_path, index);
    }
  }

 private:
  struct Step {
    std::string_view name;
    std::optional<std::string_view> selector;
  };

  [[noreturn]] void fail(const std::string& at, const std::string& what) const {
    throw ConfigError(fmt::format("--set {}: {}{}", shortened(assignment_, 100), at.empty() ? "" : at + ": ", what));
  }

  // Takes `name` or `name[selector]` and the following '.' off the front of `rest`.
  Step next_step(std::string_view& rest) const {
    std::size_t end = 0;
    while (end < rest.size() && rest[end] != '.' && rest[end] != '[') ++end;
    Step step{rest.substr(0, end), std::nullopt};
    if (step.name.empty())
      fail("", fmt::format("\"{}\" is not a field path; expected e.g. site[0].link.forward.delay_s", path_));
    rest.remove_prefix(end);
    if (rest.starts_with('[')) {
      const auto close = rest.find(']');
      if (close == std::string_view::npos) fail("", fmt::format("'[' after \"{}\" is not closed by ']'", step.name));
      step.selector = trim(rest.substr(1, close - 1));
      rest.remove_prefix(close + 1);
    }
    if (rest.starts_with('.')) {
      rest.remove_prefix(1);
      if (rest.empty()) fail("", fmt::format("\"{}\" ends with '.'; expected a field name after it", path_));
    } else if (!rest.empty()) {
      fail("", fmt::format(R"(unexpected "{}" after "{}"; expected '.' and a field name)", rest, step.name));
    }
    return step;
  }

  static std::string select_hint(const pb::Message& message, const FieldDescriptor& field, const std::string& path) {
    const int size = message.GetReflection()->FieldSize(message, &field);
    const bool named = field.message_type()->FindFieldByName("name") != nullptr;
    return fmt::format("is a list of {} elements; expected an element: {}[0]..{}[{}]{}", size, path, path, size,
                       named ? fmt::format(" (the last appends), or {}[<name>]", path) : " (the last appends)");
  }

  // The index selected by `[3]` or `[purdue]` (matching the element's `name`); the size appends.
  [[nodiscard]] int element(const pb::Message& message, const FieldDescriptor& field, std::string_view selector,
                            const std::string& path) const {
    const auto* reflection = message.GetReflection();
    const int size = reflection->FieldSize(message, &field);
    const std::string range =
        size == 0 ? "0 to append the first one" : fmt::format("0..{}, or {} to append one", size - 1, size);
    if (all_digits(selector)) {
      int index = 0;
      const auto [end, error] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
      if (error != std::errc{} || index > size) {
        fail(path, fmt::format("index {} is out of range: there {} {} element{}; expected {}", selector,
                               size == 1 ? "is" : "are", size, size == 1 ? "" : "s", range));
      }
      return index;
    }
    if (selector.starts_with('-') && all_digits(selector.substr(1))) {
      fail(path, fmt::format("index {} is negative; expected {}", selector, range));
    }
    const auto* name_field = field.message_type()->FindFieldByName("name");
    if (name_field == nullptr || name_field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
      fail(path, fmt::format("\"{}\" is not an index, and {} elements have no name; expected {}", selector,
                             field.name(), range));
    }
    std::vector<std::string> names;
    for (int i = 0; i < size; ++i) {
      const auto& candidate = reflection->GetRepeatedMessage(message, &field, i);
      names.push_back(candidate.GetReflection()->GetString(candidate, name_field));
      if (names.back() == selector) return i;
    }
    if (names.empty())
      fail(path, fmt::format("no element is named \"{}\": the list is empty; expected 0 to append one", selector));
    fail(path, fmt::format("no element is named \"{}\"; {}expected an index (0..{}) or one of: {}", selector,
                           did_you_mean(selector, names), size - 1, fmt::join(names, ", ")));
  }

  // Assigns value_ to the last field of the path; returns the path it set.
  [[nodiscard]] std::string assign(pb::Message& message, const FieldDescriptor& field,
                                   std::optional<std::string_view> selector, const std::string& field_path) const {
    if (value_.empty() && !selector) {
      // `field=` with nothing after it removes the field, as if the file had never given it
      // (e.g. dropping a site's link when a sweep makes it LOCAL).
      message.GetReflection()->ClearField(&message, &field);
      return field_path;
    }
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE)
      return assign_message(message, field, selector, field_path);
    try {
      if (field.is_repeated()) return assign_repeated_scalar(message, field, selector, field_path);
      if (selector) fail(field_path, "is not a list; expected no [...] after it");
      store(message, field, -1, parse_scalar(field, value_));
      return field_path;
    } catch (const BadValue& bad) {
      fail(field_path, bad.what);
    }
  }

  // `field={ text-format body }` replaces the message (or the selected or appended element).
  [[nodiscard]] std::string assign_message(pb::Message& message, const FieldDescriptor& field,
                                           std::optional<std::string_view> selector,
                                           const std::string& field_path) const {
    if (!wrapped(value_, '{', '}')) {
      fail(field_path, fmt::format("is a message; expected its text-format body in braces, e.g. {}={{ ... }}, "
                                   "or one of its fields: {}",
                                   field_path, fmt::join(field_names(*field.message_type()), ", ")));
    }
    const auto* reflection = message.GetReflection();
    pb::Message* target = nullptr;
    std::string target_path = field_path;
    if (field.is_repeated()) {
      if (!selector) fail(field_path, select_hint(message, field, field_path));
      const int index = element(message, field, *selector, field_path);
      target = index == reflection->FieldSize(message, &field)
                   ? reflection->AddMessage(&message, &field)
                   : reflection->MutableRepeatedMessage(&message, &field, index);
      target_path = element_path(field_path, index);
    } else {
      if (selector) fail(field_path, "is not a list; expected no [...] after it");
      target = reflection->MutableMessage(&message, &field);
    }
    target->Clear();
    const std::string_view body = std::string_view(value_).substr(1, value_.size() - 2);
    if (const auto failure = parse_text(body, *target, nullptr)) {
      // Counted in the value, so that the column matches what the user typed after '='.
      const std::string at = failure->line == 1 ? fmt::format("column {}", failure->column + 1)
                                                : fmt::format("line {}, column {}", failure->line, failure->column);
      fail(target_path, fmt::format("{} of the value: {}", at, failure->message));
    }
    return target_path;
  }

  // `field=[a, b]` replaces all values; `field[i]=a` sets one (or appends at i == size).
  [[nodiscard]] std::string assign_repeated_scalar(pb::Message& message, const FieldDescriptor& field,
                                                   std::optional<std::string_view> selector,
                                                   const std::string& field_path) const {
    const auto* reflection = message.GetReflection();
    if (selector) {
      const int size = reflection->FieldSize(message, &field);
      int index = -1;
      if (all_digits(*selector)) std::from_chars(selector->data(), selector->data() + selector->size(), index);
      if (index < 0 || index > size) {
        fail(field_path, fmt::format("[{}] is not an index from 0 to {} (the last appends)", *selector, size));
      }
      store(message, field, index, parse_scalar(field, value_));
      return field_path;
    }
    if (!wrapped(value_, '[', ']')) {
      fail(field_path, fmt::format("is a list; expected all its values in brackets, e.g. {}=[1, 2], or one element "
                                   "as {}[0]=1",
                                   field_path, field_path));
    }
    std::vector<Scalar> values;
    for (const auto item : split_list(std::string_view(value_).substr(1, value_.size() - 2))) {
      values.push_back(parse_scalar(field, item));
    }
    reflection->ClearField(&message, &field);
    for (std::size_t i = 0; i < values.size(); ++i) store(message, field, static_cast<int>(i), values[i]);
    return field_path;
  }

  std::string assignment_;
  std::string path_;
  std::string value_;
};

}  // namespace
}  // namespace rths::loading

namespace rths {
namespace {

using loading::Override;

}  // namespace

std::string apply_override_resolved(config::Experiment& experiment, const std::string& assignment) {
  // Work on a copy so that a failed override leaves the experiment as it was.
  config::Experiment scratch = experiment;
  std::string path = Override(assignment).apply(scratch);
  experiment = std::move(scratch);
  return path;
}

void apply_override(config::Experiment& experiment, const std::string& assignment) {
  apply_override_resolved(experiment, assignment);
}

}  // namespace rths
