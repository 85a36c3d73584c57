#include "node_numerical/study/study_file.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include "common/config/config.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/legacy.hpp"
#include "node_numerical/study/plots.hpp"
#include "study.pb.h"

namespace rths::study {

namespace {

namespace pb = google::protobuf;

// study.csv's own columns: an axis of that name would make two columns of one name.
constexpr std::array<std::string_view, 5> kReservedColumns{"row", "rerun", "steps", "run_time_s", "error"};

// Line numbers (from 1) of what a text-format message was parsed from.
class Lines {
 public:
  explicit Lines(const pb::TextFormat::ParseInfoTree* tree) : tree_(tree) {}

  // Where element `index` of `field` starts (-1: a singular field); 0 when not known.
  [[nodiscard]] int of(const pb::Message& message, const char* field, int index = -1) const {
    const pb::FieldDescriptor* f = message.GetDescriptor()->FindFieldByName(field);
    return tree_ == nullptr || f == nullptr ? 0 : tree_->GetLocation(f, index).line + 1;
  }
  // The lines of a nested message.
  [[nodiscard]] Lines nested(const pb::Message& message, const char* field, int index = -1) const {
    const pb::FieldDescriptor* f = message.GetDescriptor()->FindFieldByName(field);
    return Lines(tree_ == nullptr || f == nullptr ? nullptr : tree_->GetTreeForNested(f, index));
  }

 private:
  const pb::TextFormat::ParseInfoTree* tree_;
};

bool has_blank(const std::string& s) {
  return s.find_first_of(" \t\r\n") != std::string::npos;
}

Axis read_axis(const config::Study::Axis& in, const StudyFile& st, int line) {
  Axis ax = value_axis(in.name(), {in.path().begin(), in.path().end()}, {in.value().begin(), in.value().end()});
  ax.line = line;
  const std::string where = st.at(line);
  if (ax.name.empty()) {
    throw BadInput(where + "axis: no name; expected name: \"WORD\" (its column in study.csv)");
  }
  if (has_blank(ax.name)) {
    throw BadInput(fmt::format("{}axis \"{}\": the name has a blank; expected one word", where, ax.name));
  }
  if (std::find(kReservedColumns.begin(), kReservedColumns.end(), ax.name) != kReservedColumns.end()) {
    throw BadInput(where + "axis " + ax.name + ": the name is a column of study.csv; choose another");
  }
  if (ax.paths.empty()) {
    throw BadInput(where + "axis " + ax.name +
                   ": no path; expected path: \"PATH\" (an override path, as --set PATH=VALUE takes it)");
  }
  if (in.value_size() > 0 && in.tuple_size() > 0) {
    throw BadInput(where + "axis " + ax.name + ": has both value and tuple; expected one of them");
  }
  if (in.value_size() == 0 && in.tuple_size() == 0) {
    throw BadInput(where + "axis " + ax.name + " has no values");
  }
  ax.tuples = in.tuple_size() > 0;
  for (const auto& t : in.tuple()) {
    const std::vector<std::string> elements(t.value().begin(), t.value().end());
    std::string shown;
    for (const auto& e : elements) {
      shown += (shown.empty() ? "" : ":") + e;
    }
    if (elements.size() != ax.paths.size()) {
      throw BadInput(fmt::format("{}axis {}: tuple `{}` has {} elements, the axis has {} paths", where, ax.name, shown,
                                 elements.size(), ax.paths.size()));
    }
    ax.shown.push_back(shown);
    ax.values.push_back(elements);
  }
  return ax;
}

Label read_label(const config::Study::Axis& in, const Axis& ax, const StudyFile& st, int line) {
  Label label;
  label.title = in.label().title();
  label.values.assign(in.label().value().begin(), in.label().value().end());
  label.line = line;
  if (!in.label().has_title()) {
    throw BadInput(fmt::format("{}label {}: no title; expected title: \"TITLE (UNIT)\"", st.at(line), ax.name));
  }
  if (label.values.size() != ax.values.size()) {
    throw BadInput(fmt::format("{}label {}: {} values, the axis has {}", st.at(line), ax.name, label.values.size(),
                               ax.values.size()));
  }
  return label;
}

}  // namespace

std::string StudyFile::at(int line) const {
  const std::string src = file.filename().string();
  return line > 0 ? fmt::format("{}:{}: ", src, line) : src + ": ";
}

StudyFile parse_study(const std::string& text, const std::filesystem::path& file, bool need_config) {
  StudyFile st;
  st.file = file;
  st.name = file.stem().string();
  config::Study in;
  pb::TextFormat::ParseInfoTree tree;
  try {
    parse_text_message(text, file.filename().string(), in, &tree);
  } catch (const ConfigError& e) {
    if (const auto line = legacy_statement_line(text)) {
      throw BadInput(
          fmt::format("{}is a study file of the old line syntax; convert it to the protobuf text format of "
                      "proto/study.proto with `rths-study convert {} > NEW.study`",
                      st.at(*line), file.string()));
    }
    throw BadInput(e.what());
  }
  const Lines lines(&tree);
  if (in.has_config()) {
    const std::filesystem::path p(in.config());
    if (p.empty()) {
      throw BadInput(st.at(lines.of(in, "config")) + "config is empty; expected the experiment config's file");
    }
    st.config = std::filesystem::weakly_canonical(p.is_absolute() ? p : file.parent_path() / p);
  } else if (need_config) {
    throw BadInput(st.at(0) +
                   "no config; expected config: \"FILE\" (the experiment config, relative to the study file)");
  }
  if (in.has_name()) {
    if (in.name().empty()) {
      throw BadInput(st.at(lines.of(in, "name")) + "name is empty; expected the study's name for plot titles");
    }
    st.name = in.name();
  }
  for (int i = 0; i < in.set_size(); ++i) {
    if (in.set(i).find('=') == std::string::npos) {
      throw BadInput(
          fmt::format(R"({}set: expected "PATH=VALUE", found "{}")", st.at(lines.of(in, "set", i)), in.set(i)));
    }
    st.grid.sets.push_back(in.set(i));
  }
  std::set<std::string> axis_paths;
  for (int i = 0; i < in.axis_size(); ++i) {
    const int line = lines.of(in, "axis", i);
    Axis ax = read_axis(in.axis(i), st, line);
    if (st.grid.axis_index(ax.name)) {
      throw BadInput(st.at(line) + "axis " + ax.name + " is named twice");
    }
    for (const auto& p : ax.paths) {
      if (p.empty() || !axis_paths.insert(p).second) {
        throw BadInput(fmt::format("{}axis {}: path `{}` is empty or on another axis too", st.at(line), ax.name, p));
      }
    }
    if (in.axis(i).has_label()) {
      const int label_line = lines.nested(in, "axis", i).of(in.axis(i), "label");
      st.labels.emplace(ax.name, read_label(in.axis(i), ax, st, label_line));
    }
    st.grid.axes.push_back(std::move(ax));
  }
  for (int i = 0; i < in.plot_size(); ++i) {
    const auto& p = in.plot(i);
    st.plots.push_back({p.x(), p.lines(), p.response(), lines.of(in, "plot", i)});
  }
  check_plots(st);
  return st;
}

StudyFile read_study(const std::filesystem::path& file, bool need_config) {
  std::string text;
  try {
    text = read_text_file(file);
  } catch (const ConfigError& e) {
    throw BadInput(std::string(e.what()) + " (the study file)");
  }
  return parse_study(text, file, need_config);
}

std::string quoted(const std::string& text) {
  std::string q = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += c;
    } else if (c == '\n') {
      q += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      q += fmt::format("\\{:03o}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      q += c;
    }
  }
  return q + "\"";
}

