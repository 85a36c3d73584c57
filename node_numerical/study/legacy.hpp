#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace rths::study {

// The older study-file syntax, one statement a line (`config FILE`, `axis NAME PATH[,PATH...] = V1
// V2 ...`, `set PATH=VALUE`, `name NAME`, `label AXIS "TITLE" = V1 V2 ...`, `plot X LINES [RESPONSE]`,
// '#' comments), which the protobuf text format of proto/study.proto replaced. rths-study reads it
// only to convert it.

// The line (from 1) of the first statement when text reads as that syntax (its first statement is
// one of its keywords followed by a blank, not a text-format field), else nullopt.
std::optional<int> legacy_statement_line(std::string_view text);

// The same study in the protobuf text format: every statement becomes its field, a label joins its
// axis, and the comments and blank lines stay where they were (a comment after a statement goes on
// the line before it). Throws BadInput naming the file and line of a statement the old syntax did
// not accept.
std::string convert_legacy_study(const std::string& text, const std::filesystem::path& file);

}  // namespace rths::study
