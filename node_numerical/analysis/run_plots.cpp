#include "node_numerical/analysis/run_plots.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/config/config.hpp"
#include "common/core/dof_kind.hpp"
#include "common/records/decimation.hpp"
#include "common/records/results.hpp"
#include "experiment.pb.h"
#include "results.pb.h"

namespace rths {
namespace {

namespace fs = std::filesystem;

// A run recording at most this many DOFs gets a figure for each; a larger model its DOFs of interest.
constexpr std::size_t kEveryDofUpTo = 8;
// The picture's size in pixels (gp_png_header): what the histories are decimated to.
constexpr std::size_t kWidthPx = 1000;
constexpr std::size_t kHeightPx = 650;
// The points a loop is drawn through at most (decimate_path): what pngcairo strokes in a fraction of
// a second (a 4000-point self-crossing path about 0.4 s, 16 000 points 3 s, 42 000 points 25 s).
constexpr std::size_t kLoopPoints = 4000;

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1) {
    names.push_back(line.substr(start, comma - start));
  }
  names.push_back(line.substr(start));
  return names;
}

std::vector<std::string> csv_header(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    throw std::invalid_argument(
        fmt::format("{}: missing or empty; expected a run folder's CSV with its header", file.string()));
  }
  return split_commas(line);
}

// The columns `wanted` (header names, unit included) of a run's CSV, read in one pass over its lines:
// the other columns are skipped unparsed, a line cut short by a crash ends the columns there.
std::map<std::string, std::vector<double>> read_columns(const fs::path& file, const std::set<std::string>& wanted) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_commas(line);
  std::vector<std::vector<double>*> at(header.size(), nullptr);  // the column each field goes to
  std::map<std::string, std::vector<double>> columns;
  std::size_t last = 0;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (!wanted.contains(header[c])) continue;
    at[c] = &columns[header[c]];
    last = c;
  }
  if (columns.empty()) return columns;
  std::vector<double> row(last + 1);
  while (std::getline(in, line) && !in.eof()) {  // eof: the last line had no newline, a cut one
    std::size_t field = 0;
    const char* p = line.data();
    const char* const end = p + line.size();
    for (bool more = true; field <= last && more; ++field) {
      const char* comma = std::find(p, end, ',');
      if (at[field] != nullptr) {
        double value = std::nan("");
        if (std::from_chars(p, comma, value).ec != std::errc{}) value = std::nan("");
        row[field] = value;
      }
      more = comma != end;
      p = more ? comma + 1 : end;
    }
    if (field <= last) break;  // a short line
    for (std::size_t c = 0; c <= last; ++c) {
      if (at[c] != nullptr) at[c]->push_back(row[c]);
    }
  }
  return columns;
}

// A column's name without its unit suffix, and the unit: `r1_rad` -> (r1, rad).
std::pair<std::string, std::string> split_unit(const std::string& column) {
  for (const std::string_view unit : {"m_per_s2", "m_per_s", "rad_per_s", "Nm", "N", "rad", "m", "s", "1"}) {
    if (column.size() > unit.size() + 1 && column.ends_with(unit) && column[column.size() - unit.size() - 1] == '_') {
      return {column.substr(0, column.size() - unit.size() - 1), std::string(unit)};
    }
  }
  return {column, ""};
}

// What a value of a column's unit is called in a figure's words.
std::string_view motion_word(const std::string& unit) {
  return unit == "rad" ? "rotation" : "displacement";
}
std::string_view force_word(const std::string& unit) {
  return unit == "Nm" ? "moment" : "force";
}

std::string axis_label(const std::string& what, const std::string& unit, bool kilo_forces = true) {
  return fmt::format("{} ({})", what, display_unit(unit, kilo_forces).label);
}

// A history's values in the unit it is drawn in.
std::vector<double> scaled(const std::vector<double>& values, const std::string& unit, bool kilo_forces = true) {
  const double scale = display_unit(unit, kilo_forces).scale;
  std::vector<double> out(values.size());
  std::transform(values.begin(), values.end(), out.begin(), [scale](double v) { return scale * v; });
  return out;
}

void append_value(std::string& out, double v) {
  if (std::isfinite(v)) {
    fmt::format_to(std::back_inserter(out), "{:.7g}", v);
  } else {
    out += "NaN";
  }
}

