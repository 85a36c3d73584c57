// Loading an experiment: text-format parsing that keeps the position of every field, `--set`
// overrides applied by reflection, and the canonical text form. What the values must mean is
// checked in config_validate.cpp.
#include "rths/common/config.hpp"
#include "rths/common/input_file.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <variant>

#include "rths/common/matrix_market.hpp"
#include "rths/common/text_lines.hpp"

namespace rths {
namespace {

namespace pb = google::protobuf;
using pb::FieldDescriptor;
using pb::TextFormat;

// ---------------------------------------------------------------------------------------------
// Naming help: an unknown name is answered with the valid ones and the closest of them.

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0U : 1U)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// `did you mean "mass_kg"? ` when one name is within a typo or two of `wrong`, else nothing.
std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& names) {
  const std::string* best = nullptr;
  std::size_t best_distance = std::max<std::size_t>(2, wrong.size() / 3) + 1;
  for (const auto& name : names) {
    const std::size_t distance = edit_distance(wrong, name);
    if (distance < best_distance) {
      best = &name;
      best_distance = distance;
    }
  }
  return best == nullptr ? std::string{} : fmt::format("did you mean \"{}\"? ", *best);
}

std::vector<std::string> field_names(const pb::Descriptor& type) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(type.field_count()));
  for (int i = 0; i < type.field_count(); ++i) names.push_back(type.field(i)->name());
  return names;
}

std::vector<std::string> value_names(const pb::EnumDescriptor& type) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(type.value_count()));
  for (int i = 0; i < type.value_count(); ++i) names.push_back(type.value(i)->name());
  return names;
}

std::string unknown_field(const pb::Descriptor& type, std::string_view wrong) {
  const auto names = field_names(type);
  return fmt::format("unknown field \"{}\" in {}; {}expected one of: {}", wrong, type.name(),
                     did_you_mean(wrong, names), fmt::join(names, ", "));
}

// The texts between double quotes in one of protobuf's parser messages.
std::vector<std::string_view> quoted_parts(std::string_view message) {
  std::vector<std::string_view> parts;
  for (std::size_t open = message.find('"'); open != std::string_view::npos;) {
    const std::size_t close = message.find('"', open + 1);
    if (close == std::string_view::npos) break;
    parts.push_back(message.substr(open + 1, close - open - 1));
    open = message.find('"', close + 1);
  }
  return parts;
}

// protobuf's parser reports the problem; the two a user meets most (a misspelt field, a misspelt
// enum value) are rewritten to also say what would have been accepted.
std::string explain_parse_error(const std::string& message) {
  const auto parts = quoted_parts(message);
  if (message.starts_with("Message type ") && message.find("has no field named") != std::string::npos &&
      parts.size() == 2) {
    if (const auto* type = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(std::string(parts[0]))) {
      return unknown_field(*type, parts[1]);
    }
  }
  if (message.starts_with("Unknown enumeration value of") && parts.size() == 2) {
    // The message names the field but not its message; every enum field of that name in the
    // schema shares one enum type (checked here rather than assumed).
    const pb::EnumDescriptor* type = nullptr;
    const auto* file = config::Experiment::descriptor()->file();
    for (int m = 0; m < file->message_type_count(); ++m) {
      const auto* field = file->message_type(m)->FindFieldByName(std::string(parts[1]));
      if (field == nullptr || field->enum_type() == nullptr) continue;
      if (type != nullptr && type != field->enum_type()) return message;
      type = field->enum_type();
    }
    if (type != nullptr) {
      const auto names = value_names(*type);
      return fmt::format("{}: \"{}\" is not a value of {}; {}expected one of: {}", parts[1], parts[0], type->name(),
                         did_you_mean(parts[0], names), fmt::join(names, ", "));
    }
  }
  return message;
}

// Keeps the first error protobuf's tokenizer or parser reports (later ones tend to follow from it).
class FirstError final : public pb::io::ErrorCollector {
 public:
  struct Error {
    int line = 0;    // from 1
    int column = 0;  // from 1
    std::string message;
  };

  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!error_) error_ = Error{line + 1, column + 1, message};
  }

  [[nodiscard]] const std::optional<Error>& error() const { return error_; }

 private:
  std::optional<Error> error_;
};

