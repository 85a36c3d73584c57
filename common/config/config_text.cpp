// Text-format parsing of the config loader: protobuf's parser, its first error said in the user's
// terms (file:line:column, a misspelt name answered with the valid ones), the position of every field
// kept for the validator's messages (FieldLocations), and the canonical text form.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/config.hpp"
#include "config_loading.hpp"

namespace rths::loading {
namespace {

namespace pb = google::protobuf;
using pb::FieldDescriptor;
using pb::TextFormat;

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

// The files of the config's schema: experiment.proto and every file it imports, directly or not.
std::vector<const pb::FileDescriptor*> schema_files() {
  std::vector<const pb::FileDescriptor*> files{config::Experiment::descriptor()->file()};
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (int d = 0; d < files[f]->dependency_count(); ++d) {
      const auto* imported = files[f]->dependency(d);
      if (std::find(files.begin(), files.end(), imported) == files.end()) files.push_back(imported);
    }
  }
  return files;
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
    for (const auto* file : schema_files()) {
      for (int m = 0; m < file->message_type_count(); ++m) {
        const auto* field = file->message_type(m)->FindFieldByName(std::string(parts[1]));
        if (field == nullptr || field->enum_type() == nullptr) continue;
        if (type != nullptr && type != field->enum_type()) return message;
        type = field->enum_type();
      }
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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace rths::loading

namespace rths {
namespace {

namespace pb = google::protobuf;
using loading::parse_text;
using pb::TextFormat;

}  // namespace

void parse_text_message(const std::string& text, const std::string& source_name, pb::Message& message,
                        TextFormat::ParseInfoTree* tree) {
  if (const auto failure = parse_text(text, message, tree)) {
    throw ConfigError(fmt::format("{}:{}:{}: {}", source_name, failure->line, failure->column, failure->message));
  }
}

std::string to_text(const config::Experiment& experiment) {
  std::string text;
  if (!TextFormat::Printer().PrintToString(experiment, &text)) {
    throw ConfigError("to_text: the experiment could not be printed as text format");
  }
  return text;
}

}  // namespace rths
