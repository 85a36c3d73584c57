#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/study/grid.hpp"
#include "results.pb.h"

namespace rths::study {

// The tables a study writes: study.csv (its grid) and pure.csv (its pure simulations), one line per
// run in the columns of results::StudyRow (proto/results.proto), and study.json (StudySummary).

// What the runs of a study report, from its config.
struct Responses {
  std::vector<std::string> names;         // x1..xN (or dof_name), then f_<site>[_<channel>]
  std::size_t dofs = 0;                   // the first `dofs` names are the DOFs
  std::vector<std::string> remote_sites;  // the REMOTE sites, by name
};
// The responses of Experiment::evaluate for experiment, in its order.
Responses responses_of(const config::Experiment& experiment);

// The metrics study.csv holds per response R, as columns R_<metric>: the ResponseMetrics fields.
const std::vector<std::string>& metric_names();

// What one run of a study gave: its report, or why it failed (error), or nothing (not run).
struct Outcome {
  bool done = false;
  std::optional<RunReport> report;
  std::string error;
};

// A word as a POSIX shell reads it back: as it is when it holds only safe characters, else in single
// quotes.
std::string shell_quote(const std::string& word);
// The rths-numerical command line that runs config with overrides, as a user pastes it.
std::string rerun_command(const std::filesystem::path& config, const std::vector<std::string>& overrides);

// The header of study.csv for grid (or pure.csv for its pure grid): row, each axis's name, each axis
// path, rerun, R_<metric> for each response, steps, run_time_s, error.
std::string csv_header(const Grid& grid, const std::vector<std::string>& responses);
// Row `row` of grid (its config: config) as the results schema has it.
results::StudyRow study_row(const Grid& grid, const std::filesystem::path& config, std::size_t row,
                            const Outcome& outcome);
// The row's CSV line in the columns of csv_header; a response the run did not reach: empty cells.
std::string csv_row(const results::StudyRow& row, const std::vector<std::string>& responses);

// A study.csv or pure.csv as written: its header, and each row's cells by row index.
struct Table {
  std::vector<std::string> header;
  std::map<std::size_t, std::vector<std::string>> rows;

  [[nodiscard]] std::optional<std::size_t> column(const std::string& name) const;
};
// Throws BadInput naming the file (and line) when it cannot be read or a line is not a row.
Table read_table(const std::filesystem::path& file);

// Writes text to p; throws std::runtime_error "cannot write P".
void write_file(const std::filesystem::path& p, const std::string& text);

}  // namespace rths::study