// The parser reports an unknown name at the token after it; point at the name itself.
int column_of_name(std::string_view text, const FirstError::Error& error, std::string_view name) {
  std::size_t line_start = 0;
  for (int line = 1; line < error.line && line_start != std::string_view::npos; ++line) {
    line_start = text.find('\n', line_start);
    if (line_start != std::string_view::npos) ++line_start;
  }
  if (line_start == std::string_view::npos || name.empty()) return error.column;
  std::size_t end = line_start + static_cast<std::size_t>(error.column - 1);
  if (end > text.size()) return error.column;
  while (end > line_start && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
  if (end - line_start < name.size() || text.substr(end - name.size(), name.size()) != name) return error.column;
  return static_cast<int>(end - name.size() - line_start) + 1;
}

struct ParseFailure {
  int line = 0;    // from 1
  int column = 0;  // from 1
  std::string message;
};

// Parses text-format `text` into `message`; on failure says where and what, in the user's terms.
std::optional<ParseFailure> parse_text(std::string_view text, pb::Message& message, TextFormat::ParseInfoTree* tree) {
  FirstError errors;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (tree != nullptr) parser.WriteLocationsTo(tree);
  if (parser.ParseFromString(std::string(text), &message)) return std::nullopt;
  if (!errors.error()) return ParseFailure{1, 1, fmt::format("not a text-format {}", message.GetTypeName())};
  const auto& error = *errors.error();
  int column = error.column;
  // Both are reported at the token after the misspelt name or value.
  if (const auto parts = quoted_parts(error.message); parts.size() == 2) {
    if (error.message.find("has no field named") != std::string::npos) {
      column = column_of_name(text, error, parts[1]);
    } else if (error.message.starts_with("Unknown enumeration value")) {
      column = column_of_name(text, error, parts[0]);
    }
  }
  return ParseFailure{error.line, column, explain_parse_error(error.message)};
}

std::string child_path(const std::string& parent, const std::string& field) {
  return parent.empty() ? field : parent + "." + field;
}

std::string element_path(const std::string& field_path, int index) {
  return fmt::format("{}[{}]", field_path, index);
}

void record_locations(const pb::Message& message, const TextFormat::ParseInfoTree& tree, const std::string& path,
                      FieldLocations& out);

// A repeated field's positions: one per time its name was written, which is per value for
// `f: 1 f: 2` and once for `f: [1, 2]`. Per-value lines are kept only where the two counts agree.
void record_repeated(const pb::Message& message, const FieldDescriptor& field, const TextFormat::ParseInfoTree& tree,
                     const std::string& field_path, FieldLocations& out) {
  std::vector<int> lines;
  for (auto at = tree.GetLocation(&field, 0); at.line >= 0;
       at = tree.GetLocation(&field, static_cast<int>(lines.size()))) {
    lines.push_back(at.line + 1);
  }
  if (lines.empty()) return;
  out.add_line(field_path, lines.front());
  const bool is_message = field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
  const int size = message.GetReflection()->FieldSize(message, &field);
  const bool per_value = static_cast<int>(lines.size()) == size;
  if (!is_message && !per_value) return;
  for (int i = 0; i < size; ++i) {
    const std::string at = element_path(field_path, i);
    out.add_line(at, per_value ? lines[i] : lines.front());
    if (const auto* nested = is_message ? tree.GetTreeForNested(&field, i) : nullptr) {
      record_locations(message.GetReflection()->GetRepeatedMessage(message, &field, i), *nested, at, out);
    }
  }
}

// Copies the parser's positions into `out`, keyed by the field paths that error messages use.
void record_locations(const pb::Message& message, const TextFormat::ParseInfoTree& tree, const std::string& path,
                      FieldLocations& out) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const auto* field : fields) {
    const std::string field_path = child_path(path, field->name());
    if (field->is_repeated()) {
      record_repeated(message, *field, tree, field_path, out);
      continue;
    }
    if (const auto at = tree.GetLocation(field, -1); at.line >= 0) out.add_line(field_path, at.line + 1);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (const auto* nested = tree.GetTreeForNested(field, -1)) {
      record_locations(reflection->GetMessage(message, field), *nested, field_path, out);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Overrides.

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

bool wrapped(std::string_view text, char open, char close) {
  return text.size() >= 2 && text.front() == open && text.back() == close;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
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

// ---------------------------------------------------------------------------------------------

void FieldLocations::add_line(const std::string& path, int line) {
  lines_.insert_or_assign(path, line);
}

void FieldLocations::add_override(std::string path, std::string assignment) {
  overrides_.emplace_back(std::move(path), std::move(assignment));
}

namespace {

// `site[0].link` -> `site[0]` -> `site` -> "".
std::string_view enclosing(std::string_view path) {
  if (path.ends_with(']')) return path.substr(0, path.rfind('['));
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : path.substr(0, dot);
}

// True when `path` is `outer` or lies inside it.
bool within(std::string_view path, std::string_view outer) {
  if (!path.starts_with(outer)) return false;
  return path.size() == outer.size() || path[outer.size()] == '.' || path[outer.size()] == '[';
}

}  // namespace

std::string FieldLocations::prefix(const std::string& source_name, const std::string& path) const {
  std::string source = source_name.empty() ? std::string{} : source_name + ": ";
  // The latest override whose path satisfies `pred`, as the start of a message, or nothing.
  const auto from_override = [&](const auto& pred) -> std::optional<std::string> {
    const auto found =
        std::find_if(overrides_.rbegin(), overrides_.rend(), [&](const auto& o) { return pred(o.first); });
    if (found == overrides_.rend()) return std::nullopt;
    return fmt::format("{}--set {}: ", source, shortened(found->second, 100));
  };
  // An override is applied after parsing, so it replaced whatever the file said at or above path.
  if (auto set = from_override([&](std::string_view assigned) { return within(path, assigned); })) return *set;
  for (std::string_view at = path; !at.empty(); at = enclosing(at)) {
    if (const auto found = lines_.find(at); found != lines_.end()) {
      return fmt::format("{}:{}: ", source_name, found->second);
    }
    // Not written in the file, but an override created it by assigning something inside it.
    if (auto set = from_override([&](std::string_view assigned) { return within(assigned, at); })) return *set;
  }
  return source;
}

std::optional<int> FieldLocations::line(const std::string& path) const {
  const auto found = lines_.find(path);
  return found == lines_.end() ? std::nullopt : std::optional<int>(found->second);
}

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

namespace {

// A square matrix as text (MatrixFiles): one row per line, values separated by commas, CRLF allowed,
// blank lines ignored. Row-major values and the size; ConfigError naming file:line otherwise.
std::pair<std::vector<double>, std::uint32_t> read_matrix_text(const std::filesystem::path& file) {
  TextLines lines(read_text_file(file));
  std::vector<double> values;
  std::size_t columns = 0;
  std::size_t rows = 0;
  for (std::string_view line; lines.next(line);) {
    const std::size_t line_number = lines.number();
    if (trim(line).empty()) continue;
    std::size_t count = 0;
    for (const std::string_view cell : split_list(line)) {
      const std::string_view value = trim(cell);
      double v = 0;
      const auto [ptr, error] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || error != std::errc() || ptr != value.data() + value.size() || !std::isfinite(v)) {
        throw ConfigError(fmt::format("{}:{}: value {} is \"{}\", expected a finite number", file.string(), line_number,
                                      count + 1, value));
      }
      values.push_back(v);
      ++count;
    }
    if (rows == 0) columns = count;
    if (count != columns) {
      throw ConfigError(fmt::format("{}:{}: has {} values, expected {} like the first row", file.string(), line_number,
                                    count, columns));
    }
    ++rows;
  }
  if (rows == 0 || rows != columns) {
    throw ConfigError(
        fmt::format("{}: has {} rows of {} values, expected a square matrix", file.string(), rows, columns));
  }
  return {std::move(values), static_cast<std::uint32_t>(rows)};
}

// Fills a SparseMatrix of the config from entries numbered from 1.
void set_sparse(config::SparseMatrix& target, const SparseEntries& matrix) {
  target.Clear();
  for (const MatrixEntry& e : matrix.entries) {
    target.add_row(e.row);
    target.add_column(e.column);
    target.add_value(e.value);
  }
}

// The nonzero entries of a dense row-major matrix.
SparseEntries entries_of(const std::vector<double>& values, std::uint32_t size) {
  SparseEntries out;
  out.size = size;
  for (std::uint32_t r = 0; r < size; ++r) {
    for (std::uint32_t c = 0; c < size; ++c) {
      const double v = values[static_cast<std::size_t>(r) * size + c];
      if (v != 0.0) out.entries.push_back({r + 1, c + 1, v});
    }
  }
  return out;
}

// One cell of a DOF map as a number, or a ConfigError naming the file, line and column.
template <typename T>
T dof_map_number(std::string_view cell, const std::string& where, std::string_view column) {
  T value{};
  const auto [ptr, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (cell.empty() || error != std::errc() || ptr != cell.data() + cell.size() ||
      (std::is_floating_point_v<T> && !std::isfinite(static_cast<double>(value)))) {
    throw ConfigError(fmt::format("{}: {} \"{}\" is not {}", where, column, cell,
                                  std::is_floating_point_v<T> ? "a finite number" : "a whole number"));
  }
  return value;
}

// Reads a DOF map (MatrixFiles.dof_map_path) into the structure and the sites it names.
void apply_dof_map(config::Experiment& experiment, const std::filesystem::path& file, std::uint32_t dofs) {
  const std::string name = file.string();
  enum Column { kDof, kName, kGround, kRecord, kInterface, kKind };
  const std::vector<std::pair<std::string_view, Column>> known{
      {"dof", kDof},       {"name", kName},           {"ground_influence", kGround},
      {"record", kRecord}, {"interface", kInterface}, {"kind", kKind}};
  std::vector<Column> columns;
  std::vector<std::string> names(dofs);
  std::vector<config::DofKind> kinds(dofs, config::DOF_KIND_FROM_NAME);
  std::vector<double> ground(dofs, 0.0);
  std::vector<bool> listed(dofs, false);
  std::vector<std::uint32_t> recorded;
  // Per site: (dof, channel, factor, the map's line), all numbered from 1.
  std::map<std::string, std::vector<std::tuple<std::uint32_t, std::uint32_t, double, std::size_t>>, std::less<>>
      interfaces;
  TextLines lines(read_text_file(file));
  for (std::string_view line; lines.next(line);) {
    if (trim(line).empty() || trim(line).front() == '#') continue;
    const std::string where = fmt::format("{}:{}", name, lines.number());
    const std::vector<std::string_view> cells = split_list(line);
    if (columns.empty()) {
      for (const std::string_view cell : cells) {
        const auto found = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == cell; });
        if (found == known.end()) {
          throw ConfigError(
              fmt::format("{}: unknown column \"{}\"; expected a header of dof, name, ground_influence, "
                          "record, interface, kind",
                          where, cell));
        }
        if (std::find(columns.begin(), columns.end(), found->second) != columns.end()) {
          throw ConfigError(fmt::format("{}: column \"{}\" twice", where, cell));
        }
        columns.push_back(found->second);
      }
      if (std::find(columns.begin(), columns.end(), kDof) == columns.end()) {
        throw ConfigError(
            fmt::format("{}: the header has no \"dof\" column; expected dof and any of name, "
                        "ground_influence, record, interface, kind",
                        where));
      }
      continue;
    }
    if (cells.size() != columns.size()) {
      throw ConfigError(
          fmt::format("{}: has {} values, expected {} like the header", where, cells.size(), columns.size()));
    }
    std::uint32_t dof = 0;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (columns[c] == kDof) dof = dof_map_number<std::uint32_t>(cells[c], where, "dof");
    }
    if (dof < 1 || dof > dofs) {
      throw ConfigError(fmt::format("{}: dof {} is outside the structure's 1..{}", where, dof, dofs));
    }
    if (listed[dof - 1]) throw ConfigError(fmt::format("{}: dof {} is listed twice", where, dof));
    listed[dof - 1] = true;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string_view cell = cells[c];
      switch (columns[c]) {
        case kDof:
          break;
        case kName:
          names[dof - 1] = std::string(cell);
          break;
        case kGround:
          ground[dof - 1] = cell.empty() ? 0.0 : dof_map_number<double>(cell, where, "ground_influence");
          break;
        case kRecord:
          if (cell == "yes" || cell == "1") {
            recorded.push_back(dof);
          } else if (!(cell.empty() || cell == "no" || cell == "0")) {
            throw ConfigError(fmt::format("{}: record \"{}\"; expected yes or no", where, cell));
          }
          break;
        case kKind:
          if (cell == "translation") {
            kinds[dof - 1] = config::TRANSLATION;
          } else if (cell == "rotation") {
            kinds[dof - 1] = config::ROTATION;
          } else if (!cell.empty()) {
            throw ConfigError(
                fmt::format("{}: kind \"{}\"; expected translation or rotation (or nothing: the "
                            "name decides, docs/models.md)",
                            where, cell));
          }
          break;
        case kInterface: {
          std::size_t at = 0;
          while (at < cell.size()) {
            const std::size_t next = std::min(cell.find_first_of(" ;", at), cell.size());
            const std::string_view item = cell.substr(at, next - at);
            at = next + 1;
            if (item.empty()) continue;
            const std::size_t first = item.find(':');
            const std::size_t second = first == std::string_view::npos ? first : item.find(':', first + 1);
            if (second == std::string_view::npos) {
              throw ConfigError(
                  fmt::format("{}: interface \"{}\"; expected SITE:CHANNEL:FACTOR, e.g. spring:1:-1", where, item));
            }
            interfaces[std::string(item.substr(0, first))].emplace_back(
                dof, dof_map_number<std::uint32_t>(item.substr(first + 1, second - first - 1), where, "channel"),
                dof_map_number<double>(item.substr(second + 1), where, "factor"), lines.number());
          }
          break;
        }
      }
    }
  }
  if (columns.empty()) throw ConfigError(fmt::format("{}: is empty; expected a header line and a line per DOF", name));

  auto& structure = *experiment.mutable_structure();
  const auto has = [&columns](Column c) { return std::find(columns.begin(), columns.end(), c) != columns.end(); };
  const auto refuse_both = [&](std::string_view field) {
    throw ConfigError(fmt::format("{}: gives {}, and so does the config; expected it in one place", name, field));
  };
  if (has(kName)) {
    if (structure.dof_name_size() > 0) refuse_both("structure.dof_name");
    for (std::uint32_t d = 0; d < dofs; ++d) {
      structure.add_dof_name(names[d].empty() ? fmt::format("x{}", d + 1) : names[d]);
    }
  }
  if (has(kKind)) {
    if (structure.dof_kind_size() > 0) refuse_both("structure.dof_kind");
    for (const config::DofKind kind : kinds) structure.add_dof_kind(kind);
  }
  if (has(kGround)) {
    if (structure.ground_influence_size() > 0) refuse_both("structure.ground_influence");
    structure.mutable_ground_influence()->Assign(ground.begin(), ground.end());
  }
  if (has(kRecord)) {
    if (structure.record_dof_size() > 0) refuse_both("structure.record_dof");
    if (recorded.empty()) {
      throw ConfigError(
          fmt::format("{}: the record column says yes for no DOF; expected at least one DOF recorded "
                      "(without the column every DOF is)",
                      name));
    }
    structure.mutable_record_dof()->Assign(recorded.begin(), recorded.end());
  }
  for (const auto& [site_name, entries] : interfaces) {
    const std::string& wanted = site_name;  // (a lambda may not capture a structured binding before C++20's DR)
    const auto site = std::find_if(experiment.mutable_site()->begin(), experiment.mutable_site()->end(),
                                   [&wanted](const config::Site& s) { return s.name() == wanted; });
    if (site == experiment.mutable_site()->end()) {
      throw ConfigError(fmt::format("{}:{}: interface names site \"{}\", which the config does not have", name,
                                    std::get<3>(entries.front()), site_name));
    }
    if (site->influence_size() > 0) refuse_both(fmt::format("site \"{}\"'s influence", site_name));
    const auto channels = static_cast<std::uint32_t>(site->channel_size());
    std::vector<double> influence(static_cast<std::size_t>(dofs) * channels, 0.0);
    for (const auto& [dof, channel, factor, line] : entries) {
      if (channel < 1 || channel > channels) {
        throw ConfigError(fmt::format("{}:{}: interface of dof {} names channel {} of site \"{}\", which has {}", name,
                                      line, dof, channel, site_name, channels));
      }
      influence[static_cast<std::size_t>(dof - 1) * channels + (channel - 1)] += factor;
    }
    site->mutable_influence()->Assign(influence.begin(), influence.end());
  }
}

