#include "rths/node_numerical/run_plots.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "results.pb.h"
#include "rths/common/results.hpp"

namespace rths {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxDofPlots = 8;

std::vector<std::string> csv_header(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    throw std::invalid_argument(
        fmt::format("{}: missing or empty; expected a run folder's CSV with its header", file.string()));
  }
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1) {
    names.push_back(line.substr(start, comma - start));
  }
  names.push_back(line.substr(start));
  return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The common lines of a time-history plot.
std::string history_header(const std::string& name, const std::string& title, const std::string& ylabel) {
  return gp_png_header(name) + fmt::format(
                                   "set datafile separator \",\"\n"
                                   "set title {}\n"
                                   "set xlabel \"t (s)\"\n"
                                   "set ylabel {}\n"
                                   "set key top right\n"
                                   "set grid\n",
                                   gp_quote(title), gp_quote(ylabel));
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

// A column's values as gnuplot reads them, times a scale.
std::string col(const std::string& name, double scale = 1.0) {
  return scale == 1.0 ? fmt::format("(column({}))", gp_quote(name))
                      : fmt::format("({:g}*column({}))", scale, gp_quote(name));
}

// A force-displacement loop: the force column (N, drawn in kN) against the displacement column (m,
// drawn in mm).
std::string loop_script(const std::string& name, const std::string& title, const std::string& data,
                        const std::string& displacement, const std::string& displacement_label,
                        const std::string& force, const std::string& force_label, const std::string& key) {
  return gp_png_header(name) + fmt::format(
                                   "set datafile separator \",\"\n"
                                   "set title {}\n"
                                   "set xlabel {}\n"
                                   "set ylabel {}\n"
                                   "set key top left\n"
                                   "set grid\n"
                                   "plot {} using {}:{} with lines title {}\n",
                                   gp_quote(title), gp_quote(displacement_label + " (mm)"),
                                   gp_quote(force_label + " (kN)"), data, col(displacement, 1e3), col(force, 1e-3),
                                   gp_quote(key));
}

void response_plots(const fs::path& run_dir, const std::vector<std::string>& header, Scripts& scripts) {
  // The DOFs: the displacement columns between the ground motion and the velocities.
  std::vector<std::string> dofs;
  for (std::size_t i = 2; i < header.size() && !header[i].starts_with("v_"); ++i) {
    if (header[i].ends_with("_m")) dofs.push_back(header[i].substr(0, header[i].size() - 2));
  }
  std::set<std::string> responses;
  if (fs::exists(run_dir / "summary.json")) {
    results::RunSummary summary;
    read_results_json(run_dir / "summary.json", summary);
    for (const auto& [name, metrics] : summary.responses()) responses.insert(name);
  }
  std::size_t drawn = 0;
  const std::string numerical = gp_quote(fs::absolute(run_dir / "numerical.csv").string());
  const std::string reference = gp_quote(fs::absolute(run_dir / "reference.csv").string());
  const bool with_reference = fs::exists(run_dir / "reference.csv");
  for (const std::string& dof : dofs) {
    if (!responses.empty() ? !responses.contains(dof) : drawn >= kMaxDofPlots) continue;
    ++drawn;
    const std::string name = "response_" + dof;
    std::string text = history_header(name, dof + ": hybrid run and monolithic reference", dof + " (mm)");
    text += fmt::format(R"(plot {} using (column("t_s")):{} with lines lw 1.5 title "hybrid")", numerical,
                        col(dof + "_m", 1e3));
    if (with_reference) {
      text += fmt::format(", \\\n     {} using (column(\"t_s\")):{} with lines dt 2 title \"reference\"", reference,
                          col(dof + "_m", 1e3));
    }
    scripts.add(name, text + "\n");
  }
}

void site_plots(const fs::path& run_dir, const std::vector<std::string>& header, Scripts& scripts) {
  const std::string numerical = gp_quote(fs::absolute(run_dir / "numerical.csv").string());
  for (const std::string& column : header) {
    if (!column.starts_with("u_") || !column.ends_with("_m")) continue;
    const std::string ch = column.substr(2, column.size() - 4);
    const std::string u = "u_" + ch + "_m";
    const std::string xm = "xm_" + ch + "_m";
    if (!has(header, xm)) continue;
    scripts.add("site_" + ch + "_tracking",
                history_header("site_" + ch + "_tracking", ch + ": interface target and measured displacement",
                               "displacement (mm)") +
                    fmt::format("plot {0} using (column(\"t_s\")):{1} with lines lw 1.5 title \"target (u)\", \\\n"
                                "     {0} using (column(\"t_s\")):{2} with lines title \"measured (xm)\"\n",
                                numerical, col(u, 1e3), col(xm, 1e3)));
    scripts.add("site_" + ch + "_error",
                history_header("site_" + ch + "_error", ch + ": tracking error, measured - target", "xm - u (mm)") +
                    fmt::format("plot {} using (column(\"t_s\")):(1e3*(column({})-column({}))) with lines title "
                                "\"xm - u\"\n",
                                numerical, gp_quote(xm), gp_quote(u)));
    if (has(header, "fm_" + ch + "_N")) {
      scripts.add("site_" + ch + "_loop", loop_script("site_" + ch + "_loop", ch + ": force-displacement loop",
                                                      numerical, xm, "measured displacement xm", "fm_" + ch + "_N",
                                                      "measured force fm", "force-displacement"));
    }
    if (has(header, "e_" + ch + "_N")) {
      scripts.add(
          "site_" + ch + "_model_error",
          history_header("site_" + ch + "_model_error", ch + ": Smith predictor's model error (site part 2)", "e (N)") +
              fmt::format("plot {} using (column(\"t_s\")):{} with lines title \"e\"\n", numerical,
                          col("e_" + ch + "_N")));
    }
  }
}

// Each hysteretic spring of the numerical model: its force against its deformation (its loop).
void spring_plots(const fs::path& run_dir, const std::vector<std::string>& header, Scripts& scripts) {
  const std::string numerical = gp_quote(fs::absolute(run_dir / "numerical.csv").string());
  for (const std::string& column : header) {
    if (!column.starts_with("us_") || !column.ends_with("_m")) continue;
    const std::string spring = column.substr(3, column.size() - 5);
    if (!has(header, "fs_" + spring + "_N")) continue;
    scripts.add("spring_" + spring + "_loop",
                loop_script("spring_" + spring + "_loop", spring + ": hysteretic spring of the numerical model",
                            numerical, column, "deformation", "fs_" + spring + "_N", "force", "hybrid run"));
  }
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

}  // namespace

RunPlots plot_run(const fs::path& run_dir, const fs::path& out_dir) {
  const std::vector<std::string> header = csv_header(run_dir / "numerical.csv");
  if (header.size() < 2 || header[0] != "t_s") {
    throw std::invalid_argument(
        fmt::format("{}: its header starts with \"{}\"; expected a run folder's numerical.csv (t_s, ...)",
                    (run_dir / "numerical.csv").string(), header[0]));
  }
  fs::create_directories(out_dir);
  Scripts scripts(out_dir);
  response_plots(run_dir, header, scripts);
  site_plots(run_dir, header, scripts);
  spring_plots(run_dir, header, scripts);
  timing_plots(run_dir, scripts);
  RunPlots plots;
  plots.names = scripts.names();
  plots.count = render_plots(out_dir, plots.names);
  return plots;
}

}  // namespace rths
