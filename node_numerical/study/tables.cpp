#include "node_numerical/study/tables.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "common/records/results.hpp"
#include "node_numerical/engine/numerical_node.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/csv.hpp"

namespace rths::study {

Responses responses_of(const config::Experiment& experiment) {
  Responses r;
  const auto& s = experiment.structure();
  r.dofs = s.dofs();
  for (std::uint32_t i = 0; i < s.dofs(); ++i) {
    r.names.push_back(static_cast<int>(i) < s.dof_name_size() ? s.dof_name(static_cast<int>(i))
                                                              : fmt::format("x{}", i + 1));
  }
  for (const auto& site : experiment.site()) {
    for (int ch = 0; ch < site.channel_size(); ++ch) {
      r.names.push_back("f_" + channel_label(site.name(), static_cast<std::size_t>(site.channel_size()),
                                             static_cast<std::size_t>(ch)));
    }
    if (site.placement() == config::REMOTE) {
      r.remote_sites.push_back(site.name());
    }
  }
  return r;
}

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> kMetrics{"peak", "reference_peak", "j_peak_pct", "j_rms_pct", "rho"};
  return kMetrics;
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (std::isalnum(static_cast<unsigned char>(c)) != 0) ||
           std::string_view("_./=:+-,@%").find(c) != std::string_view::npos;
  });
  if (plain) {
    return word;
  }
  std::string q = "'";
  for (const char c : word) {
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return q + "'";
}

std::string rerun_command(const std::filesystem::path& config, const std::vector<std::string>& overrides) {
  std::string rerun = "rths-numerical run " + shell_quote(config.string());
  for (const auto& ov : overrides) {
    rerun += " --set " + shell_quote(ov);
  }
  return rerun;
}

std::string csv_header(const Grid& grid, const std::vector<std::string>& responses) {
  std::vector<std::string> cols{"row"};
  for (const auto& a : grid.axes) {
    cols.push_back(a.name);
  }
  for (const auto& a : grid.axes) {
    cols.insert(cols.end(), a.paths.begin(), a.paths.end());
  }
  cols.emplace_back("rerun");
  for (const auto& r : responses) {
    for (const auto& m : metric_names()) {
      cols.push_back(fmt::format("{}_{}", r, m));
    }
  }
  cols.insert(cols.end(), {"steps", "run_time_s", "error"});
  return csv_line(cols);
}

results::StudyRow study_row(const Grid& grid, const std::filesystem::path& config, std::size_t row,
                            const Outcome& outcome) {
  results::StudyRow r;
  r.set_row(row);
  const auto idx = grid.point(row);
  for (std::size_t a = 0; a < grid.axes.size(); ++a) {
    r.add_axis_values(grid.axes[a].shown[idx[a]]);
  }
  for (std::size_t a = 0; a < grid.axes.size(); ++a) {
    for (const auto& v : grid.axes[a].values[idx[a]]) {
      r.add_path_values(v);
    }
  }
  r.set_rerun(rerun_command(config, grid.overrides(row)));
  if (outcome.report) {
    for (const auto& [name, m] : outcome.report->responses) {
      (*r.mutable_responses())[name] = to_results(m);
    }
    r.set_steps(outcome.report->steps);
    r.set_run_time_s(outcome.report->run_time_s);
  }
  r.set_error(outcome.error);
  return r;
}

std::string csv_row(const results::StudyRow& r, const std::vector<std::string>& responses) {
  std::vector<std::string> cells{std::to_string(r.row())};
  cells.insert(cells.end(), r.axis_values().begin(), r.axis_values().end());
  cells.insert(cells.end(), r.path_values().begin(), r.path_values().end());
  cells.push_back(r.rerun());
  for (const auto& name : responses) {
    const auto it = r.responses().find(name);
    if (it == r.responses().end()) {
      cells.insert(cells.end(), metric_names().size(), std::string{});
      continue;
    }
    const results::ResponseMetrics& m = it->second;
    for (const double v : {m.peak(), m.reference_peak(), m.j_peak_pct(), m.j_rms_pct(), m.rho()}) {
      cells.push_back(fmt::format("{}", v));
    }
  }
  cells.push_back(r.has_steps() ? std::to_string(r.steps()) : std::string{});
  cells.push_back(r.has_run_time_s() ? fmt::format("{}", r.run_time_s()) : std::string{});
  cells.push_back(r.error());
  return csv_line(cells);
}

std::optional<std::size_t> Table::column(const std::string& name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(it - header.begin()));
}

Table read_table(const std::filesystem::path& file) {
  CsvText csv;
  try {
    csv = read_csv(file);
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
  Table t;
  t.header = std::move(csv.header);
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    auto& cells = csv.rows[i];
    std::size_t row = 0;
    const std::string& first = cells[0];
    const auto [end, error] = std::from_chars(first.data(), first.data() + first.size(), row);
    const bool whole = !first.empty() && error == std::errc{} && end == first.data() + first.size();
    if (!whole || cells.size() != t.header.size()) {
      throw BadInput(fmt::format("{}:{}: expected {} cells starting with the row index", file.string(), csv.lines[i],
                                 t.header.size()));
    }
    t.rows[row] = std::move(cells);
  }
  return t;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  if (!f.flush()) {
    throw std::runtime_error("cannot write " + p.string());
  }
}

}  // namespace rths::study
