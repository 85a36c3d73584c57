#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "common/core/command_line.hpp"
#include "node_numerical/study/grid.hpp"
#include "node_numerical/study/study_file.hpp"
#include "node_numerical/study/tables.hpp"

namespace rths::study {

inline constexpr const char* kProgram = "rths-study";
// The grid and plots of a study, written beside its tables for merge (plot_spec).
inline constexpr const char* kPlotSpec = "study.plot";
// The most threads --jobs starts: far more than any machine this runs on has cores.
inline constexpr int kMaxJobs = 1024;

// The command line of rths-study.
struct Options {
  std::string command;
  std::vector<std::string> operands;
  std::filesystem::path out;
  int jobs = 0;  // 0: the hardware's threads
  std::size_t shard_k = 1;
  std::size_t shard_n = 1;
  bool quiet = false;
};

// Its declaration: commands run, merge and convert, their options, the help text.
CommandLine command_line(Options& options);

// What the study's config says of every run, once each override has been checked.
struct Checked {
  Responses responses;
  double memory_budget_bytes = 0.0;  // output.memory_budget_mb of the config with the study's sets
};
// Before anything runs: the config with the study's `set` overrides, every axis value on its own
// (an error names the axis and its line), then the whole set of overrides of each of rows of grid
// (of the pure simulations with pure). Throws BadInput.
Checked check_study(const StudyFile& study, const Grid& grid, const std::vector<std::size_t>& rows, bool pure);

// `rths-study run STUDY`, `merge DIR...` and `convert OLD`: the exit code (ExitCode); BadInput and
// any other error are printed as one line and give 2 and 1.
int run_study(Options& options);
int convert_study(const Options& options);
int run_command(Options& options);

}  // namespace rths::study
