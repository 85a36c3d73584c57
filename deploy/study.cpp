// rths-study: parameter studies in virtual time. A study file names an experiment config and axes of
// override values; every point of their grid runs in process on a pool of threads and lands as one
// row of study.csv, with the command line that re-runs it alone; `plot` statements add the pure
// simulation of each point (pure.csv) and gnuplot figures drawn from the two tables, the same after a
// sharded run's merge as after one run. Kept in one file: parse, run, write, plot.
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rths/common/command_line.hpp"
#include "rths/common/config.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/common/results.hpp"
#include "rths/node_numerical/experiment.hpp"

// POSIX has the program declare environ, for posix_spawnp (gnuplot).
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables,readability-redundant-declaration)
extern char** environ;

namespace {

constexpr const char* kProgram = "rths-study";
constexpr const char* kPlotSpec = "study.plot";

class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The fields of a site that the pure simulation overrides (see pure_study).
constexpr std::array<std::string_view, 2> kNetworkFields{".link", ".compensation"};

struct Axis {
  std::string name;
  std::vector<std::string> paths;
  std::vector<std::string> tokens;               // as written
  std::vector<std::vector<std::string>> values;  // [value][path]
  int line = 0;

  // Every path inside a site's link or compensation: the network and how the predictor meets it,
  // which the pure simulation replaces (its value is the same for every value of such an axis).
  [[nodiscard]] bool network_side() const {
    return std::all_of(paths.begin(), paths.end(), [](const std::string& p) {
      const auto close = p.find(']');
      if (!p.starts_with("site[") || close == std::string::npos) {
        return false;
      }
      const std::string_view rest = std::string_view(p).substr(close + 1);
      return std::any_of(kNetworkFields.begin(), kNetworkFields.end(), [&](std::string_view f) {
        return rest.starts_with(f) && (rest.size() == f.size() || rest[f.size()] == '.');
      });
    });
  }
};

struct Label {
  std::string title;
  std::vector<std::string> values;
  int line = 0;
};

struct Plot {
  std::string x;
  std::string lines;
  std::string response;  // empty: the last DOF, resolved once the config is read
  int line = 0;
};

struct Study {
  std::filesystem::path file;
  std::string name;
  std::filesystem::path config;  // absolute
  std::vector<std::string> sets;
  std::vector<Axis> axes;
  std::vector<std::string> after;  // applied after the axes (the pure simulation's)
  std::map<std::string, Label> labels;
  std::vector<Plot> plots;

  [[nodiscard]] std::size_t rows() const {
    std::size_t n = 1;
    for (const auto& a : axes) {
      n *= a.values.size();
    }
    return n;
  }
  // Index of each axis's value in a row (first axis slowest).
  [[nodiscard]] std::vector<std::size_t> point(std::size_t row) const {
    std::vector<std::size_t> idx(axes.size());
    for (std::size_t i = axes.size(); i-- > 0;) {
      idx[i] = row % axes[i].values.size();
      row /= axes[i].values.size();
    }
    return idx;
  }
  // The inverse of point().
  [[nodiscard]] std::size_t row_of(const std::vector<std::size_t>& idx) const {
    std::size_t row = 0;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      row = row * axes[i].values.size() + idx[i];
    }
    return row;
  }
  [[nodiscard]] std::vector<std::string> overrides(std::size_t row) const {
    std::vector<std::string> out = sets;
    const auto idx = point(row);
    for (std::size_t a = 0; a < axes.size(); ++a) {
      for (std::size_t p = 0; p < axes[a].paths.size(); ++p) {
        out.push_back(axes[a].paths[p] + "=" + axes[a].values[idx[a]][p]);
      }
    }
    out.insert(out.end(), after.begin(), after.end());
    return out;
  }
  [[nodiscard]] std::optional<std::size_t> axis_index(const std::string& axis) const {
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (axes[i].name == axis) {
        return i;
      }
    }
    return std::nullopt;
  }
};