// A gnuplot datablock $name of the points `kept` of (x, y).
std::string datablock(const std::string& name, std::span<const double> x, std::span<const double> y,
                      const std::vector<std::size_t>& kept) {
  std::string out = "$" + name + " << EOD\n";
  for (const std::size_t i : kept) {
    append_value(out, x[i]);
    out += ' ';
    append_value(out, y[i]);
    out += '\n';
  }
  return out + "EOD\n";
}

class Scripts {
 public:
  explicit Scripts(fs::path dir) : dir_(std::move(dir)) {}
  void add(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / (name + ".gp")) << "# rths-numerical plot: " << name << ".png (gnuplot " << name
                                         << ".gp in this folder)\n"
                                         << text;
    names_.push_back(name);
  }
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }

 private:
  fs::path dir_;
  std::vector<std::string> names_;
};

// One line of a time history: its values (in the figure's unit) against the record's time.
struct Line {
  const std::vector<double>* t;
  std::vector<double> values;
  std::string title;
  std::string style = "lw 1.5";
};

// A time-history figure: each line decimated to the picture's pixel columns, its data in the script.
void history(Scripts& scripts, const std::string& name, const std::string& title, const std::string& ylabel,
             const std::vector<Line>& lines) {
  std::string text = gp_png_header(name) + fmt::format(
                                               "set title {}\n"
                                               "set xlabel \"t (s)\"\n"
                                               "set ylabel {}\n"
                                               "set key top right\n"
                                               "set grid\n",
                                               gp_quote(title), gp_quote(ylabel));
  std::string plot = "plot ";
  for (std::size_t l = 0; l < lines.size(); ++l) {
    const Line& line = lines[l];
    const std::size_t n = std::min(line.t->size(), line.values.size());
    const std::span<const double> values(line.values.data(), n);
    const std::string block = fmt::format("line{}", l + 1);
    text += datablock(block, std::span<const double>(line.t->data(), n), values, decimate_min_max(values, kWidthPx));
    plot += fmt::format("{}${} using 1:2 with lines {} title {}", l == 0 ? "" : ", \\\n     ", block, line.style,
                        gp_quote(line.title));
  }
  scripts.add(name, text + plot + "\n");
}

// A force-displacement loop: y against x (both in the figure's units), decimated to the picture.
void loop(Scripts& scripts, const std::string& name, const std::string& title, const std::string& xlabel,
          const std::string& ylabel, const std::vector<double>& x, const std::vector<double>& y,
          const std::string& key) {
  const std::size_t n = std::min(x.size(), y.size());
  const std::span<const double> xs(x.data(), n);
  const std::span<const double> ys(y.data(), n);
  scripts.add(name, gp_png_header(name) +
                        fmt::format("set title {}\n"
                                    "set xlabel {}\n"
                                    "set ylabel {}\n"
                                    "set key top left\n"
                                    "set grid\n",
                                    gp_quote(title), gp_quote(xlabel), gp_quote(ylabel)) +
                        datablock("loop", xs, ys, decimate_path(xs, ys, kWidthPx, kHeightPx, kLoopPoints)) +
                        fmt::format("plot $loop using 1:2 with lines title {}\n", gp_quote(key)));
}

// A recorded DOF: its name, its column in numerical.csv and that column's unit (m or rad).
struct DofColumn {
  std::string name;
  std::string column;
  std::string unit;
};

// The recorded DOFs of numerical.csv: its columns from the third up to the velocities, each DOF's
// velocity being v_ + its column + _per_s (x1_m: v_x1_m_per_s; r1_rad: v_r1_rad_per_s).
std::vector<DofColumn> dof_columns(const std::vector<std::string>& header) {
  std::size_t n = 0;
  while (2 + n < header.size() && header[2 + n] != "v_" + header[2] + "_per_s") ++n;
  if (2 + 2 * n > header.size()) return {};  // no velocities: not a numerical node's record
  std::vector<DofColumn> dofs;
  for (std::size_t d = 0; d < n; ++d) {
    auto [name, unit] = split_unit(header[2 + d]);
    dofs.push_back({std::move(name), header[2 + d], std::move(unit)});
  }
  return dofs;
}

