// rths-study: parameter studies in virtual time. A study file names an experiment config and axes of
// override values; every point of their grid runs in process on a pool of threads and lands as one
// row of study.csv, with the command line that re-runs it alone. Kept in one file: parse, run, write.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
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

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "rths/common/command_line.hpp"
#include "rths/common/config.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/node_numerical/experiment.hpp"

namespace {

constexpr const char* kUsage = R"(rths-study — parameter studies over rths experiments in virtual time

Usage:
  rths-study run STUDY [--out DIR] [--jobs N] [--shard K/N] [--quiet]
  rths-study merge DIR... --out DIR
  rths-study --help | --version

Commands:
  run     Run every point of STUDY's grid in virtual time (as `rths-numerical run`), in process on
          --jobs threads, and write one row per run to DIR/study.csv.
  merge   Concatenate the study.csv of shard folders (same header) into DIR/study.csv, sorted by
          row, checking that no row is missing or duplicated.

Options:
  --out DIR      Output folder (created). Default for run: runs/<study name>-<date>-<time>
  --jobs N       Runs at a time (default: the hardware's threads).
  --shard K/N    Run only the rows with row % N == K-1 (1 <= K <= N), e.g. one shard per host;
                 merge the shard folders afterwards.
  --quiet        No progress bar and no summary; only errors.
  -h, --help     This text.
  --version      Program version.

STUDY file (one statement a line; '#' starts a comment; relative paths from the study file):
  config FILE                          the experiment (protobuf text, as rths-numerical takes)
  axis NAME PATH[,PATH...] = V1 V2 ... one axis of the grid: each value is an override value
                                       (as --set PATH=V); with several paths a value sets every
                                       path, or is a ':'-separated tuple with one element per path
  set PATH=VALUE                       a fixed override for every run (repeatable)
The grid is the Cartesian product of the axes, the first axis slowest; row = its index from 0.
Each run applies the `set` overrides in order, then each axis's paths in order. Values hold no
spaces. Example:
  config ../seed002/spring.textproto
  axis error site[0].channel[0].prediction.spring.stiffness_n_per_m = 39084.08 55834.4 72584.72
  axis delay site[0].link.forward.delay_s,site[0].link.backward.delay_s = 0 0.025 0.05
  set duration_s=10

Outputs (run): DIR/study.csv — row, each axis's value, each axis path's value, `rerun` (the exact
rths-numerical command line for that row alone), then for each response (x1..xN, f_<site>...)
<resp>_peak, _reference_peak, _j_peak_pct, _j_rms_pct, _rho, then steps, run_time_s and error
(empty unless the run failed; a failed run never stops the study). DIR/study.json (grid size,
shard, counts, wall time), DIR/study.log. Every override is checked before anything runs.

Exit codes: 0 every row ran; 1 a row failed (its error column says why) or an internal error;
2 bad command line, study file or override (nothing run); 6 interrupted (finished rows written).
)";

constexpr const char* kProgram = "rths-study";

class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Axis {
  std::string name;
  std::vector<std::string> paths;
  std::vector<std::string> tokens;               // as written
  std::vector<std::vector<std::string>> values;  // [value][path]
  int line = 0;
};

struct Study {
  std::filesystem::path file;
  std::filesystem::path config;  // absolute
  std::vector<std::string> sets;
  std::vector<Axis> axes;

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
  [[nodiscard]] std::vector<std::string> overrides(std::size_t row) const {
    std::vector<std::string> out = sets;
    const auto idx = point(row);
    for (std::size_t a = 0; a < axes.size(); ++a) {
      for (std::size_t p = 0; p < axes[a].paths.size(); ++p) {
        out.push_back(axes[a].paths[p] + "=" + axes[a].values[idx[a]][p]);
      }
    }
    return out;
  }
};

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

// '#' at the start of a line or after a blank starts a comment.
std::string strip_comment(const std::string& line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

Study parse_study(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw BadInput(fmt::format("{}: cannot read the study file", file.string()));
  }
  Study st;
  st.file = file;
  const std::string src = file.filename().string();
  std::set<std::string> axis_names;
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
    } else if (keyword == "axis") {
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
      if (!axis_names.insert(ax.name).second) {
        throw BadInput(where + "axis " + ax.name + " is named twice");
      }
      if (ax.name == "row" || ax.name == "rerun" || ax.name == "steps" || ax.name == "run_time_s" ||
          ax.name == "error") {
        throw BadInput(where + "axis " + ax.name + ": the name is a column of study.csv; choose another");
      }
      for (const auto& p : ax.paths) {
        if (p.empty() || !axis_paths.insert(p).second) {
          throw BadInput(fmt::format("{}axis {}: path `{}` is empty or on another axis too", where, ax.name, p));
        }
      }
      if (ax.tokens.empty()) {
        throw BadInput(where + "axis " + ax.name + " has no values");
      }
      for (const auto& t : ax.tokens) {
        auto parts = ax.paths.size() > 1 && t.find(':') != std::string::npos
                         ? split(t, ':')
                         : std::vector<std::string>(ax.paths.size(), t);
        if (parts.size() != ax.paths.size()) {
          throw BadInput(fmt::format("{}axis {}: value `{}` has {} elements, the axis has {} paths", where, ax.name, t,
                                     parts.size(), ax.paths.size()));
        }
        ax.values.push_back(std::move(parts));
      }
      st.axes.push_back(std::move(ax));
    } else {
      throw BadInput(fmt::format("{}unknown statement `{}`; expected config, axis or set", where, keyword));
    }
  }
  if (st.config.empty()) {
    throw BadInput(src + ": no `config FILE` line");
  }
  return st;
}