// The study of the pure simulations: the axes off the network side, and after them the overrides
// that cut every remote site's feedback under MODIFIED_SMITH (the numerical node then integrates
// with f = f_model(x) + 0: the erroneous model, no network).
Study pure_study(const Study& st, const std::vector<std::string>& remote_sites) {
  Study pure = st;
  pure.axes.clear();
  for (const auto& a : st.axes) {
    if (!a.network_side()) {
      pure.axes.push_back(a);
    }
  }
  pure.plots.clear();
  for (const auto& site : remote_sites) {
    pure.after.push_back("site[" + site + "].link={ backward { loss { probability: 1 } } }");
    pure.after.push_back("site[" + site + "].compensation={ mode: MODIFIED_SMITH }");
  }
  return pure;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
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

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) {
    out.push_back(w);
  }
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) {
    return {};
  }
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// '#' at the start of a line or after a blank starts a comment (not inside a "quoted" title).
std::string strip_comment(const std::string& line) {
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      quoted = !quoted;
    } else if (!quoted && line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::optional<double> number(const std::string& s) {
  if (s.empty()) {
    return std::nullopt;
  }
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) {
      return v;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

const std::set<std::string> kReservedColumns{"row", "rerun", "steps", "run_time_s", "error"};

Axis parse_axis(const std::string& rest, const std::string& line, const std::string& where, int n) {
  const auto eq = rest.find('=');
  const auto head = words(rest.substr(0, eq));
  if (eq == std::string::npos || head.size() != 2) {
    throw BadInput(fmt::format("{}expected `axis NAME PATH[,PATH...] = VALUE...`, found `{}`", where, line));
  }
  Axis ax;
  ax.name = head[0];
  ax.line = n;
  ax.paths = split(head[1], ',');
  ax.tokens = words(rest.substr(eq + 1));
  if (kReservedColumns.contains(ax.name)) {
    throw BadInput(where + "axis " + ax.name + ": the name is a column of study.csv; choose another");
  }
  if (ax.tokens.empty()) {
    throw BadInput(where + "axis " + ax.name + " has no values");
  }
  for (const auto& t : ax.tokens) {
    auto parts = ax.paths.size() > 1 ? split_tuple(t) : std::vector<std::string>{t};
    if (parts.size() == 1) {
      parts.assign(ax.paths.size(), t);
    }
    if (parts.size() != ax.paths.size()) {
      throw BadInput(fmt::format("{}axis {}: value `{}` has {} elements, the axis has {} paths", where, ax.name, t,
                                 parts.size(), ax.paths.size()));
    }
    ax.values.push_back(std::move(parts));
  }
  return ax;
}

// label AXIS "TITLE" = V1 V2 ...
std::pair<std::string, Label> parse_label(const std::string& rest, const std::string& line, const std::string& where,
                                          int n) {
  const auto q1 = rest.find('"');
  const auto q2 = q1 == std::string::npos ? std::string::npos : rest.find('"', q1 + 1);
  const auto eq = q2 == std::string::npos ? std::string::npos : rest.find('=', q2);
  const auto head = words(rest.substr(0, q1));
  if (eq == std::string::npos || head.size() != 1 || !trim(rest.substr(q2 + 1, eq - q2 - 1)).empty()) {
    throw BadInput(fmt::format("{}expected `label AXIS \"TITLE (UNIT)\" = VALUE...`, found `{}`", where, line));
  }
  Label label;
  label.title = rest.substr(q1 + 1, q2 - q1 - 1);
  label.values = words(rest.substr(eq + 1));
  label.line = n;
  return {head[0], label};
}

Study parse_study(const std::filesystem::path& file, bool need_config = true) {
  std::ifstream in(file);
  if (!in) {
    throw BadInput(fmt::format("{}: cannot read the study file", file.string()));
  }
  Study st;
  st.file = file;
  st.name = file.stem().string();
  const std::string src = file.filename().string();
  std::set<std::string> axis_paths;
  int n = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    const std::string line = trim(strip_comment(raw));
    if (line.empty()) {
      continue;
    }
    const auto where = fmt::format("{}:{}: ", src, n);
    const auto sp = line.find_first_of(" \t");
    const std::string keyword = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? std::string{} : trim(line.substr(sp));
    if (keyword == "config") {
      if (rest.empty() || !st.config.empty()) {
        throw BadInput(where + (rest.empty() ? "config needs a FILE" : "a second config line"));
      }
      const std::filesystem::path p(rest);
      st.config = std::filesystem::weakly_canonical(p.is_absolute() ? p : file.parent_path() / p);
    } else if (keyword == "set") {
      if (rest.find('=') == std::string::npos || rest.find_first_of(" \t") != std::string::npos) {
        throw BadInput(fmt::format("{}expected `set PATH=VALUE` (no spaces), found `{}`", where, line));
      }
      st.sets.push_back(rest);
    } else if (keyword == "name") {
      if (words(rest).size() != 1) {
        throw BadInput(fmt::format("{}expected `name NAME` (one word), found `{}`", where, line));
      }
      st.name = rest;
    } else if (keyword == "axis") {
      Axis ax = parse_axis(rest, line, where, n);
      if (st.axis_index(ax.name)) {
        throw BadInput(where + "axis " + ax.name + " is named twice");
      }
      for (const auto& p : ax.paths) {
        if (p.empty() || !axis_paths.insert(p).second) {
          throw BadInput(fmt::format("{}axis {}: path `{}` is empty or on another axis too", where, ax.name, p));
        }
      }
      st.axes.push_back(std::move(ax));
    } else if (keyword == "label") {
      auto [axis, label] = parse_label(rest, line, where, n);
      if (!st.labels.emplace(axis, std::move(label)).second) {
        throw BadInput(fmt::format("{}axis {} is labelled twice", where, axis));
      }
    } else if (keyword == "plot") {
      const auto w = words(rest);
      if (w.size() != 2 && w.size() != 3) {
        throw BadInput(fmt::format("{}expected `plot X_AXIS LINE_AXIS [RESPONSE]`, found `{}`", where, line));
      }
      st.plots.push_back({w[0], w[1], w.size() == 3 ? w[2] : std::string{}, n});
    } else {
      throw BadInput(
          fmt::format("{}unknown statement `{}`; expected config, axis, set, name, plot or label", where, keyword));
    }
  }
  if (need_config && st.config.empty()) {
    throw BadInput(src + ": no `config FILE` line");
  }
  return st;
}

// ---- what a plot shows for an axis ---------------------------------------------------------------

struct AxisView {
  std::string title;                       // with unit, e.g. "round trip (ms)"
  std::vector<std::string> text;           // per value
  std::vector<std::optional<double>> num;  // per value, when a number
};

std::string short_number(double v) {
  return fmt::format("{:.10g}", v);
}

AxisView axis_view(const Study& st, const Axis& ax) {
  AxisView v;
  if (const auto it = st.labels.find(ax.name); it != st.labels.end()) {
    v.title = it->second.title;
    v.text = it->second.values;
  } else {
    // Link delays: the round trip of the first site named (its forward + backward legs), in ms.
    std::optional<std::size_t> fwd;
    std::optional<std::size_t> bwd;
    for (std::size_t p = 0; p < ax.paths.size(); ++p) {
      const auto& path = ax.paths[p];
      const auto site = path.substr(0, path.find(".link"));
      if (path == site + ".link.forward.delay_s" && !fwd && (!bwd || ax.paths[*bwd].starts_with(site + "."))) {
        fwd = p;
      } else if (path == site + ".link.backward.delay_s" && !bwd && (!fwd || ax.paths[*fwd].starts_with(site + "."))) {
        bwd = p;
      }
    }
    const bool delays = fwd && bwd && std::all_of(ax.values.begin(), ax.values.end(), [&](const auto& val) {
                          return number(val[*fwd]) && number(val[*bwd]);
                        });
    if (delays) {
      v.title = "round trip (ms)";
      for (const auto& val : ax.values) {
        v.text.push_back(short_number(1e3 * (*number(val[*fwd]) + *number(val[*bwd]))));
      }
    } else {
      v.title = ax.name;
      v.text = ax.tokens;
    }
  }
  for (const auto& t : v.text) {
    v.num.push_back(number(t));
  }
  return v;
}

// "model error (%)" and "-30" -> "model error -30 %"; a title without a unit -> "TITLE VALUE".
std::string legend(const std::string& title, const std::string& value) {
  if (title.ends_with(")")) {
    const auto open = title.rfind(" (");
    if (open != std::string::npos) {
      return fmt::format("{} {} {}", title.substr(0, open), value, title.substr(open + 2, title.size() - open - 3));
    }
  }
  return title + " " + value;
}

std::string file_word(const std::string& s) {
  std::string out;
  for (const char c : s) {
    out += (std::isalnum(static_cast<unsigned char>(c)) != 0) || c == '.' || c == '+' || c == '-' ? c : '_';
  }
  return out;
}

// Labels and plots refer to existing axes with as many values; a plot's x axis is numeric.
void check_plots(const Study& st) {
  const std::string src = st.file.filename().string();
  for (const auto& [axis, label] : st.labels) {
    const auto a = st.axis_index(axis);
    if (!a) {
      throw BadInput(fmt::format("{}:{}: label: no axis {}", src, label.line, axis));
    }
    if (label.values.size() != st.axes[*a].values.size()) {
      throw BadInput(fmt::format("{}:{}: label {}: {} values, the axis has {}", src, label.line, axis,
                                 label.values.size(), st.axes[*a].values.size()));
    }
  }
  for (const auto& p : st.plots) {
    const auto x = st.axis_index(p.x);
    const auto l = st.axis_index(p.lines);
    if (!x || !l || *x == *l) {
      throw BadInput(
          fmt::format("{}:{}: plot {} {}: expected two different axes of the study", src, p.line, p.x, p.lines));
    }
    const AxisView xv = axis_view(st, st.axes[*x]);
    for (std::size_t i = 0; i < xv.num.size(); ++i) {
      if (!xv.num[i]) {
        throw BadInput(fmt::format(
            "{}:{}: plot {} {}: x axis value `{}` is not a number; give `label {} \"TITLE (UNIT)\" = N1 N2 ...`", src,
            p.line, p.x, p.lines, xv.text[i], p.x));
      }
    }
  }
}

// ---- checks before anything runs -----------------------------------------------------------------

struct Checked {
  std::vector<std::string> responses;     // x1..xN, f_<site>...
  std::size_t dofs = 0;                   // the first responses are the DOFs
  std::vector<std::string> remote_sites;  // by name
};

// Every override on its own against the base config (so an error names the axis and its line),
// then every row's whole set through the loader's validation.
Checked check_study(const Study& st, const std::vector<std::pair<const Study*, std::size_t>>& jobs) {
  const std::string src = st.file.filename().string();
  rths::LoadedConfig base;
  try {
    base = rths::load_experiment(st.config, st.sets);
  } catch (const rths::ConfigError& e) {
    throw BadInput(src + ": " + e.what());
  }
  for (const auto& ax : st.axes) {
    for (std::size_t v = 0; v < ax.values.size(); ++v) {
      for (std::size_t p = 0; p < ax.paths.size(); ++p) {
        rths::config::Experiment copy = base.experiment;
        const std::string assignment = ax.paths[p] + "=" + ax.values[v][p];
        try {
          rths::apply_override(copy, assignment);
        } catch (const rths::ConfigError& e) {
          throw BadInput(fmt::format("{}:{}: axis {}: {}", src, ax.line, ax.name, e.what()));
        }
      }
    }
  }
  for (const auto& [study, row] : jobs) {
    try {
      (void)rths::load_experiment(study->config, study->overrides(row));
    } catch (const rths::ConfigError& e) {
      throw BadInput(
          fmt::format("{}: {}row {}: {}", src, study->after.empty() ? "" : "pure simulation ", row, e.what()));
    }
  }
  // The responses of Experiment::evaluate: x1..xN (or dof_name), then f_<site>[_<channel>].
  Checked c;
  const auto& s = base.experiment.structure();
  c.dofs = s.dofs();
  for (std::uint32_t i = 0; i < s.dofs(); ++i) {
    c.responses.push_back(static_cast<int>(i) < s.dof_name_size() ? s.dof_name(static_cast<int>(i))
                                                                  : fmt::format("x{}", i + 1));
  }
  for (const auto& site : base.experiment.site()) {
    for (int ch = 0; ch < site.channel_size(); ++ch) {
      c.responses.push_back("f_" + rths::channel_label(site.name(), static_cast<std::size_t>(site.channel_size()),
                                                       static_cast<std::size_t>(ch)));
    }
    if (site.placement() == rths::config::REMOTE) {
      c.remote_sites.push_back(site.name());
    }
  }
  return c;
}

// ---- CSV -------------------------------------------------------------------------------------------

std::string shell_quote(const std::string& a) {
  const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
    return (std::isalnum(static_cast<unsigned char>(c)) != 0) ||
           std::string_view("_./=:+-,@%").find(c) != std::string_view::npos;
  });
  if (plain) {
    return a;
  }
  std::string q = "'";
  for (const char c : a) {
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return q + "'";
}

