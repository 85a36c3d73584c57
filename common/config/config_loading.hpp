#pragma once

// What the files that load an experiment share (config.cpp, config_text.cpp, config_override.cpp,
// config_suggestions.cpp, config_matrix_files.cpp): the did-you-mean help, the parser with the
// positions of the fields, the field paths of messages, the pieces of a value, and the matrix files'
// reader. Internal to common/.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include "experiment.pb.h"

namespace rths {

class FieldLocations;

namespace loading {

// Naming help (config_suggestions.cpp): an unknown name is answered with the valid ones and the
// closest of them.

// `did you mean "mass_kg"? ` when one name is within a typo or two of `wrong`, else nothing.
std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& names);
// The names of a message's fields and of an enum's values, in the schema's order.
std::vector<std::string> field_names(const google::protobuf::Descriptor& type);
std::vector<std::string> value_names(const google::protobuf::EnumDescriptor& type);
// `unknown field "wrong" in Type; did you mean ...? expected one of: ...`.
std::string unknown_field(const google::protobuf::Descriptor& type, std::string_view wrong);

// Text-format parsing (config_text.cpp).

struct ParseFailure {
  int line = 0;    // from 1
  int column = 0;  // from 1
  std::string message;
};

// Parses text-format `text` into `message`; on failure says where and what, in the user's terms.
std::optional<ParseFailure> parse_text(std::string_view text, google::protobuf::Message& message,
                                       google::protobuf::TextFormat::ParseInfoTree* tree);

// Copies the parser's positions into `out`, keyed by the field paths that error messages use.
void record_locations(const google::protobuf::Message& message, const google::protobuf::TextFormat::ParseInfoTree& tree,
                      const std::string& path, FieldLocations& out);

// The field paths of messages: `parent.field` and `field_path[index]`.
std::string child_path(const std::string& parent, const std::string& field);
std::string element_path(const std::string& field_path, int index);

// The pieces of a value (config_override.cpp), as an override's value and a matrix file's line
// write them.

// `text` without its leading and trailing blanks (spaces, tabs, line ends).
std::string_view trim(std::string_view text);
// Splits the inside of `[a, "b, c", d]` at the commas outside quotes.
std::vector<std::string_view> split_list(std::string_view inside);

// structure.matrix_files (config_matrix_files.cpp): the matrices and the DOF map read into the
// experiment, the paths dropped.
void inline_matrix_files(config::Experiment& experiment, const std::filesystem::path& base_dir,
                         const std::string& source_name);

}  // namespace loading
}  // namespace rths