// Reads structure.matrix_files into mass_kg, stiffness_n_per_m and damping_ns_per_m (text files), or
// into structure.sparse when any is a Matrix Market file, sets dofs, then drops the paths: the
// experiment is then whole in itself, as the run folder's config.textproto must be.
void inline_matrix_files(config::Experiment& experiment, const std::filesystem::path& base_dir,
                         const std::string& source_name) {
  if (!experiment.structure().has_matrix_files()) return;
  auto& structure = *experiment.mutable_structure();
  const config::MatrixFiles files = structure.matrix_files();
  const auto at = [&](std::string_view field) {
    return fmt::format("{}: structure.matrix_files.{}", source_name, field);
  };
  if (structure.mass_kg_size() != 0 || structure.stiffness_n_per_m_size() != 0 || structure.has_sparse()) {
    throw ConfigError(
        fmt::format("{}: structure.matrix_files: given with mass_kg, stiffness_n_per_m or sparse; expected "
                    "the matrices from files or inline, not both",
                    source_name));
  }
  if (files.has_damping_path() && structure.damping_case() != config::Structure::DAMPING_NOT_SET) {
    throw ConfigError(fmt::format("{}: given with structure.{}; expected one damping", at("damping_path"),
                                  structure.has_rayleigh() ? "rayleigh" : "damping_ns_per_m"));
  }
  const auto is_market = [](const std::string& path) { return std::filesystem::path(path).extension() == ".mtx"; };
  const bool sparse = is_market(files.mass_path()) || is_market(files.stiffness_path()) ||
                      (files.has_damping_path() && is_market(files.damping_path()));
  std::uint32_t dofs = 0;
  // The DOFs that have a diagonal entry in the mass or the stiffness: every DOF needs one (a DOF with
  // neither has no equation), which bounds a size line by what the files hold.
  std::vector<std::uint32_t> held;
  for (const auto& [field, path, what] : {std::tuple{"mass_path", files.mass_path(), "mass"},
                                          std::tuple{"stiffness_path", files.stiffness_path(), "stiffness"},
                                          std::tuple{"damping_path", files.damping_path(), "damping"}}) {
    if (path.empty()) {
      if (std::string_view(field) == "damping_path") continue;  // damping from rayleigh, or none
      throw ConfigError(fmt::format("{}: missing; expected the file of the structure's {} matrix", at(field), what));
    }
    std::filesystem::path file = path;
    if (file.is_relative()) file = base_dir / file;
    SparseEntries entries;
    std::vector<double> dense;
    try {
      if (is_market(path)) {
        entries = read_matrix_market(file);
      } else {
        auto [values, size] = read_matrix_text(file);
        dense = std::move(values);
        entries.size = size;
      }
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", at(field), error.what()));
    }
    if (dofs != 0 && entries.size != dofs) {
      throw ConfigError(fmt::format("{}: {} is {} x {}, the mass matrix {} x {}; expected the same size", at(field),
                                    file.string(), entries.size, entries.size, dofs, dofs));
    }
    dofs = entries.size;
    const std::string_view name(field);
    if (sparse) {
      if (!is_market(path)) entries = entries_of(dense, dofs);
      if (name != "damping_path") {
        for (const MatrixEntry& e : entries.entries) {
          if (e.row == e.column) held.push_back(e.row);
        }
      }
      auto& target = *structure.mutable_sparse();
      set_sparse(name == "mass_path"        ? *target.mutable_mass_kg()
                 : name == "stiffness_path" ? *target.mutable_stiffness_n_per_m()
                                            : *target.mutable_damping_ns_per_m(),
                 entries);
    } else {
      auto* target = name == "mass_path"        ? structure.mutable_mass_kg()
                     : name == "stiffness_path" ? structure.mutable_stiffness_n_per_m()
                                                : structure.mutable_damping_ns_per_m()->mutable_value();
      target->Assign(dense.begin(), dense.end());
    }
  }
  if (sparse) {
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    if (held.size() < dofs) {
      // The first DOF missing: held is sorted, so where held[i] != i + 1 (or past its end).
      std::uint32_t missing = 1;
      while (missing <= held.size() && held[missing - 1] == missing) ++missing;
      throw ConfigError(fmt::format(
          "{}: the matrices are {} x {}, but {} of those DOFs have a diagonal entry in the stiffness or the mass "
          "(DOF {} has neither); expected every DOF with stiffness or mass (a DOF with neither has no equation), "
          "and a size line that counts the structure's DOFs",
          at("stiffness_path"), dofs, dofs, held.size(), missing));
    }
  }
  if (structure.has_dofs() && structure.dofs() != dofs) {
    throw ConfigError(fmt::format("{}: structure.dofs: is {}, the matrix files are {} x {}", source_name,
                                  structure.dofs(), dofs, dofs));
  }
  structure.set_dofs(dofs);
  if (files.has_dof_map_path()) {
    std::filesystem::path file = files.dof_map_path();
    if (file.is_relative()) file = base_dir / file;
    try {
      apply_dof_map(experiment, file, dofs);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", at("dof_map_path"), error.what()));
    }
  }
  experiment.mutable_structure()->clear_matrix_files();
}

}  // namespace