// The run's config (config.textproto) as it ran, parsed without validation (it is only read for the
// DOFs of interest); nullopt, with a warning, when it is missing or cannot be read.
std::optional<config::Experiment> run_config(const fs::path& run_dir) {
  const fs::path file = run_dir / "config.textproto";
  if (!fs::exists(file)) return std::nullopt;
  try {
    config::Experiment experiment;
    parse_text_message(read_text_file(file), file.string(), experiment);
    return experiment;
  } catch (const std::exception& e) {
    spdlog::warn("plots: {}: {}; drawing the DOFs of interest the records show", file.string(), e.what());
    return std::nullopt;
  }
}

// The DOFs (names) a figure is drawn for: every recorded DOF of a small model; for a larger one the
// DOFs of interest (each site's interface DOFs, each multi-axial site's evaluation DOFs, the roof:
// the recorded translation with the largest peak) and those asked for.
std::vector<DofColumn> dofs_to_draw(const fs::path& run_dir, const std::optional<config::Experiment>& experiment,
                                    const std::vector<DofColumn>& recorded, const PlotOptions& options) {
  std::vector<std::string> names;
  std::map<std::string, std::string> unit;
  for (const DofColumn& d : recorded) {
    names.push_back(d.name);
    unit[d.name] = d.unit;
  }
  std::set<std::string> chosen;
  for (const std::string& asked : options.dofs) {
    if (asked != "all" && !unit.contains(asked)) {
      throw std::invalid_argument(
          fmt::format("--dof {}: the run recorded no DOF of that name; expected one of its {} recorded DOFs "
                      "(numerical.csv: {}{}) or all",
                      asked, names.size(),
                      fmt::join(names.begin(), names.begin() + std::min<std::ptrdiff_t>(4, std::ssize(names)), ", "),
                      names.size() > 4 ? ", ..." : ""));
    }
    chosen.insert(asked);
  }
  const bool all = chosen.contains("all");
  if (names.size() <= kEveryDofUpTo || all) return recorded;
  if (experiment) {
    const std::vector<std::string> all_names = dof_names(experiment->structure());
    for (const config::Site& site : experiment->site()) {
      const auto channels = static_cast<std::size_t>(site.channel_size());
      for (std::size_t i = 0; channels > 0 && i < static_cast<std::size_t>(site.influence_size()); ++i) {
        if (site.influence(static_cast<int>(i)) != 0.0 && i / channels < all_names.size()) {
          chosen.insert(all_names[i / channels]);
        }
      }
      for (const std::string& dof : site.evaluation_dof()) chosen.insert(dof);
    }
  }
  if (fs::exists(run_dir / "summary.json")) {
    const auto summary = read_results_json<results::RunSummary>(run_dir / "summary.json");
    const std::string* roof = nullptr;
    double highest = -1.0;
    for (const std::string& name : names) {
      const auto m = summary.responses().find(name);
      if (unit[name] != "m" || m == summary.responses().end() || !(m->second.peak() > highest)) continue;
      highest = m->second.peak();
      roof = &name;
    }
    if (roof != nullptr) chosen.insert(*roof);
  }
  std::vector<DofColumn> drawn;
  std::copy_if(recorded.begin(), recorded.end(), std::back_inserter(drawn),
               [&chosen](const DofColumn& d) { return chosen.contains(d.name); });
  return drawn;
}

bool all_zero(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0; });
}

void timing_plots(const fs::path& run_dir, Scripts& scripts) {
  const fs::path file = run_dir / "timing.csv";
  if (!fs::exists(file)) return;  // a virtual-time run has no wall-clock timing
  std::set<std::string> histograms;
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    histograms.insert(line.substr(0, line.find(',')));
  }
  const std::string data = gp_quote(fs::absolute(file).string());
  for (const std::string& h : histograms) {
    const bool round_trip = h.starts_with("round_trip_");
    const std::string what = round_trip        ? "round trip to site " + h.substr(11)
                             : h == "lateness" ? "step loop lateness (wake-up after the deadline)"
                                               : "step compute time";
    scripts.add(
        h, gp_png_header(h) + fmt::format("set datafile separator \",\"\n"
                                          "set title {}\n"
                                          "set xlabel {}\n"
                                          "set ylabel \"steps\"\n"
                                          "set logscale y\n"
                                          "set yrange [0.8:*]\n"  // a bin of one step stays visible
                                          "set logscale x\n"
                                          "set key top right\n"
                                          "set grid\n"
                                          "set style fill solid 0.6\n"
                                          "plot {} using (stringcolumn(1) eq {} ? (column(2)+column(3))/2 : NaN):4:"
                                          "(column(3)-column(2)) with boxes title {}\n",
                                          gp_quote(what), gp_quote(round_trip ? "round trip (us)" : "time (us)"), data,
                                          gp_quote(h), gp_quote(h)));
  }
}