std::string csv_cell(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.find_first_of(",\"") == std::string::npos) {
    return s;
  }
  std::string q = "\"";
  for (const char c : s) {
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return q + "\"";
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

const std::vector<const char*> kMetrics{"peak", "reference_peak", "j_peak_pct", "j_rms_pct", "rho"};

std::string csv_header(const Study& st, const std::vector<std::string>& responses) {
  std::vector<std::string> cols{"row"};
  for (const auto& a : st.axes) {
    cols.push_back(a.name);
  }
  for (const auto& a : st.axes) {
    cols.insert(cols.end(), a.paths.begin(), a.paths.end());
  }
  cols.emplace_back("rerun");
  for (const auto& r : responses) {
    for (const char* m : kMetrics) {
      cols.push_back(r + "_" + m);
    }
  }
  cols.insert(cols.end(), {"steps", "run_time_s", "error"});
  std::string h;
  for (const auto& c : cols) {
    h += (h.empty() ? "" : ",") + csv_cell(c);
  }
  return h;
}

struct Outcome {
  bool done = false;
  std::optional<rths::RunReport> report;
  std::string error;
};

// A row of study.csv or pure.csv as the results schema has it (results::StudyRow).
rths::results::StudyRow study_row(const Study& st, std::size_t row, const Outcome& o) {
  rths::results::StudyRow r;
  r.set_row(row);
  const auto idx = st.point(row);
  for (std::size_t a = 0; a < st.axes.size(); ++a) {
    r.add_axis_values(st.axes[a].tokens[idx[a]]);
  }
  for (std::size_t a = 0; a < st.axes.size(); ++a) {
    for (const auto& v : st.axes[a].values[idx[a]]) {
      r.add_path_values(v);
    }
  }
  std::string rerun = "rths-numerical run " + shell_quote(st.config.string());
  for (const auto& ov : st.overrides(row)) {
    rerun += " --set " + shell_quote(ov);
  }
  r.set_rerun(rerun);
  if (o.report) {
    for (const auto& [name, m] : o.report->responses) {
      (*r.mutable_responses())[name] = rths::to_results(m);
    }
    r.set_steps(o.report->steps);
    r.set_run_time_s(o.report->run_time_s);
  }
  r.set_error(o.error);
  return r;
}

// The row's CSV line, in the columns of csv_header (a response the run did not reach: empty cells).
std::string csv_row(const rths::results::StudyRow& r, const std::vector<std::string>& responses) {
  std::vector<std::string> cells{std::to_string(r.row())};
  cells.insert(cells.end(), r.axis_values().begin(), r.axis_values().end());
  cells.insert(cells.end(), r.path_values().begin(), r.path_values().end());
  cells.push_back(r.rerun());
  for (const auto& name : responses) {
    const auto it = r.responses().find(name);
    if (it == r.responses().end()) {
      cells.insert(cells.end(), kMetrics.size(), std::string{});
      continue;
    }
    const rths::results::ResponseMetrics& m = it->second;
    for (const double v : {m.peak(), m.reference_peak(), m.j_peak_pct(), m.j_rms_pct(), m.rho()}) {
      cells.push_back(fmt::format("{}", v));
    }
  }
  cells.push_back(r.has_steps() ? std::to_string(r.steps()) : std::string{});
  cells.push_back(r.has_run_time_s() ? fmt::format("{}", r.run_time_s()) : std::string{});
  cells.push_back(r.error());
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    line += (i == 0 ? "" : ",") + csv_cell(cells[i]);
  }
  return line;
}