// Every override on its own against the base config (so an error names the axis and its line),
// then every row's whole set through the loader's validation. Returns the response names.
std::vector<std::string> check_study(const Study& st, const std::vector<std::size_t>& rows) {
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
  for (const std::size_t r : rows) {
    try {
      (void)rths::load_experiment(st.config, st.overrides(r));
    } catch (const rths::ConfigError& e) {
      throw BadInput(fmt::format("{}: row {}: {}", src, r, e.what()));
    }
  }
  // The responses of Experiment::evaluate: x1..xN (or dof_name), then f_<site>[_<channel>].
  const auto& s = base.experiment.structure();
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < s.dofs(); ++i) {
    names.push_back(static_cast<int>(i) < s.dof_name_size() ? s.dof_name(static_cast<int>(i))
                                                            : fmt::format("x{}", i + 1));
  }
  for (const auto& site : base.experiment.site()) {
    for (int ch = 0; ch < site.channel_size(); ++ch) {
      names.push_back("f_" + (site.channel_size() == 1 ? site.name() : fmt::format("{}_{}", site.name(), ch + 1)));
    }
  }
  return names;
}

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

std::string csv_row(const Study& st, std::size_t row, const std::vector<std::string>& responses, const Outcome& o) {
  std::vector<std::string> cells{std::to_string(row)};
  const auto idx = st.point(row);
  for (std::size_t a = 0; a < st.axes.size(); ++a) {
    cells.push_back(st.axes[a].tokens[idx[a]]);
  }
  for (std::size_t a = 0; a < st.axes.size(); ++a) {
    for (const auto& v : st.axes[a].values[idx[a]]) {
      cells.push_back(v);
    }
  }
  std::string rerun = "rths-numerical run " + shell_quote(st.config.string());
  for (const auto& ov : st.overrides(row)) {
    rerun += " --set " + shell_quote(ov);
  }
  cells.push_back(rerun);
  for (const auto& name : responses) {
    for (std::size_t m = 0; m < kMetrics.size(); ++m) {
      std::string v;
      if (o.report) {
        for (const auto& [n, r] : o.report->responses) {
          if (n == name) {
            const double x[] = {r.peak, r.reference_peak, r.j_peak_pct, r.j_rms_pct, r.rho};
            v = fmt::format("{}", x[m]);
          }
        }
      }
      cells.push_back(v);
    }
  }
  cells.push_back(o.report ? std::to_string(o.report->steps) : std::string{});
  cells.push_back(o.report ? fmt::format("{}", o.report->run_time_s) : std::string{});
  cells.push_back(o.error);
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    line += (i == 0 ? "" : ",") + csv_cell(cells[i]);
  }
  return line;
}

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
  unsigned jobs = 0;
  std::size_t shard_k = 1;
  std::size_t shard_n = 1;
  bool quiet = false;
};

std::size_t parse_count(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || s[0] == '-' || v == 0) {
    throw BadInput(what + ": expected a positive whole number, found `" + s + "`");
  }
  return v;
}

