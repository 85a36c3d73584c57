#include "node_numerical/study/merge.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/records/results.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/csv.hpp"
#include "node_numerical/study/plots.hpp"
#include "node_numerical/study/run.hpp"
#include "node_numerical/study/study_file.hpp"
#include "node_numerical/study/tables.hpp"

namespace rths::study {

namespace {

// A shard folder's study.json, if it has one; one that does not parse is bad input.
std::optional<results::StudySummary> shard_summary(const std::filesystem::path& dir) {
  const auto file = dir / "study.json";
  if (!std::filesystem::exists(file)) {
    return std::nullopt;
  }
  try {
    return read_results_json<results::StudySummary>(file);
  } catch (const std::exception& e) {
    throw BadInput(e.what());
  }
}

// The whole text of a file, nullopt when it cannot be read.
std::optional<std::string> text_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return in ? std::optional<std::string>(ss.str()) : std::nullopt;
}

}  // namespace

std::string describe_rows(const std::vector<std::size_t>& rows) {
  std::string s;
  for (std::size_t i = 0; i < rows.size() && i < 20; ++i) {
    s += fmt::format("{}{}", i == 0 ? "" : " ", rows[i]);
  }
  return rows.size() > 20 ? s + fmt::format(" ... ({} in all)", rows.size()) : s;
}

Merged merge_table(const std::vector<std::filesystem::path>& dirs, const std::string& name, const std::string& grid_key,
                   const std::function<std::uint64_t(const results::StudySummary&)>& grid_of, const std::string& what) {
  std::optional<std::vector<std::string>> header;
  std::map<std::size_t, std::vector<std::string>> lines;
  std::vector<std::size_t> duplicated;
  std::optional<std::size_t> grid;
  Merged m;
  for (const auto& dir : dirs) {
    const auto file = dir / name;
    CsvText csv;
    try {
      csv = read_csv(file);
    } catch (const std::runtime_error& e) {
      throw BadInput(e.what());
    }
    if (!header) {
      header = csv.header;
    } else if (csv.header != *header) {
      throw BadInput(file.string() + ": header differs from " + (dirs[0] / name).string());
    }
    if (const auto summary = shard_summary(dir)) {
      const std::size_t g = grid_of(*summary);
      if (grid && *grid != g) {
        throw BadInput(fmt::format("{}: {} {} differs from {}", (dir / "study.json").string(), grid_key, g, *grid));
      }
      grid = g;
    }
    for (std::size_t i = 0; i < csv.rows.size(); ++i) {
      const auto& cells = csv.rows[i];
      std::size_t row = 0;
      const auto [end, error] = std::from_chars(cells[0].data(), cells[0].data() + cells[0].size(), row);
      if (cells[0].empty() || error != std::errc{} || end != cells[0].data() + cells[0].size()) {
        throw BadInput(fmt::format("{}:{}: no row index", file.string(), csv.lines[i]));
      }
      if (!cells.back().empty()) {
        ++m.failed;
      }
      if (!lines.emplace(row, cells).second) {
        duplicated.push_back(row);
      }
    }
  }
  if (!duplicated.empty()) {
    std::sort(duplicated.begin(), duplicated.end());
    throw BadInput(what + " in more than one shard: " + describe_rows(duplicated));
  }
  const std::size_t total = grid.value_or(lines.empty() ? 0 : lines.rbegin()->first + 1);
  std::vector<std::size_t> missing;
  for (std::size_t r = 0; r < total; ++r) {
    if (!lines.contains(r)) {
      missing.push_back(r);
    }
  }
  if (!missing.empty()) {
    throw BadInput(fmt::format("{} missing ({} of {}): {}", what, missing.size(), total, describe_rows(missing)));
  }
  if (lines.size() > total) {
    throw BadInput(fmt::format("{} beyond the grid of {}: from {}", what, total, lines.rbegin()->first));
  }
  m.csv = csv_line(header.value_or(std::vector<std::string>{})) + "\n";
  for (const auto& [row, cells] : lines) {
    m.csv += csv_line(cells) + "\n";
  }
  m.rows = lines.size();
  return m;
}

int merge_studies(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& out, bool quiet) {
  const Merged grid = merge_table(
      dirs, "study.csv", "grid_rows", [](const results::StudySummary& s) { return s.grid_rows(); }, "rows");
  // The plot statements and pure simulations: all shards of one study have them, or none.
  std::optional<std::string> spec;
  for (const auto& dir : dirs) {
    const std::optional<std::string> here = text_of(dir / kPlotSpec);
    if (dir != dirs[0] && here != spec) {
      throw BadInput(fmt::format("{}: differs from {} (shards of different studies?)", (dir / kPlotSpec).string(),
                                 (dirs[0] / kPlotSpec).string()));
    }
    spec = here;
  }
  const bool has_pure = std::filesystem::exists(dirs[0] / "pure.csv");
  Merged pure;
  if (has_pure) {
    pure = merge_table(
        dirs, "pure.csv", "pure_rows", [](const results::StudySummary& s) { return s.pure_rows(); },
        "pure simulation rows");
  }
  std::filesystem::create_directories(out);
  start_logging(kProgram, out, "merge.log", quiet);
  write_file(out / "study.csv", grid.csv);
  if (has_pure) {
    write_file(out / "pure.csv", pure.csv);
  }
  results::StudySummary merged;
  if (const auto first = shard_summary(dirs[0])) {
    merged.set_study(first->study());
    merged.set_config(first->config());
  }
  merged.set_grid_rows(grid.rows);
  merged.set_pure_rows(pure.rows);
  merged.set_shard("1/1");
  merged.set_rows(grid.rows + pure.rows);
  merged.set_failed(grid.failed + pure.failed);
  merged.set_merged_from(static_cast<std::uint32_t>(dirs.size()));
  write_results_json(out / "study.json", merged);
  PlotCount plots;
  if (spec) {
    write_file(out / kPlotSpec, *spec);
    plots = write_plots(read_study(out / kPlotSpec, false), out);
  }
  spdlog::info("merged {} rows and {} pure simulations from {} folders, {} plots", grid.rows, pure.rows, dirs.size(),
               plots.made);
  if (!quiet) {
    fmt::print("rths-study: merged {} rows from {} folders ({} failed){}\noutput: {}\n", grid.rows, dirs.size(),
               grid.failed + pure.failed,
               spec ? fmt::format(", with {} pure simulations{}", pure.rows, plot_text(plots)) : std::string{},
               (out / "study.csv").string());
  }
  return grid.failed + pure.failed == 0 && plots.failed == 0 ? kExitCompleted : kExitFailure;
}

}  // namespace rths::study