// A study.csv or pure.csv as written: its header, and each row's cells by row index.
struct Table {
  std::vector<std::string> header;
  std::map<std::size_t, std::vector<std::string>> rows;

  [[nodiscard]] std::optional<std::size_t> column(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? std::nullopt
                              : std::optional<std::size_t>(static_cast<std::size_t>(it - header.begin()));
  }
};

Table read_table(const std::filesystem::path& file) {
  Table t;
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    throw BadInput("cannot read " + file.string());
  }
  t.header = csv_split(line);
  int n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) {
      continue;
    }
    auto cells = csv_split(line);
    const auto row = number(cells[0]);
    if (!row || cells.size() != t.header.size()) {
      throw BadInput(
          fmt::format("{}:{}: expected {} cells starting with the row index", file.string(), n, t.header.size()));
    }
    t.rows[static_cast<std::size_t>(*row)] = std::move(cells);
  }
  return t;
}

// ---- plots -----------------------------------------------------------------------------------------

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  if (!f.flush()) {
    throw std::runtime_error("cannot write " + p.string());
  }
}

// The grid and plot statements, enough for merge to draw what the run would have drawn.
std::string plot_spec(const Study& st) {
  std::string s = fmt::format("# rths-study: the grid and plots of {} (read by rths-study merge)\nname {}\n",
                              st.file.string(), st.name);
  for (const auto& a : st.axes) {
    std::string paths;
    for (const auto& p : a.paths) {
      paths += (paths.empty() ? "" : ",") + p;
    }
    s += fmt::format("axis {} {} =", a.name, paths);
    for (const auto& t : a.tokens) {
      s += " " + t;
    }
    s += "\n";
  }
  for (const auto& [axis, label] : st.labels) {
    s += fmt::format("label {} \"{}\" =", axis, label.title);
    for (const auto& v : label.values) {
      s += " " + v;
    }
    s += "\n";
  }
  for (const auto& p : st.plots) {
    s += fmt::format("plot {} {} {}\n", p.x, p.lines, p.response);
  }
  return s;
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path == nullptr ? std::string{} : std::string(path), ':')) {
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

// gnuplot SCRIPT run in dir (its names are relative), its output appended to log; the exit code, or
// -errno when it could not be started. Both paths are made absolute first: the child changes into
// dir before it opens the log, so a relative log (runs/linear/gnuplot.log) would be looked for in
// runs/linear/runs/linear/.
int run_gnuplot(const std::filesystem::path& gnuplot, const std::filesystem::path& dir, const std::string& script,
                const std::filesystem::path& log) {
  const std::string where = std::filesystem::absolute(dir).string();
  const std::string log_file = std::filesystem::absolute(log).string();
  std::vector<std::string> args{gnuplot.string(), script};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, where.c_str());
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return -rc;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The last line of a file with words on it (what gnuplot said last; not its "^" marker), or "".
std::string last_line_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r^") != std::string::npos) {
      last = line;
    }
  }
  return last;
}

// A gnuplot double-quoted string; backslashes pass (a title's "\\n" is a line break).
std::string gp_quote(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    q += c == '"' ? std::string("\\\"") : std::string(1, c);
  }
  return q + "\"";
}

struct PlotFile {
  std::string name;  // without extension
  std::string dat;
  std::string gp;
};

// One plot of `p` at one combination of the other axes (idx holds their value indices; x and lines
// are filled in here). Every number is a cell of study.csv or pure.csv, copied as written.
PlotFile make_plot(const Study& spec, const Study& pure, const Plot& p, std::vector<std::size_t> idx,
                   const std::vector<std::size_t>& others, const Table& grid, const Table* pure_table) {
  const std::size_t xa = *spec.axis_index(p.x);
  const std::size_t la = *spec.axis_index(p.lines);
  const AxisView xv = axis_view(spec, spec.axes[xa]);
  const AxisView lv = axis_view(spec, spec.axes[la]);
  const std::string metric = p.response + "_j_peak_pct";
  const auto grid_col = grid.column(metric);
  const auto pure_col = pure_table == nullptr ? std::nullopt : pure_table->column(metric);
  if (!grid_col) {
    throw BadInput("study.csv has no column " + metric);
  }
  const auto cell = [](const Table& t, std::size_t row, std::size_t col) {
    const auto it = t.rows.find(row);
    return it == t.rows.end() || it->second[col].empty() ? std::string("NaN") : it->second[col];
  };

  PlotFile f;
  f.name = fmt::format("{}_peak_error_vs_{}_by_{}", file_word(p.response), file_word(p.x), file_word(p.lines));
  std::string where;
  for (const std::size_t o : others) {
    const AxisView ov = axis_view(spec, spec.axes[o]);
    f.name += fmt::format("_{}-{}", file_word(spec.axes[o].name), file_word(ov.text[idx[o]]));
    where += fmt::format("{}{} = {}", where.empty() ? "" : ", ", ov.title, ov.text[idx[o]]);
  }

  // Columns: x, one per line value, then the pure simulation per line value (one if all equal).
  std::vector<std::size_t> xs(spec.axes[xa].values.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = i;
  }
  std::stable_sort(xs.begin(), xs.end(), [&](std::size_t a, std::size_t b) { return *xv.num[a] < *xv.num[b]; });
  const std::size_t nl = spec.axes[la].values.size();
  std::vector<std::vector<std::string>> lines(nl);
  std::vector<std::vector<std::string>> pures(pure_col ? nl : 0);
  for (const std::size_t xi : xs) {
    idx[xa] = xi;
    for (std::size_t li = 0; li < nl; ++li) {
      idx[la] = li;
      lines[li].push_back(cell(grid, spec.row_of(idx), *grid_col));
      if (pure_col) {
        std::vector<std::size_t> pidx;
        for (std::size_t a = 0; a < spec.axes.size(); ++a) {
          if (!spec.axes[a].network_side()) {
            pidx.push_back(idx[a]);
          }
        }
        pures[li].push_back(cell(*pure_table, pure.row_of(pidx), *pure_col));
      }
    }
  }
  const bool one_pure =
      !pures.empty() && std::all_of(pures.begin(), pures.end(), [&](const auto& c) { return c == pures[0]; });
  if (one_pure) {
    pures.resize(1);
  }

  const std::string response_title = p.response + " peak error J_peak (%)";
  f.dat = fmt::format("# rths-study {}: {} against {}, one column per value of {}{}\n", spec.name, response_title,
                      xv.title, lv.title, where.empty() ? "" : "; " + where);
  f.dat += "# from study.csv (column " + metric + ")" + (pures.empty() ? "" : " and pure.csv") + "\n# 1: " + xv.title;
  for (std::size_t li = 0; li < nl; ++li) {
    f.dat += fmt::format(" | {}: {}", li + 2, legend(lv.title, lv.text[li]));
  }
  for (std::size_t k = 0; k < pures.size(); ++k) {
    f.dat += fmt::format(" | {}: pure simulation{}", nl + 2 + k, one_pure ? "" : ", " + legend(lv.title, lv.text[k]));
  }
  f.dat += "\n";
  for (std::size_t r = 0; r < xs.size(); ++r) {
    f.dat += xv.text[xs[r]];
    for (const auto& c : lines) {
      f.dat += " " + c[r];
    }
    for (const auto& c : pures) {
      f.dat += " " + c[r];
    }
    f.dat += "\n";
  }

  std::string title = fmt::format("{}: {} against {}", spec.name, response_title, xv.title);
  if (!where.empty()) {
    title += "\\n" + where;
  }
  f.gp = fmt::format(
      "# rths-study: {0}.png from {0}.dat (gnuplot {0}.gp in this folder)\n"
      "reset\n"
      "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {{ set terminal pngcairo size 1000,650 noenhanced }} "
      "else {{ set terminal png size 1000,650 }}\n"
      "set termoption noenhanced\n"
      "set output \"{0}.png\"\n"
      "set datafile missing \"NaN\"\n"
      "set title {1}\n"
      "set xlabel {2}\n"
      "set ylabel {3}\n"
      "set key below\n"
      "set grid\n"
      "set yrange [0:*]\n"
      "plot \\\n",
      f.name, gp_quote(title), gp_quote(xv.title), gp_quote(response_title));
  for (std::size_t li = 0; li < nl; ++li) {
    f.gp += fmt::format("  \"{}.dat\" using 1:{} with linespoints lw 2 pt 7 lc {} title {}, \\\n", f.name, li + 2,
                        li + 1, gp_quote(legend(lv.title, lv.text[li])));
  }
  for (std::size_t k = 0; k < pures.size(); ++k) {
    const std::string t =
        one_pure ? "pure simulation (no network)" : (k == 0 ? "pure simulation (dashed, same colour)" : std::string{});
    f.gp += fmt::format("  \"{}.dat\" using 1:{} with lines dt 2 lw 2 lc {} {}, \\\n", f.name, nl + 2 + k,
                        one_pure ? std::string("rgb \"black\"") : std::to_string(k + 1),
                        t.empty() ? std::string("notitle") : "title " + gp_quote(t));
  }
  f.gp.resize(f.gp.size() - 4);  // the last ", \\\n"
  f.gp += "\n";
  return f;
}