Options parse_options(int argc, char** argv) {
  rths::CommandLine cl;
  try {
    cl = rths::parse_command_line(argc, argv, {"jobs", "shard"}, {}, std::numeric_limits<std::size_t>::max());
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  if (!cl.overrides.empty()) {
    throw BadInput("--set belongs in the study file (`set PATH=VALUE`), not on the command line");
  }
  Options o;
  o.command = cl.command;
  o.positional = cl.positionals;
  o.out = cl.out;
  o.quiet = cl.quiet;
  if (cl.has("jobs")) {
    o.jobs = static_cast<unsigned>(parse_count(cl.option("jobs"), "--jobs"));
  }
  if (cl.has("shard")) {
    const std::string v = cl.option("shard");
    const auto slash = v.find('/');
    if (slash == std::string::npos) {
      throw BadInput("--shard: expected K/N, found `" + v + "`");
    }
    o.shard_k = parse_count(v.substr(0, slash), "--shard K");
    o.shard_n = parse_count(v.substr(slash + 1), "--shard N");
    if (o.shard_k > o.shard_n) {
      throw BadInput("--shard: K must be at most N, found `" + v + "`");
    }
  }
  if (o.command != "run" && o.command != "merge") {
    throw BadInput(o.command.empty() ? "missing command (see --help)"
                                     : "unknown command " + o.command + " (see --help)");
  }
  if (o.command == "run" && o.positional.size() != 1) {
    throw BadInput("run needs one STUDY file (see --help)");
  }
  if (o.command == "merge" && (o.positional.empty() || o.out.empty())) {
    throw BadInput("merge needs shard folders and --out DIR (see --help)");
  }
  return o;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  if (!f.flush()) {
    throw std::runtime_error("cannot write " + p.string());
  }
}

std::string meta_json(const Study& st, const Options& o, std::size_t grid, std::size_t run, std::size_t failed,
                      double wall) {
  return fmt::format(
      "{{\n  \"study\": \"{}\",\n  \"config\": \"{}\",\n  \"grid_rows\": {},\n  \"shard\": \"{}/{}\",\n  \"rows\": "
      "{},\n"
      "  \"failed\": {},\n  \"jobs\": {},\n  \"wall_time_s\": {}\n}}\n",
      st.file.string(), st.config.string(), grid, o.shard_k, o.shard_n, run, failed, o.jobs, wall);
}

int run_study(Options& o) {
  const Study st = parse_study(o.positional[0]);
  const std::size_t grid = st.rows();
  std::vector<std::size_t> rows;
  for (std::size_t r = 0; r < grid; ++r) {
    if (r % o.shard_n == o.shard_k - 1) {
      rows.push_back(r);
    }
  }
  const auto responses = check_study(st, rows);
  if (o.out.empty()) {
    o.out = rths::default_run_folder(st.file);
  }
  rths::start_logging(kProgram, o.out, "study.log", o.quiet);
  if (o.jobs == 0) {
    o.jobs = std::max(1U, std::thread::hardware_concurrency());
  }
  spdlog::info("study {}: config {}, {} grid rows, shard {}/{}: {} rows on {} threads", st.file.string(),
               st.config.string(), grid, o.shard_k, o.shard_n, rows.size(), o.jobs);
  const auto& stop = rths::install_stop_signals();
  std::vector<Outcome> outcomes(rows.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  const auto start = std::chrono::steady_clock::now();
  const auto worker = [&]() {
    for (std::size_t i = next++; i < rows.size() && !stop.load(); i = next++) {
      Outcome& out = outcomes[i];
      try {
        const rths::LoadedConfig loaded = rths::load_experiment(st.config, st.overrides(rows[i]));
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
        spdlog::error("row {}: {}", rows[i], out.error);
      }
      out.done = true;
      ++done;
    }
  };
  std::vector<std::thread> pool;
  const unsigned threads = std::min<unsigned>(o.jobs, static_cast<unsigned>(std::max<std::size_t>(rows.size(), 1)));
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  const bool bar = !o.quiet && isatty(STDERR_FILENO) != 0;
  const auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (bar && done.load() < rows.size() && !stop.load()) {
    draw_progress(done.load(), rows.size(), elapsed());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : pool) {
    t.join();
  }
  const double wall = elapsed();
  if (bar) {
    draw_progress(done.load(), rows.size(), wall);
    std::fputc('\n', stderr);
  }
  std::string csv = csv_header(st, responses) + "\n";
  std::size_t failed = 0;
  std::size_t ran = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!outcomes[i].done) {
      continue;
    }
    ++ran;
    failed += outcomes[i].error.empty() ? 0 : 1;
    csv += csv_row(st, rows[i], responses, outcomes[i]) + "\n";
  }
  write_file(o.out / "study.csv", csv);
  write_file(o.out / "study.json", meta_json(st, o, grid, ran, failed, wall));
  spdlog::info("{} rows run, {} failed, in {:.3f} s", ran, failed, wall);
  if (!o.quiet) {
    fmt::print("rths-study: {} of {} rows run ({} failed) in {:.2f} s on {} threads\noutput: {}\n", ran, grid, failed,
               wall, threads, (o.out / "study.csv").string());
  }
  if (ran < rows.size()) {
    spdlog::error("interrupted: {} of {} rows not run", rows.size() - ran, rows.size());
    return rths::kExitInterrupted;
  }
  return failed == 0 ? rths::kExitCompleted : rths::kExitFailure;
}

