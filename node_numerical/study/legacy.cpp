#include "node_numerical/study/legacy.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/core/text.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/study_file.hpp"

namespace rths::study {

namespace {

constexpr std::array<std::string_view, 6> kKeywords{"config", "axis", "set", "name", "plot", "label"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (const char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

// A tuple value's elements: split at ':' outside {...}, [...] and quotes, so that a text-format
// message ({probability:0.05}) is one element.
std::vector<std::string> split_tuple(const std::string& s) {
  std::vector<std::string> out(1);
  int depth = 0;
  char quote = 0;
  for (const char c : s) {
    if (quote != 0) {
      quote = c == quote ? char{0} : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{' || c == '[' || c == '<') {
      ++depth;
    } else if (c == '}' || c == ']' || c == '>') {
      --depth;
    } else if (c == ':' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  return out;
}

std::string trim_text(const std::string& s) {
  return std::string(trim_blanks(s));
}

// '#' at the start of a line or after a blank starts a comment (not inside a "quoted" title).
std::size_t comment_start(const std::string& line) {
  bool quoted_text = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      quoted_text = !quoted_text;
    } else if (!quoted_text && line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return i;
    }
  }
  return std::string::npos;
}

Axis parse_axis(const std::string& rest, const std::string& line, const std::string& where, int n) {
  const auto eq = rest.find('=');
  const auto head = split_words(rest.substr(0, eq));
  if (eq == std::string::npos || head.size() != 2) {
    throw BadInput(fmt::format("{}expected `axis NAME PATH[,PATH...] = VALUE...`, found `{}`", where, line));
  }
  Axis ax;
  ax.name = head[0];
  ax.line = n;
  ax.paths = split(head[1], ',');
  const auto tokens = split_words(rest.substr(eq + 1));
  if (tokens.empty()) {
    throw BadInput(where + "axis " + ax.name + " has no values");
  }
  for (const auto& t : tokens) {
    auto parts = ax.paths.size() > 1 ? split_tuple(t) : std::vector<std::string>{t};
    if (parts.size() > 1) {
      ax.tuples = true;
    }
    if (parts.size() != 1 && parts.size() != ax.paths.size()) {
      throw BadInput(fmt::format("{}axis {}: value `{}` has {} elements, the axis has {} paths", where, ax.name, t,
                                 parts.size(), ax.paths.size()));
    }
    ax.shown.push_back(t);
    ax.values.push_back(std::move(parts));
  }
  // A single value in an axis of tuples sets every path: the new syntax spells it out.
  for (auto& v : ax.values) {
    if (v.size() == 1 && ax.tuples) {
      v.assign(ax.paths.size(), v[0]);
    }
  }
  return ax;
}

// label AXIS "TITLE" = V1 V2 ...
std::pair<std::string, Label> parse_label(const std::string& rest, const std::string& line, const std::string& where,
                                          int n) {
  const auto q1 = rest.find('"');
  const auto q2 = q1 == std::string::npos ? std::string::npos : rest.find('"', q1 + 1);
  const auto eq = q2 == std::string::npos ? std::string::npos : rest.find('=', q2);
  const auto head = split_words(rest.substr(0, q1));
  if (eq == std::string::npos || head.size() != 1 || !trim_text(rest.substr(q2 + 1, eq - q2 - 1)).empty()) {
    throw BadInput(fmt::format("{}expected `label AXIS \"TITLE (UNIT)\" = VALUE...`, found `{}`", where, line));
  }
  Label label;
  label.title = rest.substr(q1 + 1, q2 - q1 - 1);
  label.values = split_words(rest.substr(eq + 1));
  label.line = n;
  return {head[0], label};
}

// One line of the old file: its statement converted (empty for a comment, a blank line, or a label,
// which joins its axis), the comment after it, and the axis it declares.
struct Converted {
  std::string text;
  std::string comment;
  std::string axis;  // the name, for an axis line
};

}  // namespace

std::optional<int> legacy_statement_line(std::string_view text) {
  std::istringstream in{std::string(text)};
  int n = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    const auto cut = comment_start(raw);
    const std::string line = trim_text(cut == std::string::npos ? raw : raw.substr(0, cut));
    if (line.empty()) {
      continue;
    }
    const auto sp = line.find_first_of(" \t");
    const std::string keyword = line.substr(0, sp);
    const bool is_keyword = std::find(kKeywords.begin(), kKeywords.end(), keyword) != kKeywords.end();
    const std::string rest = sp == std::string::npos ? std::string{} : trim_text(line.substr(sp));
    // `axis {` and `config: "..."` are the text format's; `axis delay ...` and `config ../x` are not.
    if (is_keyword && !rest.empty() && rest[0] != ':' && rest[0] != '{') {
      return n;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string convert_legacy_study(const std::string& text, const std::filesystem::path& file) {
  const std::string src = file.filename().string();
  std::istringstream in(text);
  std::vector<std::string> raws;
  for (std::string raw; std::getline(in, raw);) {
    raws.push_back(raw);
  }
  // First every statement (a label may come before or after its axis), then the text in file order.
  std::vector<Converted> out(raws.size());
  std::map<std::string, Label> labels;
  std::map<std::string, Axis> axes;
  std::set<std::string> seen_config;
  for (std::size_t i = 0; i < raws.size(); ++i) {
    const int n = static_cast<int>(i) + 1;
    const auto cut = comment_start(raws[i]);
    const std::string line = trim_text(cut == std::string::npos ? raws[i] : raws[i].substr(0, cut));
    Converted& c = out[i];
    if (cut != std::string::npos && !line.empty()) {
      c.comment = trim_text(raws[i].substr(cut));
    }
    if (line.empty()) {
      c.text = raws[i] + "\n";  // a comment or blank line as it was
      continue;
    }
    const auto where = fmt::format("{}:{}: ", src, n);
    const auto sp = line.find_first_of(" \t");
    const std::string keyword = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? std::string{} : trim_text(line.substr(sp));
    if (keyword == "config") {
      if (rest.empty() || !seen_config.insert(keyword).second) {
        throw BadInput(where + (rest.empty() ? "config needs a FILE" : "a second config line"));
      }
      c.text = "config: " + quoted(rest) + "\n";
    } else if (keyword == "set") {
      if (rest.find('=') == std::string::npos || rest.find_first_of(" \t") != std::string::npos) {
        throw BadInput(fmt::format("{}expected `set PATH=VALUE` (no spaces), found `{}`", where, line));
      }
      c.text = "set: " + quoted(rest) + "\n";
    } else if (keyword == "name") {
      if (split_words(rest).size() != 1) {
        throw BadInput(fmt::format("{}expected `name NAME` (one word), found `{}`", where, line));
      }
      c.text = "name: " + quoted(rest) + "\n";
    } else if (keyword == "axis") {
      Axis ax = parse_axis(rest, line, where, n);
      c.axis = ax.name;
      if (!axes.emplace(ax.name, std::move(ax)).second) {
        throw BadInput(where + "axis " + c.axis + " is named twice");
      }
    } else if (keyword == "label") {
      auto [axis, label] = parse_label(rest, line, where, n);
      if (!labels.emplace(axis, std::move(label)).second) {
        throw BadInput(fmt::format("{}axis {} is labelled twice", where, axis));
      }
    } else if (keyword == "plot") {
      const auto w = split_words(rest);
      if (w.size() != 2 && w.size() != 3) {
        throw BadInput(fmt::format("{}expected `plot X_AXIS LINE_AXIS [RESPONSE]`, found `{}`", where, line));
      }
      c.text = fmt::format("plot {{ x: {} lines: {}{} }}\n", quoted(w[0]), quoted(w[1]),
                           w.size() == 3 ? " response: " + quoted(w[2]) : std::string{});
    } else {
      throw BadInput(
          fmt::format("{}unknown statement `{}`; expected config, axis, set, name, plot or label", where, keyword));
    }
  }
  for (const auto& [axis, label] : labels) {
    if (!axes.contains(axis)) {
      throw BadInput(fmt::format("{}:{}: label: no axis {}", src, label.line, axis));
    }
  }
  std::string result = fmt::format(
      "# Converted by `rths-study convert {}` from the old line syntax\n"
      "# to the protobuf text format of proto/study.proto.\n",
      src);
  for (const Converted& c : out) {
    if (!c.comment.empty()) {
      result += c.comment + "\n";
    }
    if (!c.axis.empty()) {
      const auto label = labels.find(c.axis);
      result += axis_text(axes.at(c.axis), label == labels.end() ? nullptr : &label->second);
    } else {
      result += c.text;  // nothing for a label: it is in its axis
    }
  }
  return result;
}

}  // namespace rths::study