struct PlotCount {
  std::size_t made = 0;    // PNGs drawn
  std::size_t failed = 0;  // scripts gnuplot did not turn into a PNG (each logged as an error)
};

// Every plot of the study in dir from dir/study.csv and dir/pure.csv; with gnuplot the PNGs too.
// Without gnuplot one warning says so and nothing fails: the scripts are there to run later.
PlotCount write_plots(const Study& spec, const std::filesystem::path& dir) {
  if (spec.plots.empty()) {
    return {};
  }
  check_plots(spec);
  const Table grid = read_table(dir / "study.csv");
  const Study pure = pure_study(spec, {});
  std::optional<Table> pure_table;
  if (std::filesystem::exists(dir / "pure.csv")) {
    pure_table = read_table(dir / "pure.csv");
  }
  std::vector<std::string> scripts;
  std::set<std::string> names;
  for (const auto& p : spec.plots) {
    const std::size_t xa = *spec.axis_index(p.x);
    const std::size_t la = *spec.axis_index(p.lines);
    std::vector<std::size_t> others;
    std::size_t combos = 1;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      if (a != xa && a != la) {
        others.push_back(a);
        combos *= spec.axes[a].values.size();
      }
    }
    for (std::size_t c = 0; c < combos; ++c) {
      std::vector<std::size_t> idx(spec.axes.size(), 0);
      std::size_t rest = c;
      for (std::size_t k = others.size(); k-- > 0;) {
        idx[others[k]] = rest % spec.axes[others[k]].values.size();
        rest /= spec.axes[others[k]].values.size();
      }
      PlotFile f = make_plot(spec, pure, p, idx, others, grid, pure_table ? &*pure_table : nullptr);
      if (!names.insert(f.name).second) {
        f.name += fmt::format("_{}", c + 1);  // two values that read the same in a file name
        names.insert(f.name);
      }
      write_file(dir / (f.name + ".dat"), f.dat);
      write_file(dir / (f.name + ".gp"), f.gp);
      scripts.push_back(f.name);
    }
  }
  const auto gnuplot = find_program("gnuplot");
  if (!gnuplot) {
    spdlog::warn(
        "gnuplot is not installed: wrote {} plot data files (.dat) and scripts (.gp) in {} but no PNG; install "
        "gnuplot (Debian: gnuplot-nox, see deploy/setup.sh) and run `gnuplot NAME.gp` there",
        scripts.size(), dir.string());
    return {};
  }
  PlotCount count;
  const std::filesystem::path log = dir / "gnuplot.log";
  std::filesystem::remove(log);
  for (const auto& s : scripts) {
    std::filesystem::remove(dir / (s + ".png"));
    const int rc = run_gnuplot(*gnuplot, dir, s + ".gp", log);
    if (rc == 0 && std::filesystem::exists(dir / (s + ".png"))) {
      ++count.made;
    } else if (rc < 0) {
      ++count.failed;
      spdlog::error("plot {}: cannot start {} in {} with its output to {}: {}", s, gnuplot->string(), dir.string(),
                    log.string(), std::strerror(-rc));
    } else {
      ++count.failed;
      const std::string said = last_line_of(log);
      spdlog::error("plot {}: gnuplot {}.gp in {} {}{}; see {}", s, s, dir.string(),
                    rc == 0 ? "made no PNG" : fmt::format("failed (exit {})", rc), said.empty() ? "" : ": " + said,
                    log.string());
    }
  }
  spdlog::info("plots: {} PNG of {} in {}", count.made, scripts.size(), dir.string());
  return count;
}

// ", 4 plots" or ", 3 plots (1 failed)" for the closing line.
std::string plot_text(const PlotCount& plots) {
  return fmt::format(", {} plots{}", plots.made,
                     plots.failed == 0 ? std::string{} : fmt::format(" ({} failed)", plots.failed));
}

// ---- run -------------------------------------------------------------------------------------------