// The number after "key": in a study.json, if there.
std::optional<std::size_t> meta_number(const std::filesystem::path& file, const std::string& key) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const auto at = text.find("\"" + key + "\": ");
  if (at == std::string::npos) {
    return std::nullopt;
  }
  return std::stoul(text.substr(at + key.size() + 4));
}

std::string describe(const std::vector<std::size_t>& rows) {
  std::string s;
  for (std::size_t i = 0; i < rows.size() && i < 20; ++i) {
    s += fmt::format("{}{}", i == 0 ? "" : " ", rows[i]);
  }
  return rows.size() > 20 ? s + fmt::format(" ... ({} in all)", rows.size()) : s;
}

int merge_studies(const Options& o) {
  std::string header;
  std::map<std::size_t, std::string> lines;
  std::vector<std::size_t> duplicated;
  std::optional<std::size_t> grid;
  std::size_t failed = 0;
  for (const std::filesystem::path dir : o.positional) {
    const auto file = dir / "study.csv";
    std::ifstream in(file);
    std::string h;
    if (!in || !std::getline(in, h)) {
      throw BadInput("cannot read " + file.string());
    }
    if (header.empty()) {
      header = h;
    } else if (h != header) {
      throw BadInput(file.string() + ": header differs from " +
                     (std::filesystem::path(o.positional[0]) / "study.csv").string());
    }
    if (const auto g = meta_number(dir / "study.json", "grid_rows")) {
      if (grid && *grid != *g) {
        throw BadInput(fmt::format("{}: grid_rows {} differs from {}", (dir / "study.json").string(), *g, *grid));
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
        ++failed;
      }
      if (!lines.emplace(row, line).second) {
        duplicated.push_back(row);
      }
    }
  }
  if (!duplicated.empty()) {
    std::sort(duplicated.begin(), duplicated.end());
    throw BadInput("rows in more than one shard: " + describe(duplicated));
  }
  const std::size_t total = grid.value_or(lines.empty() ? 0 : lines.rbegin()->first + 1);
  std::vector<std::size_t> missing;
  for (std::size_t r = 0; r < total; ++r) {
    if (!lines.contains(r)) {
      missing.push_back(r);
    }
  }
  if (!missing.empty()) {
    throw BadInput(fmt::format("rows missing ({} of {}): {}", missing.size(), total, describe(missing)));
  }
  if (lines.size() > total) {
    throw BadInput(fmt::format("rows beyond the grid of {}: from {}", total, lines.rbegin()->first));
  }
  std::filesystem::create_directories(o.out);
  std::string csv = header + "\n";
  for (const auto& [row, line] : lines) {
    csv += line + "\n";
  }
  write_file(o.out / "study.csv", csv);
  write_file(o.out / "study.json", fmt::format("{{\n  \"grid_rows\": {},\n  \"shard\": \"1/1\",\n  \"rows\": {},\n  "
                                               "\"failed\": {},\n  \"merged_from\": {}\n}}\n",
                                               total, lines.size(), failed, o.positional.size()));
  if (!o.quiet) {
    fmt::print("rths-study: merged {} rows from {} folders ({} failed)\noutput: {}\n", lines.size(),
               o.positional.size(), failed, (o.out / "study.csv").string());
  }
  return failed == 0 ? rths::kExitCompleted : rths::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  if (rths::answered_help_or_version(argc, argv, kUsage, "rths-study 0.1.0")) {
    return rths::kExitCompleted;
  }
  try {
    Options o = parse_options(argc, argv);
    return o.command == "run" ? run_study(o) : merge_studies(o);
  } catch (const BadInput& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return rths::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return rths::kExitFailure;
  }
}
