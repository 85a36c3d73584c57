#include "node_numerical/study/plots.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/core/child_process.hpp"
#include "common/records/gnuplot.hpp"
#include "node_numerical/study/bad_input.hpp"

namespace rths::study {

namespace {

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
    return std::nullopt;  // not a number (std::stod's invalid_argument, out_of_range)
  }
  return std::nullopt;
}

std::string short_number(double v) {
  return fmt::format("{:.10g}", v);
}

// The index of an axis a plot names, which check_plots has made sure exists.
std::size_t checked_axis(const StudyFile& study, const std::string& name) {
  const auto index = study.grid.axis_index(name);
  if (!index) throw std::logic_error(fmt::format("plot axis \"{}\" is not an axis of the study", name));
  return *index;
}

}  // namespace

AxisView axis_view(const StudyFile& study, const Axis& axis) {
  AxisView v;
  if (const auto it = study.labels.find(axis.name); it != study.labels.end()) {
    v.title = it->second.title;
    v.text = it->second.values;
  } else {
    // Link delays: the round trip of the first site named (its forward + backward legs), in ms.
    std::optional<std::size_t> fwd;
    std::optional<std::size_t> bwd;
    for (std::size_t p = 0; p < axis.paths.size(); ++p) {
      const auto& path = axis.paths[p];
      const auto site = path.substr(0, path.find(".link"));
      if (path == site + ".link.forward.delay_s" && !fwd && (!bwd || axis.paths[*bwd].starts_with(site + "."))) {
        fwd = p;
      } else if (path == site + ".link.backward.delay_s" && !bwd &&
                 (!fwd || axis.paths[*fwd].starts_with(site + "."))) {
        bwd = p;
      }
    }
    const bool delays = fwd && bwd && std::all_of(axis.values.begin(), axis.values.end(), [&](const auto& val) {
                          return number(val[*fwd]) && number(val[*bwd]);
                        });
    if (fwd && bwd && delays) {
      v.title = "round trip (ms)";
      for (const auto& val : axis.values) {
        // Numbers, as delays says.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        v.text.push_back(short_number(1e3 * (number(val[*fwd]).value_or(nan) + number(val[*bwd]).value_or(nan))));
      }
    } else {
      v.title = axis.name;
      v.text = axis.shown;
    }
  }
  for (const auto& t : v.text) {
    v.num.push_back(number(t));
  }
  return v;
}

std::string legend(const std::string& title, const std::string& value) {
  if (title.ends_with(")")) {
    const auto open = title.rfind(" (");
    if (open != std::string::npos) {
      return fmt::format("{} {} {}", title.substr(0, open), value, title.substr(open + 2, title.size() - open - 3));
    }
  }
  return title + " " + value;
}

std::string file_word(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += (std::isalnum(static_cast<unsigned char>(c)) != 0) || c == '.' || c == '+' || c == '-' ? c : '_';
  }
  return out;
}

void check_plots(const StudyFile& study) {
  for (const auto& p : study.plots) {
    const auto x = study.grid.axis_index(p.x);
    const auto l = study.grid.axis_index(p.lines);
    if (!x || !l || *x == *l) {
      throw BadInput(
          fmt::format("{}plot {} {}: expected two different axes of the study", study.at(p.line), p.x, p.lines));
    }
    const AxisView xv = axis_view(study, study.grid.axes[*x]);
    for (std::size_t i = 0; i < xv.num.size(); ++i) {
      if (!xv.num[i]) {
        throw BadInput(
            fmt::format("{}plot {} {}: x axis value `{}` is not a number; give axis {} a label {{ title: \"TITLE "
                        "(UNIT)\" value: [N1, N2, ...] }}",
                        study.at(p.line), p.x, p.lines, xv.text[i], p.x));
      }
    }
  }
}