std::string clock_text(double s) {
  const auto t = std::lround(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

void draw_progress(std::size_t done, std::size_t total, double elapsed) {
  constexpr int kWidth = 30;
  const double f = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int fill = static_cast<int>(f * kWidth);
  const std::string eta =
      done == 0 ? "--:--" : clock_text(elapsed / static_cast<double>(done) * static_cast<double>(total - done));
  std::fprintf(stderr, "\r[%s%s] %zu/%zu  elapsed %s  ETA %s ",
               std::string(static_cast<std::size_t>(fill), '#').c_str(),
               std::string(static_cast<std::size_t>(kWidth - fill), ' ').c_str(), done, total,
               clock_text(elapsed).c_str(), eta.c_str());
  std::fflush(stderr);
}

struct Options {
  std::string command;
  std::vector<std::string> positional;
  std::filesystem::path out;
  int jobs = 0;  // 0: the hardware's threads
  std::size_t shard_k = 1;
  std::size_t shard_n = 1;
  bool quiet = false;
};

// The most threads --jobs starts: far more than any machine this runs on has cores.
constexpr int kMaxJobs = 1024;

// K/N with 1 <= K <= N.
void parse_shard(const std::string& text, Options& o) {
  const auto slash = text.find('/');
  const rths::WholeRange any{1, std::numeric_limits<int>::max(), ""};
  try {
    o.shard_k = static_cast<std::size_t>(rths::parse_whole(text.substr(0, slash), any));
    o.shard_n =
        static_cast<std::size_t>(rths::parse_whole(slash == std::string::npos ? "" : text.substr(slash + 1), any));
  } catch (const rths::Expected&) {
    o.shard_k = 0;
  }
  if (o.shard_k == 0 || o.shard_k > o.shard_n) {
    throw rths::Expected("K/N, whole numbers with 1 <= K <= N");
  }
}

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli(kProgram, "parameter studies over rths experiments in virtual time");
  cli.command("run", "STUDY",
              "Run every point of STUDY's grid in virtual time (as `rths-numerical run`), in process on\n"
              "--jobs threads, and write one row per run to DIR/study.csv; with `plot` statements also\n"
              "the pure simulations (DIR/pure.csv) and the plots.");
  cli.command("merge", "DIR...",
              "Concatenate the study.csv (and pure.csv) of shard folders (same header) into DIR, sorted\n"
              "by row, checking that no row is missing or duplicated; then draw the plots, the same as\n"
              "one unsharded run draws.");
  cli.path("out", "DIR", o.out, "Output folder (created). Default for run: runs/<study name>-<date>-<time>")
      .required_for({"merge"});
  cli.whole("jobs", "N", o.jobs, {1, kMaxJobs, "a whole number of threads"},
            "Runs at a time, 1 to 1024 (default: the hardware's threads).")
      .only_for({"run"});
  cli.option(
         "shard", "K/N", [&o](const std::string& v) { parse_shard(v, o); },
         "Run only the rows with row % N == K-1 (1 <= K <= N), e.g. one shard per host, and\n"
         "the pure simulations likewise; no plots (merge the shard folders to get them).\n"
         "deploy/cluster/study-slurm.sh and study-parallel.sh run the shards and the merge.")
      .only_for({"run"});
  cli.flag("quiet", o.quiet, "No progress bar, summary or warnings; only errors.").alias("-q");
  cli.refuse("set", "belongs in the study file (`set PATH=VALUE`), not on the command line");
  cli.epilogue(R"usage(STUDY file (one statement a line; '#' starts a comment; relative paths from the study file):
  config FILE                          the experiment (protobuf text, as rths-numerical takes)
  axis NAME PATH[,PATH...] = V1 V2 ... one axis of the grid: each value is an override value
                                       (as --set PATH=V); with several paths a value sets every
                                       path, or is a ':'-separated tuple with one element per path
                                       (a ':' inside {...} or [...] does not separate)
  set PATH=VALUE                       a fixed override for every run (repeatable)
  name NAME                            the study's name in plot titles (default: the file's stem)
  plot X LINES [RESPONSE]              plots of RESPONSE's peak error J_peak (%) against axis X, one
                                       line per value of axis LINES, with the pure simulation
                                       dashed; one plot per combination of the other axes' values.
                                       RESPONSE: x1..xN or f_<site> (default: the last DOF, the top
                                       floor). Repeatable.
  label AXIS "TITLE (UNIT)" = V1 V2 ... what a plot shows for each value of AXIS (numbers on the x
                                       axis, any word in a legend) and the axis title with its unit
The grid is the Cartesian product of the axes, the first axis slowest; row = its index from 0.
Each run applies the `set` overrides in order, then each axis's paths in order. Values hold no
spaces (text-format messages fit: {probability:0.05}). Example:
  config ../seed002/spring.textproto
  axis model_error site[0].channel[0].prediction.spring.stiffness_n_per_m = 39084.08 55834.4 72584.72
  axis delay site[0].link.forward.delay_s,site[0].link.backward.delay_s = 0 0.025 0.05
  label model_error "model error (%)" = -30 0 30
  plot delay model_error x2
  set duration_s=10

Outputs (run): DIR/study.csv — row, each axis's value, each axis path's value, `rerun` (the exact
rths-numerical command line for that row alone), then for each response (x1..xN, f_<site>...)
<resp>_peak, _reference_peak, _j_peak_pct, _j_rms_pct, _rho, then steps, run_time_s and error
(empty unless the run failed; a failed run never stops the study). DIR/study.json (grid size,
shard, counts, wall time), DIR/study.log. Every override is checked before anything runs.

Plots (with `plot`): the pure simulation of a point is the erroneous model with no network (seed 002
Figs. 9 and 13): the numerical node alone with the Smith predictor's model, f = f_model(x), against
the same monolithic reference. rths-study runs it as the point with every REMOTE site's feedback
lost (site[NAME].link={ backward { loss { probability: 1 } } }, compensation MODIFIED_SMITH),
once per combination of the other axes than the network's (those whose paths all lie in
site[...].link or site[...].compensation), into DIR/pure.csv (the columns of study.csv without
the network's axes, re-run command included). For each plot and combination of the other axes,
DIR holds NAME.dat (the plotted numbers, copied from study.csv and pure.csv), NAME.gp (its gnuplot
script: `gnuplot NAME.gp` in DIR) and NAME.png,
NAME = <RESPONSE>_peak_error_vs_<X>_by_<LINES>[_<AXIS>-<VALUE>...] (VALUE: the label if given);
DIR/study.plot keeps the grid and plot statements for merge. Without gnuplot (Debian: gnuplot-nox)
the .dat and .gp are written, one warning says so and the exit code stays as it is; a plot that an
installed gnuplot fails to draw is an error naming DIR/gnuplot.log, and the exit code is 1. An axis
without `label` shows its values; one whose paths all end in delay_s shows the round trip in ms (the
first site's forward + backward legs).

Exit codes: 0 every row ran (and every plot was drawn); 1 a row failed (its error column says why),
a plot failed (DIR/gnuplot.log says why) or an internal error;
2 bad command line, study file or override (nothing run); 6 interrupted (finished rows written).
)usage");
  return cli;
}

// study.json of a run (results::StudySummary).
rths::results::StudySummary study_summary(const Study& st, const Options& o, std::size_t grid, std::size_t pure_grid,
                                          std::size_t run, std::size_t failed, double wall) {
  rths::results::StudySummary s;
  s.set_study(st.file.string());
  s.set_config(st.config.string());
  s.set_grid_rows(grid);
  s.set_pure_rows(pure_grid);
  s.set_shard(fmt::format("{}/{}", o.shard_k, o.shard_n));
  s.set_rows(run);
  s.set_failed(failed);
  s.set_jobs(static_cast<std::uint32_t>(o.jobs));
  s.set_wall_time_s(wall);
  return s;
}

int run_study(Options& o) {
  Study st = parse_study(o.positional[0]);
  check_plots(st);
  std::vector<std::pair<const Study*, std::size_t>> jobs;  // (study or its pure simulations, row)
  const std::size_t grid = st.rows();
  for (std::size_t r = 0; r < grid; ++r) {
    if (r % o.shard_n == o.shard_k - 1) {
      jobs.emplace_back(&st, r);
    }
  }
  const std::size_t grid_jobs = jobs.size();
  const Checked base = check_study(st, jobs);
  for (auto& p : st.plots) {
    if (p.response.empty()) {
      p.response = base.responses[base.dofs - 1];  // the last DOF: the top floor
    }
    if (std::find(base.responses.begin(), base.responses.end(), p.response) == base.responses.end()) {
      throw BadInput(fmt::format("{}:{}: plot: no response {}; expected one of x1..xN or f_<site>",
                                 st.file.filename().string(), p.line, p.response));
    }
  }
  // The pure simulations, sharded like the grid, when there is something to plot them on.
  const bool pure_runs = !st.plots.empty() && !base.remote_sites.empty();
  const Study pure = pure_study(st, base.remote_sites);
  const std::size_t pure_grid = pure_runs ? pure.rows() : 0;
  for (std::size_t r = 0; r < pure_grid; ++r) {
    if (r % o.shard_n == o.shard_k - 1) {
      jobs.emplace_back(&pure, r);
    }
  }
  (void)check_study(pure, std::vector<std::pair<const Study*, std::size_t>>(
                              jobs.begin() + static_cast<std::ptrdiff_t>(grid_jobs), jobs.end()));

  if (o.out.empty()) {
    o.out = rths::default_run_folder(st.file);
  }
  rths::start_logging(kProgram, o.out, "study.log", o.quiet);
  if (o.jobs == 0) {
    o.jobs = static_cast<int>(std::min<unsigned>(std::max(1U, std::thread::hardware_concurrency()), kMaxJobs));
  }
  spdlog::info("study {}: config {}, {} grid rows, {} pure simulations, shard {}/{}: {} runs on {} threads",
               st.file.string(), st.config.string(), grid, pure_grid, o.shard_k, o.shard_n, jobs.size(), o.jobs);
  const auto& stop = rths::install_stop_signals();
  std::vector<Outcome> outcomes(jobs.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  const auto start = std::chrono::steady_clock::now();
  const auto worker = [&]() {
    for (std::size_t i = next++; i < jobs.size() && !stop.load(); i = next++) {
      Outcome& out = outcomes[i];
      const auto& [study, row] = jobs[i];
      try {
        const rths::LoadedConfig loaded = rths::load_experiment(study->config, study->overrides(row));
        rths::Experiment experiment(loaded);
        const rths::RunReport& report = experiment.run();
        out.report = report;
        if (report.exit_code != rths::kExitCompleted) {
          out.error = report.stop_reason;
        }
      } catch (const std::exception& e) {
        out.error = e.what();
      }
      if (!out.error.empty()) {
        spdlog::error("{}row {}: {}", study->after.empty() ? "" : "pure simulation ", row, out.error);
      }
      out.done = true;
      ++done;
    }
  };
  std::vector<std::thread> pool;
  const unsigned threads =
      std::min<unsigned>(static_cast<unsigned>(o.jobs), static_cast<unsigned>(std::max<std::size_t>(jobs.size(), 1)));
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  const bool bar = !o.quiet && isatty(STDERR_FILENO) != 0;
  const auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (bar && done.load() < jobs.size() && !stop.load()) {
    draw_progress(done.load(), jobs.size(), elapsed());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : pool) {
    t.join();
  }
  const double wall = elapsed();
  if (bar) {
    draw_progress(done.load(), jobs.size(), wall);
    std::fputc('\n', stderr);
  }
  std::string csv = csv_header(st, base.responses) + "\n";
  std::string pure_csv = csv_header(pure, base.responses) + "\n";
  std::size_t failed = 0;
  std::size_t ran = 0;
  std::size_t ran_grid = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!outcomes[i].done) {
      continue;
    }
    ++ran;
    ran_grid += i < grid_jobs ? 1 : 0;
    failed += outcomes[i].error.empty() ? 0 : 1;
    (jobs[i].first == &st ? csv : pure_csv) +=
        csv_row(study_row(*jobs[i].first, jobs[i].second, outcomes[i]), base.responses) + "\n";
  }
  write_file(o.out / "study.csv", csv);
  if (pure_runs) {
    write_file(o.out / "pure.csv", pure_csv);
  }
  rths::write_results_json(o.out / "study.json", study_summary(st, o, grid, pure_grid, ran, failed, wall));
  if (!st.plots.empty()) {
    write_file(o.out / kPlotSpec, plot_spec(st));
  }
  spdlog::info("{} runs, {} failed, in {:.3f} s", ran, failed, wall);
  PlotCount plots;
  if (ran < jobs.size()) {
    spdlog::error("interrupted: {} of {} runs not done", jobs.size() - ran, jobs.size());
    return rths::kExitInterrupted;
  }
  if (o.shard_n == 1 && !st.plots.empty()) {
    plots = write_plots(parse_study(o.out / kPlotSpec, false), o.out);
  } else if (!st.plots.empty()) {
    spdlog::info("plots: after `rths-study merge` of the {} shard folders", o.shard_n);
  }
  if (!o.quiet) {
    fmt::print("rths-study: {} of {} rows run{} ({} failed) in {:.2f} s on {} threads{}\noutput: {}\n", ran_grid, grid,
               pure_grid == 0 ? std::string{} : fmt::format(" and {} pure simulations", ran - ran_grid), failed, wall,
               threads, st.plots.empty() ? std::string{} : plot_text(plots), (o.out / "study.csv").string());
  }
  // A plot the study asked for and gnuplot could not draw fails the study like a failed row does.
  return failed == 0 && plots.failed == 0 ? rths::kExitCompleted : rths::kExitFailure;
}

