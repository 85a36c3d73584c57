#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "node_numerical/study/grid.hpp"

namespace rths::study {

// What plots show for the values of an axis (proto/study.proto, Study.Label).
struct Label {
  std::string title;                // with its unit, e.g. "model error (%)"
  std::vector<std::string> values;  // one per value of the axis
  int line = 0;
};

// One `plot` of a study: RESPONSE's peak error against axis x, one line per value of axis lines.
struct Plot {
  std::string x;
  std::string lines;
  std::string response;  // empty: the last DOF, resolved once the config is read
  int line = 0;
};

// A study file as rths-study runs it: read, checked, paths resolved.
struct StudyFile {
  std::filesystem::path file;
  std::string name;
  std::filesystem::path config;  // absolute; empty in a plot spec (study.plot)
  Grid grid;
  std::map<std::string, Label> labels;  // by axis name
  std::vector<Plot> plots;

  // "small.study:4: ", the start of an error about what the file writes on that line (0: none).
  [[nodiscard]] std::string at(int line) const;
};

// Reads a study file (protobuf text format of proto/study.proto) and checks it: every rule of the
// schema's comments, labels and plots against the axes (check_plots). The experiment config must be
// named unless need_config is false (the plot spec that merge reads). Throws BadInput naming the
// file and line; a file in the older line syntax gets one line saying how to convert it.
StudyFile read_study(const std::filesystem::path& file, bool need_config = true);
// The same on text already read (file: where it came from, for messages and relative paths).
StudyFile parse_study(const std::string& text, const std::filesystem::path& file, bool need_config = true);

// The grid, labels and plots of a study as a study file without config and sets: study.plot, which
// merge reads back to draw what the unsharded run would have drawn.
std::string plot_spec(const StudyFile& study);

// The study file's text of one axis (with its label, if any), as `plot_spec` and `convert` write it.
std::string axis_text(const Axis& axis, const Label* label);
// A text-format string literal: double quotes, backslashes and control characters escaped.
std::string quoted(const std::string& text);

}  // namespace rths::study