PlotFile make_plot(const StudyFile& study, const Plot& plot, std::vector<std::size_t> point,
                   const std::vector<std::size_t>& others, const Table& grid, const Table* pure) {
  const auto& axes = study.grid.axes;
  const std::size_t xa = checked_axis(study, plot.x);
  const std::size_t la = checked_axis(study, plot.lines);
  const AxisView xv = axis_view(study, axes[xa]);
  const AxisView lv = axis_view(study, axes[la]);
  const std::string metric = plot.response + "_j_peak_pct";
  const auto grid_col = grid.column(metric);
  const auto pure_col = pure == nullptr ? std::nullopt : pure->column(metric);
  if (!grid_col) {
    throw BadInput("study.csv has no column " + metric);
  }
  const auto cell = [](const Table& t, std::size_t row, std::size_t col) {
    const auto it = t.rows.find(row);
    return it == t.rows.end() || it->second[col].empty() ? std::string("NaN") : it->second[col];
  };

  PlotFile f;
  f.name = fmt::format("{}_peak_error_vs_{}_by_{}", file_word(plot.response), file_word(plot.x), file_word(plot.lines));
  std::string where;
  for (const std::size_t o : others) {
    const AxisView ov = axis_view(study, axes[o]);
    f.name += fmt::format("_{}-{}", file_word(axes[o].name), file_word(ov.text[point[o]]));
    where += fmt::format("{}{} = {}", where.empty() ? "" : ", ", ov.title, ov.text[point[o]]);
  }

  // Columns: x, one per line value, then the pure simulation per line value (one if all equal).
  std::vector<std::size_t> xs(axes[xa].values.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = i;
  }
  std::stable_sort(xs.begin(), xs.end(), [&](std::size_t a, std::size_t b) { return *xv.num[a] < *xv.num[b]; });
  const std::size_t nl = axes[la].values.size();
  std::vector<std::vector<std::string>> lines(nl);
  std::vector<std::vector<std::string>> pures(pure_col ? nl : 0);
  for (const std::size_t xi : xs) {
    point[xa] = xi;
    for (std::size_t li = 0; li < nl; ++li) {
      point[la] = li;
      lines[li].push_back(cell(grid, study.grid.row_of(point), *grid_col));
      if (pure_col) {
        pures[li].push_back(cell(*pure, study.grid.pure_row(point), *pure_col));
      }
    }
  }
  const bool one_pure =
      !pures.empty() && std::all_of(pures.begin(), pures.end(), [&](const auto& c) { return c == pures[0]; });
  if (one_pure) {
    pures.resize(1);
  }

  const std::string response_title = plot.response + " peak error J_peak (%)";
  f.dat = fmt::format("# rths-study {}: {} against {}, one column per value of {}{}\n", study.name, response_title,
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

  std::string title = fmt::format("{}: {} against {}", study.name, response_title, xv.title);
  if (!where.empty()) {
    title += "\\n" + where;
  }
  f.gp = fmt::format(
      "# rths-study: {0}.png from {0}.dat (gnuplot {0}.gp in this folder)\n"
      "reset\n"
      "{4}"
      "set title {1}\n"
      "set xlabel {2}\n"
      "set ylabel {3}\n"
      "set key below\n"
      "set grid\n"
      "set yrange [0:*]\n"
      "plot \\\n",
      f.name, gp_quote(title), gp_quote(xv.title), gp_quote(response_title), gp_png_header(f.name));
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

PlotCount write_plots(const StudyFile& study, const std::filesystem::path& dir) {
  if (study.plots.empty()) {
    return {};
  }
  check_plots(study);
  const Table grid = read_table(dir / "study.csv");
  std::optional<Table> pure_table;
  if (std::filesystem::exists(dir / "pure.csv")) {
    pure_table = read_table(dir / "pure.csv");
  }
  const auto& axes = study.grid.axes;
  std::vector<std::string> scripts;
  std::set<std::string> names;
  for (const auto& p : study.plots) {
    const std::size_t xa = checked_axis(study, p.x);
    const std::size_t la = checked_axis(study, p.lines);
    std::vector<std::size_t> others;
    std::size_t combos = 1;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      if (a != xa && a != la) {
        others.push_back(a);
        combos *= axes[a].values.size();
      }
    }
    for (std::size_t c = 0; c < combos; ++c) {
      std::vector<std::size_t> point(axes.size(), 0);
      std::size_t rest = c;
      for (std::size_t k = others.size(); k-- > 0;) {
        point[others[k]] = rest % axes[others[k]].values.size();
        rest /= axes[others[k]].values.size();
      }
      PlotFile f = make_plot(study, p, point, others, grid, pure_table ? &*pure_table : nullptr);
      if (!names.insert(f.name).second) {
        f.name += fmt::format("_{}", c + 1);  // two values that read the same in a file name
        names.insert(f.name);
      }
      write_file(dir / (f.name + ".dat"), f.dat);
      write_file(dir / (f.name + ".gp"), f.gp);
      scripts.push_back(f.name);
    }
  }
  return render_plots(dir, scripts);
}

std::string plot_text(const PlotCount& plots) {
  return fmt::format(", {} plots{}", plots.made,
                     plots.failed == 0 ? std::string{} : fmt::format(" ({} failed)", plots.failed));
}

}  // namespace rths::study