// ---- merge -----------------------------------------------------------------------------------------

// A shard folder's study.json, if it has one; one that does not parse is bad input.
std::optional<rths::results::StudySummary> shard_summary(const std::filesystem::path& dir) {
  const auto file = dir / "study.json";
  if (!std::filesystem::exists(file)) {
    return std::nullopt;
  }
  try {
    return rths::read_results_json<rths::results::StudySummary>(file);
  } catch (const std::exception& e) {
    throw BadInput(e.what());
  }
}

std::string describe(const std::vector<std::size_t>& rows) {
  std::string s;
  for (std::size_t i = 0; i < rows.size() && i < 20; ++i) {
    s += fmt::format("{}{}", i == 0 ? "" : " ", rows[i]);
  }
  return rows.size() > 20 ? s + fmt::format(" ... ({} in all)", rows.size()) : s;
}

struct Merged {
  std::string csv;
  std::size_t rows = 0;
  std::size_t failed = 0;
};

// One table (study.csv or pure.csv, grid size in the field `grid_key` of study.json, read by grid_of)
// from every folder.
Merged merge_table(const std::vector<std::string>& dirs, const std::string& name, const std::string& grid_key,
                   std::uint64_t (*grid_of)(const rths::results::StudySummary&), const std::string& what) {
  std::string header;
  std::map<std::size_t, std::string> lines;
  std::vector<std::size_t> duplicated;
  std::optional<std::size_t> grid;
  Merged m;
  for (const std::filesystem::path dir : dirs) {
    const auto file = dir / name;
    std::ifstream in(file);
    std::string h;
    if (!in || !std::getline(in, h)) {
      throw BadInput("cannot read " + file.string());
    }
    if (header.empty()) {
      header = h;
    } else if (h != header) {
      throw BadInput(file.string() + ": header differs from " + (std::filesystem::path(dirs[0]) / name).string());
    }
    if (const auto summary = shard_summary(dir)) {
      const std::size_t g = grid_of(*summary);
      if (grid && *grid != g) {
        throw BadInput(fmt::format("{}: {} {} differs from {}", (dir / "study.json").string(), grid_key, g, *grid));
      }
      grid = g;
    }
    int n = 1;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (line.empty()) {
        continue;
      }
      const auto cells = csv_split(line);
      std::size_t row = 0;
      try {
        row = std::stoul(cells[0]);
      } catch (const std::exception&) {
        throw BadInput(fmt::format("{}:{}: no row index", file.string(), n));
      }
      if (!cells.back().empty()) {
        ++m.failed;
      }
      if (!lines.emplace(row, line).second) {
        duplicated.push_back(row);
      }
    }
  }
  if (!duplicated.empty()) {
    std::sort(duplicated.begin(), duplicated.end());
    throw BadInput(what + " in more than one shard: " + describe(duplicated));
  }
  const std::size_t total = grid.value_or(lines.empty() ? 0 : lines.rbegin()->first + 1);
  std::vector<std::size_t> missing;
  for (std::size_t r = 0; r < total; ++r) {
    if (!lines.contains(r)) {
      missing.push_back(r);
    }
  }
  if (!missing.empty()) {
    throw BadInput(fmt::format("{} missing ({} of {}): {}", what, missing.size(), total, describe(missing)));
  }
  if (lines.size() > total) {
    throw BadInput(fmt::format("{} beyond the grid of {}: from {}", what, total, lines.rbegin()->first));
  }
  m.csv = header + "\n";
  for (const auto& [row, line] : lines) {
    m.csv += line + "\n";
  }
  m.rows = lines.size();
  return m;
}