// A site channel's columns in numerical.csv: u_<ch>_<unit> with its xm_, fm_ and e_.
struct ChannelColumns {
  std::string site;
  std::string label;   // <site>, or <site>_<n> for a site of several channels
  std::string motion;  // m or rad
  std::string force;   // N or Nm
  [[nodiscard]] std::string u() const { return "u_" + label + "_" + motion; }
  [[nodiscard]] std::string xm() const { return "xm_" + label + "_" + motion; }
  [[nodiscard]] std::string fm() const { return "fm_" + label + "_" + force; }
  [[nodiscard]] std::string e() const { return "e_" + label + "_" + force; }
};

}  // namespace

RunPlots plot_run(const fs::path& run_dir, const fs::path& out_dir, const PlotOptions& options) {
  const fs::path numerical_csv = run_dir / "numerical.csv";
  const std::vector<std::string> header = csv_header(numerical_csv);
  if (header.size() < 2 || header[0] != "t_s") {
    throw std::invalid_argument(
        fmt::format("{}: its header starts with \"{}\"; expected a run folder's numerical.csv (t_s, ...)",
                    numerical_csv.string(), header[0]));
  }
  const std::set<std::string> columns(header.begin(), header.end());
  const auto has = [&columns](const std::string& c) { return columns.contains(c); };
  const std::vector<DofColumn> recorded = dof_columns(header);
  const std::optional<config::Experiment> experiment = run_config(run_dir);
  const std::vector<DofColumn> dofs = dofs_to_draw(run_dir, experiment, recorded, options);
  // The sites whose Smith predictor holds a model error: the remote ones (without the config: those
  // whose model error is not all 0).
  std::optional<std::set<std::string>> remote;
  if (experiment) {
    remote.emplace();
    for (const config::Site& site : experiment->site()) {
      if (site.placement() == config::REMOTE) remote->insert(site.name());
    }
  }
  // The site of a channel's label (channel_label: the site's name, with _<n> when it has several).
  const auto site_of = [&experiment](const std::string& label) {
    for (const config::Site& site : experiment ? experiment->site() : decltype(experiment->site()){}) {
      if (label == site.name() ||
          (site.channel_size() > 1 && label.starts_with(site.name() + "_") &&
           label.find_first_not_of("0123456789", site.name().size() + 1) == std::string::npos)) {
        return site.name();
      }
    }
    return label;
  };

  // What the figures draw, so that each CSV is read once.
  std::vector<ChannelColumns> channels;
  std::vector<std::string> actuators;                        // <site>_a<i>
  std::vector<std::pair<std::string, std::string>> springs;  // us_ and fs_ columns
  for (std::size_t c = 2 + 2 * recorded.size(); c < header.size(); ++c) {
    const auto [name, unit] = split_unit(header[c]);
    if (name.starts_with("u_") && (unit == "m" || unit == "rad")) {
      ChannelColumns ch{site_of(name.substr(2)), name.substr(2), unit, unit == "rad" ? "Nm" : "N"};
      if (has(ch.xm())) channels.push_back(ch);
    } else if (name.starts_with("st_") && unit == "m" && has("sm_" + name.substr(3) + "_m")) {
      actuators.push_back(name.substr(3));
    } else if (name.starts_with("us_")) {
      const std::string force = "fs_" + name.substr(3) + "_" + (unit == "rad" ? "Nm" : "N");
      if (has(force)) springs.emplace_back(header[c], force);
    }
  }
  std::set<std::string> wanted{"t_s"};
  for (const DofColumn& dof : dofs) wanted.insert(dof.column);
  std::set<std::string> reference_wanted = wanted;
  for (const ChannelColumns& ch : channels) {
    wanted.insert({ch.u(), ch.xm()});
    if (has(ch.fm())) wanted.insert(ch.fm());
    if (has(ch.e())) wanted.insert(ch.e());
  }
  for (const std::string& a : actuators) {
    for (const char* kind : {"st_", "sc_", "sm_"}) wanted.insert(kind + a + "_m");
  }
  for (const auto& [deformation, force] : springs) wanted.insert({deformation, force});
  const auto run = read_columns(numerical_csv, wanted);
  const fs::path reference_csv = run_dir / "reference.csv";
  const auto reference = fs::exists(reference_csv) ? read_columns(reference_csv, reference_wanted)
                                                   : std::map<std::string, std::vector<double>>{};
  const auto column = [&run](const std::string& name) -> const std::vector<double>& { return run.at(name); };
  const std::vector<double>& t = column("t_s");

  fs::create_directories(out_dir);
  Scripts scripts(out_dir);
  for (const DofColumn& dof : dofs) {
    std::vector<Line> lines{{&t, scaled(column(dof.column), dof.unit), "hybrid"}};
    if (reference.contains(dof.column)) {
      lines.push_back({&reference.at("t_s"), scaled(reference.at(dof.column), dof.unit), "reference", "dt 2"});
    }
    history(scripts, "response_" + dof.name, dof.name + ": hybrid run and monolithic reference",
            axis_label(dof.name, dof.unit), lines);
  }
  for (const ChannelColumns& ch : channels) {
    const std::string motion(motion_word(ch.motion));
    const std::vector<double> u = scaled(column(ch.u()), ch.motion);
    const std::vector<double> xm = scaled(column(ch.xm()), ch.motion);
    history(scripts, "site_" + ch.label + "_tracking", ch.label + ": interface target and measured " + motion,
            axis_label(motion, ch.motion), {{&t, u, "target (u)"}, {&t, xm, "measured (xm)", "lw 1"}});
    std::vector<double> error(std::min(u.size(), xm.size()));
    for (std::size_t i = 0; i < error.size(); ++i) error[i] = xm[i] - u[i];
    history(scripts, "site_" + ch.label + "_error", ch.label + ": tracking error, measured - target",
            axis_label("xm - u", ch.motion), {{&t, error, "xm - u", "lw 1"}});
    if (has(ch.fm())) {
      const std::string force(force_word(ch.force));
      loop(scripts, "site_" + ch.label + "_loop", fmt::format("{}: {}-{} loop", ch.label, force, motion),
           axis_label(fmt::format("measured {} xm", motion), ch.motion),
           axis_label(fmt::format("measured {} fm", force), ch.force), xm, scaled(column(ch.fm()), ch.force),
           fmt::format("{}-{}", force, motion));
    }
    // The Smith predictor's model error: a remote site's (a local site holds none: all 0).
    if (has(ch.e()) && (remote ? remote->contains(ch.site) : !all_zero(column(ch.e())))) {
      history(scripts, "site_" + ch.label + "_model_error", ch.label + ": Smith predictor's model error (site part 2)",
              axis_label("e", ch.force, false), {{&t, scaled(column(ch.e()), ch.force, false), "e", "lw 1"}});
    }
  }
  for (const std::string& a : actuators) {
    const std::vector<double> target = scaled(column("st_" + a + "_m"), "m");
    const std::vector<double> measured = scaled(column("sm_" + a + "_m"), "m");
    history(scripts, "site_" + a + "_stroke", a + ": actuator stroke, target, command and measured",
            axis_label("stroke", "m"),
            {{&t, scaled(column("sc_" + a + "_m"), "m"), "command (sc)", "lw 1"},
             {&t, measured, "measured (sm)", "lw 1"},
             {&t, target, "target (st)"}});
    std::vector<double> error(std::min(target.size(), measured.size()));
    for (std::size_t i = 0; i < error.size(); ++i) error[i] = measured[i] - target[i];
    history(scripts, "site_" + a + "_stroke_error", a + ": stroke tracking error, measured - target",
            axis_label("sm - st", "m"), {{&t, error, "sm - st", "lw 1"}});
  }
  for (const auto& [deformation, force] : springs) {
    const auto [name, unit] = split_unit(deformation);
    const std::string spring = name.substr(3);
    const std::string force_unit = split_unit(force).second;
    loop(scripts, "spring_" + spring + "_loop", spring + ": hysteretic spring of the numerical model",
         axis_label("deformation", unit), axis_label(std::string(force_word(force_unit)), force_unit),
         scaled(column(deformation), unit), scaled(column(force), force_unit), "hybrid run");
  }
  timing_plots(run_dir, scripts);
  RunPlots plots;
  plots.names = scripts.names();
  plots.count = render_plots(out_dir, plots.names);
  return plots;
}

}  // namespace rths