config::Experiment parse_experiment(const std::string& text, const std::string& source_name,
                                    const std::vector<std::string>& overrides, const std::filesystem::path& base_dir) {
  config::Experiment experiment;
  TextFormat::ParseInfoTree tree;
  parse_text_message(text, source_name, experiment, &tree);
  FieldLocations where;
  record_locations(experiment, tree, "", where);
  for (const auto& assignment : overrides)
    where.add_override(apply_override_resolved(experiment, assignment), assignment);
  inline_matrix_files(experiment, base_dir, source_name);
  validate(experiment, source_name, &where);
  return experiment;
}

namespace {

// Copies the RLS initial values of every channel that names a calibration file (written by
// `rths-numerical calibrate`) into the channel's controller, so everything downstream sees them
// inline, at both ends of a link.
void resolve_calibrations(config::Experiment& experiment, const std::filesystem::path& base_dir,
                          const std::string& source_name) {
  for (auto& site : *experiment.mutable_site()) {
    for (int c = 0; c < site.channel_size(); ++c) {
      auto& channel = *site.mutable_channel(c);
      if (!channel.controller().has_rls() || !channel.controller().rls().has_calibration_path()) continue;
      auto& rls = *channel.mutable_controller()->mutable_rls();
      const std::string at =
          fmt::format("{}: site[{}].channel[{}].controller.rls.calibration_path", source_name, site.name(), c);
      std::filesystem::path file = rls.calibration_path();
      if (file.is_relative()) file = base_dir / file;
      std::string text;
      try {
        text = read_text_file(file);
      } catch (const ConfigError& error) {
        throw ConfigError(
            fmt::format("{}: {}; expected a file written by `rths-numerical calibrate`", at, error.what()));
      }
      config::RlsCalibration calibration;
      parse_text_message(text, file.string(), calibration);
      const auto entry = std::find_if(calibration.entry().begin(), calibration.entry().end(), [&](const auto& e) {
        return e.site() == site.name() && e.channel() == static_cast<std::uint32_t>(c);
      });
      if (entry == calibration.entry().end()) {
        throw ConfigError(
            fmt::format("{}: {} has no entry for site \"{}\" channel {}; expected one written by "
                        "`rths-numerical calibrate` for this experiment",
                        at, file.string(), site.name(), c));
      }
      const auto taps = static_cast<int>(rls.taps());
      if (entry->ff_size() != taps || entry->covariance_size() != taps * taps) {
        throw ConfigError(
            fmt::format("{}: {} holds {} taps ({} covariance entries) for site \"{}\" channel {}, "
                        "the controller has taps = {}",
                        at, file.string(), entry->ff_size(), entry->covariance_size(), site.name(), c, taps));
      }
      for (const double v : entry->ff()) {
        if (!std::isfinite(v)) throw ConfigError(fmt::format("{}: {} holds a non-finite FF value", at, file.string()));
      }
      *rls.mutable_initial_ff() = entry->ff();
      *rls.mutable_initial_covariance() = entry->covariance();
      rls.clear_calibration_path();
    }
  }
}

}  // namespace