int merge_studies(const Options& o) {
  const Merged grid = merge_table(
      o.positional, "study.csv", "grid_rows", [](const rths::results::StudySummary& s) { return s.grid_rows(); },
      "rows");
  // The plot statements and pure simulations: all shards of one study have them, or none.
  std::optional<std::string> spec;
  for (const std::filesystem::path dir : o.positional) {
    std::ifstream in(dir / kPlotSpec);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::optional<std::string> here = in ? std::optional<std::string>(ss.str()) : std::nullopt;
    if (dir != o.positional[0] && here != spec) {
      throw BadInput(fmt::format("{}: differs from {} (shards of different studies?)", (dir / kPlotSpec).string(),
                                 (std::filesystem::path(o.positional[0]) / kPlotSpec).string()));
    }
    spec = here;
  }
  const bool has_pure = std::filesystem::exists(std::filesystem::path(o.positional[0]) / "pure.csv");
  Merged pure;
  if (has_pure) {
    pure = merge_table(
        o.positional, "pure.csv", "pure_rows", [](const rths::results::StudySummary& s) { return s.pure_rows(); },
        "pure simulation rows");
  }
  std::filesystem::create_directories(o.out);
  rths::start_logging(kProgram, o.out, "merge.log", o.quiet);
  write_file(o.out / "study.csv", grid.csv);
  if (has_pure) {
    write_file(o.out / "pure.csv", pure.csv);
  }
  rths::results::StudySummary merged;
  if (const auto first = shard_summary(o.positional[0])) {
    merged.set_study(first->study());
    merged.set_config(first->config());
  }
  merged.set_grid_rows(grid.rows);
  merged.set_pure_rows(pure.rows);
  merged.set_shard("1/1");
  merged.set_rows(grid.rows + pure.rows);
  merged.set_failed(grid.failed + pure.failed);
  merged.set_merged_from(static_cast<std::uint32_t>(o.positional.size()));
  rths::write_results_json(o.out / "study.json", merged);
  PlotCount plots;
  if (spec) {
    write_file(o.out / kPlotSpec, *spec);
    plots = write_plots(parse_study(o.out / kPlotSpec, false), o.out);
  }
  spdlog::info("merged {} rows and {} pure simulations from {} folders, {} plots", grid.rows, pure.rows,
               o.positional.size(), plots.made);
  if (!o.quiet) {
    fmt::print("rths-study: merged {} rows from {} folders ({} failed){}\noutput: {}\n", grid.rows, o.positional.size(),
               grid.failed + pure.failed,
               spec ? fmt::format(", with {} pure simulations{}", pure.rows, plot_text(plots)) : std::string{},
               (o.out / "study.csv").string());
  }
  return grid.failed + pure.failed == 0 && plots.failed == 0 ? rths::kExitCompleted : rths::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  if (const auto answered = cli.parse(argc, argv)) {
    return *answered;
  }
  o.command = cli.command();
  o.positional = cli.operands();
  try {
    return o.command == "run" ? run_study(o) : merge_studies(o);
  } catch (const BadInput& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return rths::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return rths::kExitFailure;
  }
}