namespace {

// The longest line the study files rths-study writes have, where a list can be broken.
constexpr std::size_t kWidth = 100;

// `field: "v"` for one value, `field: ["a", "b"]` for more, one element a line when that is long.
std::string list(const std::string& indent, const std::string& field, const std::vector<std::string>& items) {
  if (items.size() == 1) {
    return fmt::format("{}{}: {}\n", indent, field, quoted(items[0]));
  }
  std::string one_line;
  for (const auto& item : items) {
    one_line += (one_line.empty() ? "" : ", ") + quoted(item);
  }
  if (indent.size() + field.size() + one_line.size() + 4 <= kWidth) {
    return fmt::format("{}{}: [{}]\n", indent, field, one_line);
  }
  std::string s = fmt::format("{}{}: [\n", indent, field);
  for (std::size_t i = 0; i < items.size(); ++i) {
    s += fmt::format("{}  {}{}\n", indent, quoted(items[i]), i + 1 < items.size() ? "," : "");
  }
  return s + indent + "]\n";
}

}  // namespace

std::string axis_text(const Axis& axis, const Label* label) {
  std::string s = "axis {\n  name: " + quoted(axis.name) + "\n" + list("  ", "path", axis.paths);
  if (axis.tuples) {
    for (const auto& v : axis.values) {
      std::string elements;
      for (const auto& e : v) {
        elements += (elements.empty() ? "" : ", ") + quoted(e);
      }
      s += "  tuple { value: [" + elements + "] }\n";
    }
  } else {
    s += list("  ", "value", axis.shown);
  }
  if (label != nullptr) {
    std::string values;
    for (const auto& v : label->values) {
      values += (values.empty() ? "" : ", ") + quoted(v);
    }
    const std::string one_line = "  label { title: " + quoted(label->title) + " value: [" + values + "] }\n";
    s += one_line.size() <= kWidth + 1
             ? one_line
             : "  label {\n    title: " + quoted(label->title) + "\n" + list("    ", "value", label->values) + "  }\n";
  }
  return s + "}\n";
}

std::string plot_spec(const StudyFile& study) {
  std::string s = fmt::format("# rths-study: the grid and plots of {} (read by rths-study merge)\nname: {}\n",
                              study.file.string(), quoted(study.name));
  for (const auto& a : study.grid.axes) {
    const auto label = study.labels.find(a.name);
    s += axis_text(a, label == study.labels.end() ? nullptr : &label->second);
  }
  for (const auto& p : study.plots) {
    s += fmt::format("plot {{ x: {} lines: {} response: {} }}\n", quoted(p.x), quoted(p.lines), quoted(p.response));
  }
  return s;
}

}  // namespace rths::study