std::vector<std::string> dof_names(const config::Structure& s) {
  std::vector<std::string> names;
  names.reserve(s.dofs());
  for (std::uint32_t i = 0; i < s.dofs(); ++i) {
    // fmt rather than "x" + std::to_string: GCC 12 raises a false -Wrestrict on the latter.
    names.push_back(static_cast<int>(i) < s.dof_name_size() ? s.dof_name(static_cast<int>(i))
                                                            : fmt::format("x{}", i + 1));
  }
  return names;
}

std::vector<std::uint32_t> recorded_dofs(const config::Structure& s) {
  std::vector<std::uint32_t> dofs;
  if (s.record_dof_size() == 0) {
    dofs.resize(s.dofs());
    for (std::uint32_t i = 0; i < s.dofs(); ++i) dofs[i] = i;
    return dofs;
  }
  for (const std::uint32_t d : s.record_dof()) dofs.push_back(d - 1);
  return dofs;
}

std::vector<std::string> recorded_dof_names(const config::Structure& s) {
  const std::vector<std::string> all = dof_names(s);
  std::vector<std::string> names;
  for (const std::uint32_t d : recorded_dofs(s)) names.push_back(all.at(d));  // validated within 1..dofs
  return names;
}

std::vector<DofKind> dof_kinds(const config::Structure& s) {
  const std::vector<std::string> names = dof_names(s);
  std::vector<DofKind> kinds;
  kinds.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto given =
        static_cast<int>(i) < s.dof_kind_size() ? s.dof_kind(static_cast<int>(i)) : config::DOF_KIND_FROM_NAME;
    kinds.push_back(given == config::ROTATION      ? DofKind::kRotation
                    : given == config::TRANSLATION ? DofKind::kTranslation
                                                   : kind_from_name(names[i]));
  }
  return kinds;
}

std::vector<DofKind> recorded_dof_kinds(const config::Structure& s) {
  const std::vector<DofKind> all = dof_kinds(s);
  std::vector<DofKind> kinds;
  for (const std::uint32_t d : recorded_dofs(s)) kinds.push_back(all.at(d));
  return kinds;
}

std::vector<DofKind> channel_kinds(const config::Structure& s, const config::Site& site) {
  const std::vector<DofKind> dofs = dof_kinds(s);
  const auto channels = static_cast<std::size_t>(site.channel_size());
  std::vector<DofKind> kinds(channels, DofKind::kTranslation);
  if (static_cast<std::size_t>(site.influence_size()) != dofs.size() * channels) return kinds;
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t d = 0; d < dofs.size(); ++d) {
      if (site.influence(static_cast<int>(d * channels + c)) != 0.0 && dofs[d] == DofKind::kRotation) {
        kinds[c] = DofKind::kRotation;
      }
    }
  }
  return kinds;
}

std::string read_text_file(const std::filesystem::path& file) {
  const auto cannot = [&](const char* what, int error) {
    return ConfigError(fmt::format("cannot {} {}: {}", what, file.string(), std::generic_category().message(error)));
  };
  const std::uintmax_t bytes = check_input_file(file);
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw cannot("open", errno != 0 ? errno : ENOENT);
  // Read up to the bound, not to the end: a file that grew since it was checked is refused, not read on.
  std::string text;
  text.reserve(static_cast<std::size_t>(bytes));
  std::array<char, 1U << 16U> chunk{};
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) {
      throw ConfigError(fmt::format("{}: holds more than {} bytes; expected a text file of at most that", file.string(),
                                    kMaxInputFileBytes));
    }
  }
  if (in.bad()) throw cannot("read", errno != 0 ? errno : EIO);
  std::size_t number = 1;
  for (std::size_t at = 0; at < text.size(); ++number) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    if (end - at > kMaxInputLineBytes) {
      throw ConfigError(
          fmt::format("{}:{}: a line of {} bytes; expected lines of at most {} bytes (is it a text file?)",
                      file.string(), number, end - at, kMaxInputLineBytes));
    }
    at = end + 1;
  }
  return text;
}

void parse_text_message(const std::string& text, const std::string& source_name, pb::Message& message,
                        TextFormat::ParseInfoTree* tree) {
  if (const auto failure = parse_text(text, message, tree)) {
    throw ConfigError(fmt::format("{}:{}:{}: {}", source_name, failure->line, failure->column, failure->message));
  }
}

LoadedConfig load_experiment(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                             bool resolve_calibration_files) {
  const std::string text = read_text_file(file);
  LoadedConfig loaded;
  loaded.source = file;
  // Absolute, so that relative paths still resolve after a process changes its working folder.
  loaded.base_dir = std::filesystem::absolute(file).parent_path();
  loaded.experiment = parse_experiment(text, file.string(), overrides, loaded.base_dir);
  if (resolve_calibration_files) resolve_calibrations(loaded.experiment, loaded.base_dir, file.string());
  return loaded;
}

std::string to_text(const config::Experiment& experiment) {
  std::string text;
  if (!TextFormat::Printer().PrintToString(experiment, &text)) {
    throw ConfigError("to_text: the experiment could not be printed as text format");
  }
  return text;
}

}  // namespace rths
