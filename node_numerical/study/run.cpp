#include "node_numerical/study/run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/config/config.hpp"
#include "common/config/memory_budget.hpp"
#include "common/core/exit_codes.hpp"
#include "common/records/results.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/study/bad_input.hpp"
#include "node_numerical/study/legacy.hpp"
#include "node_numerical/study/merge.hpp"
#include "node_numerical/study/plots.hpp"
#include "node_numerical/study/runner.hpp"

namespace rths::study {

namespace {

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

// K/N with 1 <= K <= N.
void parse_shard(const std::string& text, Options& o) {
  const auto slash = text.find('/');
  const WholeRange any{1, std::numeric_limits<int>::max(), ""};
  try {
    o.shard_k = static_cast<std::size_t>(parse_whole(text.substr(0, slash), any));
    o.shard_n = static_cast<std::size_t>(parse_whole(slash == std::string::npos ? "" : text.substr(slash + 1), any));
  } catch (const Expected&) {
    o.shard_k = 0;
  }
  if (o.shard_k == 0 || o.shard_k > o.shard_n) {
    throw Expected("K/N, whole numbers with 1 <= K <= N");
  }
}

// One run of a study: row `row` of the grid or of its pure simulations.
struct Job {
  const Grid* grid = nullptr;
  std::size_t row = 0;
  bool pure = false;
};

// study.json of a run (results::StudySummary).
results::StudySummary study_summary(const StudyFile& st, const Options& o, std::size_t grid, std::size_t pure_grid,
                                    std::size_t run, std::size_t failed, double wall) {
  results::StudySummary s;
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

// The rows of a grid of `rows` rows that shard K/N runs.
std::vector<std::size_t> shard_rows(std::size_t rows, const Options& o) {
  std::vector<std::size_t> mine;
  for (std::size_t r = 0; r < rows; ++r) {
    if (r % o.shard_n == o.shard_k - 1) {
      mine.push_back(r);
    }
  }
  return mine;
}

}  // namespace

Checked check_study(const StudyFile& study, const Grid& grid, const std::vector<std::size_t>& rows, bool pure) {
  LoadedConfig base;
  try {
    base = load_experiment(study.config, grid.sets);
  } catch (const ConfigError& e) {
    throw BadInput(study.at(0) + e.what());
  }
  for (const auto& ax : grid.axes) {
    for (std::size_t v = 0; v < ax.values.size(); ++v) {
      for (std::size_t p = 0; p < ax.paths.size(); ++p) {
        config::Experiment copy = base.experiment;
        try {
          apply_override(copy, ax.paths[p] + "=" + ax.values[v][p]);
        } catch (const ConfigError& e) {
          throw BadInput(fmt::format("{}axis {}: {}", study.at(ax.line), ax.name, e.what()));
        }
      }
    }
  }
  for (const std::size_t row : rows) {
    try {
      (void)load_experiment(study.config, grid.overrides(row));
    } catch (const ConfigError& e) {
      throw BadInput(fmt::format("{}{}row {}: {}", study.at(0), pure ? "pure simulation " : "", row, e.what()));
    }
  }
  Checked c;
  c.responses = responses_of(base.experiment);
  c.memory_budget_bytes = base.experiment.output().memory_budget_mb() * kBytesPerMb;
  return c;
}

int run_study(Options& o) {
  StudyFile st = read_study(o.operands[0]);
  const std::vector<std::size_t> grid_rows = shard_rows(st.grid.rows(), o);
  const Checked base = check_study(st, st.grid, grid_rows, false);
  const auto& names = base.responses.names;
  for (auto& p : st.plots) {
    if (p.response.empty()) {
      p.response = names[base.responses.dofs - 1];  // the last DOF: the top floor
    }
    if (std::find(names.begin(), names.end(), p.response) == names.end()) {
      throw BadInput(
          fmt::format("{}plot: no response {}; expected one of x1..xN or f_<site>", st.at(p.line), p.response));
    }
  }
  // The pure simulations, sharded like the grid, when there is something to plot them on.
  const bool pure_runs = !st.plots.empty() && !base.responses.remote_sites.empty();
  const Grid pure = st.grid.pure(base.responses.remote_sites);
  const std::size_t grid = st.grid.rows();
  const std::size_t pure_grid = pure_runs ? pure.rows() : 0;
  const std::vector<std::size_t> pure_rows = shard_rows(pure_grid, o);
  (void)check_study(st, pure, pure_rows, true);
  std::vector<Job> jobs;
  jobs.reserve(grid_rows.size() + pure_rows.size());
  for (const std::size_t r : grid_rows) {
    jobs.push_back({&st.grid, r, false});
  }
  for (const std::size_t r : pure_rows) {
    jobs.push_back({&pure, r, true});
  }

  if (o.out.empty()) {
    o.out = default_run_folder(st.file);
  }
  start_logging(kProgram, o.out, "study.log", o.quiet);
  if (o.jobs == 0) {
    o.jobs = static_cast<int>(std::min<unsigned>(std::max(1U, std::thread::hardware_concurrency()), kMaxJobs));
  }
  spdlog::info("study {}: config {}, {} grid rows, {} pure simulations, shard {}/{}: {} runs on {} threads",
               st.file.string(), st.config.string(), grid, pure_grid, o.shard_k, o.shard_n, jobs.size(), o.jobs);
  const auto& stop = install_stop_signals();
  std::vector<Outcome> outcomes(jobs.size());
  std::vector<std::optional<LoadedConfig>> loaded(jobs.size());
  PoolJob work;
  work.prepare = [&](std::size_t i) {
    try {
      loaded[i] = load_experiment(st.config, jobs[i].grid->overrides(jobs[i].row));
      return Experiment::records(*loaded[i], RunMode::kVirtualTime).bytes();
    } catch (const std::exception& e) {
      outcomes[i].error = e.what();
      return 0.0;
    }
  };
  work.run = [&](std::size_t i) {
    Outcome& out = outcomes[i];
    if (out.error.empty()) {
      try {
        Experiment experiment(*loaded[i]);
        const RunReport& report = experiment.run();
        out.report = report;
        if (report.exit_code != kExitCompleted) {
          out.error = report.stop_reason;
        }
      } catch (const std::exception& e) {
        out.error = e.what();
      }
    }
    loaded[i].reset();
    if (!out.error.empty()) {
      spdlog::error("{}row {}: {}", jobs[i].pure ? "pure simulation " : "", jobs[i].row, out.error);
    }
    out.done = true;
  };
  const bool bar = !o.quiet && isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto progress = [&](std::size_t done) { draw_progress(done, jobs.size(), elapsed()); };
  const unsigned threads =
      run_pool(jobs.size(), work, {static_cast<unsigned>(o.jobs), base.memory_budget_bytes}, stop,
               bar ? std::function<void(std::size_t)>(progress) : std::function<void(std::size_t)>());
  const double wall = elapsed();
  const auto done = static_cast<std::size_t>(
      std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& out) { return out.done; }));
  if (bar) {
    draw_progress(done, jobs.size(), wall);
    std::fputc('\n', stderr);
  }
  std::string csv = csv_header(st.grid, names) + "\n";
  std::string pure_csv = csv_header(pure, names) + "\n";
  std::size_t failed = 0;
  std::size_t ran_grid = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!outcomes[i].done) {
      continue;
    }
    ran_grid += jobs[i].pure ? 0 : 1;
    failed += outcomes[i].error.empty() ? 0 : 1;
    (jobs[i].pure ? pure_csv : csv) +=
        csv_row(study_row(*jobs[i].grid, st.config, jobs[i].row, outcomes[i]), names) + "\n";
  }
  write_file(o.out / "study.csv", csv);
  if (pure_runs) {
    write_file(o.out / "pure.csv", pure_csv);
  }
  write_results_json(o.out / "study.json", study_summary(st, o, grid, pure_grid, done, failed, wall));
  if (!st.plots.empty()) {
    write_file(o.out / kPlotSpec, plot_spec(st));
  }
  spdlog::info("{} runs, {} failed, in {:.3f} s", done, failed, wall);
  PlotCount plots;
  if (done < jobs.size()) {
    spdlog::error("interrupted: {} of {} runs not done", jobs.size() - done, jobs.size());
    return kExitInterrupted;
  }
  if (o.shard_n == 1 && !st.plots.empty()) {
    plots = write_plots(read_study(o.out / kPlotSpec, false), o.out);
  } else if (!st.plots.empty()) {
    spdlog::info("plots: after `rths-study merge` of the {} shard folders", o.shard_n);
  }
  if (!o.quiet) {
    fmt::print("rths-study: {} of {} rows run{} ({} failed) in {:.2f} s on {} threads{}\noutput: {}\n", ran_grid, grid,
               pure_grid == 0 ? std::string{} : fmt::format(" and {} pure simulations", done - ran_grid), failed, wall,
               threads, st.plots.empty() ? std::string{} : plot_text(plots), (o.out / "study.csv").string());
  }
  // A plot the study asked for and gnuplot could not draw fails the study like a failed row does.
  return failed == 0 && plots.failed == 0 ? kExitCompleted : kExitFailure;
}

int convert_study(const Options& o) {
  const std::filesystem::path file = o.operands[0];
  std::string text;
  try {
    text = read_text_file(file);
  } catch (const ConfigError& e) {
    throw BadInput(e.what());
  }
  if (!legacy_statement_line(text)) {
    throw BadInput(file.string() +
                   ": has no statement of the old line syntax (config FILE, axis NAME PATH = VALUE..., ...) to "
                   "convert; a study file in protobuf text format runs as it is");
  }
  const std::string converted = convert_legacy_study(text, file);
  std::fwrite(converted.data(), 1, converted.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitCompleted : kExitFailure;
}

int run_command(Options& o) {
  try {
    if (o.command == "convert") {
      return convert_study(o);
    }
    if (o.command == "merge") {
      const std::vector<std::filesystem::path> dirs(o.operands.begin(), o.operands.end());
      return merge_studies(dirs, o.out, o.quiet);
    }
    return run_study(o);
  } catch (const BadInput& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return kExitFailure;
  }
}

CommandLine command_line(Options& o) {
  CommandLine cli(kProgram, "parameter studies over rths experiments in virtual time");
  cli.command("run", "STUDY",
              "Run every point of STUDY's grid in virtual time (as `rths-numerical run`), in process on\n"
              "--jobs threads, and write one row per run to DIR/study.csv; with `plot` fields also\n"
              "the pure simulations (DIR/pure.csv) and the plots.");
  cli.command("merge", "DIR...",
              "Concatenate the study.csv (and pure.csv) of shard folders (same header) into DIR, sorted\n"
              "by row, checking that no row is missing or duplicated; then draw the plots, the same as\n"
              "one unsharded run draws.");
  cli.command("convert", "OLD",
              "Print the study file OLD, written in the older line syntax (`axis NAME PATH = V1 V2`),\n"
              "in the protobuf text format of proto/study.proto, comments kept:\n"
              "rths-study convert OLD.study > NEW.study");
  cli.path("out", "DIR", o.out, "Output folder (created). Default for run: runs/<study name>-<date>-<time>")
      .only_for({"run", "merge"})
      .required_for({"merge"});
  cli.whole("jobs", "N", o.jobs, {1, kMaxJobs, "a whole number of threads"},
            "Runs at a time, 1 to 1024 (default: the hardware's threads); together they stay\n"
            "within the config's output.memory_budget_mb.")
      .only_for({"run"});
  cli.option(
         "shard", "K/N", [&o](const std::string& v) { parse_shard(v, o); },
         "Run only the rows with row % N == K-1 (1 <= K <= N), e.g. one shard per host, and\n"
         "the pure simulations likewise; no plots (merge the shard folders to get them).\n"
         "deploy/cluster/study-slurm.sh and study-parallel.sh run the shards and the merge.")
      .only_for({"run"});
  cli.flag("quiet", o.quiet, "No progress bar, summary or warnings; only errors.").alias("-q");
  cli.refuse("set", "belongs in the study file (set: \"PATH=VALUE\"), not on the command line");
  cli.epilogue(R"usage(STUDY file: protobuf text format of proto/study.proto, where every field is documented;
'#' starts a comment; relative paths are from the study file.
  config: "FILE"                     the experiment (protobuf text, as rths-numerical takes it)
  name: "NAME"                       the study's name in plot titles (default: the file's stem)
  set: "PATH=VALUE"                  a fixed override for every run (repeatable), applied first
  axis {                             one axis of the grid (repeatable):
    name: "NAME"                       its column in study.csv, one word
    path: ["PATH", ...]                the override paths each value sets (as --set PATH=V)
    value: ["V1", "V2", ...]           each value sets every path (a text-format message is one
                                       value: "{ probability: 0.05 }"), or instead, once a value:
    tuple { value: ["A", "B"] }        one element per path, in the order of `path`
    label { title: "TITLE (UNIT)" value: ["L1", "L2", ...] }
                                       what plots show for each value (numbers on an x axis, any
                                       word in a legend) and the axis title with its unit
  }
  plot { x: "X" lines: "LINES" response: "RESPONSE" }
                                     plots of RESPONSE's peak error J_peak (%) against axis X, one
                                     line per value of axis LINES, with the pure simulation dashed;
                                     one plot per combination of the other axes' values. RESPONSE:
                                     x1..xN or f_<site> (default: the last DOF, the top floor).
                                     Repeatable.
The grid is the Cartesian product of the axes, the first axis slowest; row = its index from 0.
Each run applies the `set` overrides in order, then each axis's paths in order. Example:
  config: "../seed002/spring.textproto"
  set: "duration_s=10"
  axis {
    name: "model_error"
    path: "site[0].channel[0].prediction.spring.stiffness_n_per_m"
    value: ["39084.08", "55834.4", "72584.72"]
    label { title: "model error (%)" value: ["-30", "0", "+30"] }
  }
  axis {
    name: "delay"
    path: ["site[0].link.forward.delay_s", "site[0].link.backward.delay_s"]
    value: ["0", "0.025", "0.05"]
  }
  plot { x: "delay" lines: "model_error" response: "x2" }
A study file of the older line syntax (`axis NAME PATH = V1 V2 ...`) is refused with one line that
says how to convert it: rths-study convert OLD > NEW.

Outputs (run): DIR/study.csv — row, each axis's value, each axis path's value, `rerun` (the exact
rths-numerical command line for that row alone), then for each response (x1..xN, f_<site>...)
<resp>_peak, _reference_peak, _j_peak_pct, _j_rms_pct, _rho, then steps, run_time_s and error
(empty unless the run failed; a failed run never stops the study). DIR/study.json (grid size,
shard, counts, wall time), DIR/study.log. Every override is checked before anything runs. The runs
at a time hold their records within the config's output.memory_budget_mb together: a run waits
for the memory of those before it (one larger than the budget runs alone).

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
DIR/study.plot keeps the grid and plots for merge. Without gnuplot (Debian: gnuplot-nox)
the .dat and .gp are written, one warning says so and the exit code stays as it is; a plot that an
installed gnuplot fails to draw is an error naming DIR/gnuplot.log, and the exit code is 1. An axis
without a label shows its values; one of both legs' delay_s shows the round trip in ms (the
first site's forward + backward legs).

Exit codes: 0 every row ran (and every plot was drawn), or convert wrote the study; 1 a row failed
(its error column says why), a plot failed (DIR/gnuplot.log says why) or an internal error;
2 bad command line, study file or override (nothing run); 6 interrupted (finished rows written).
)usage");
  return cli;
}

}  // namespace rths::study
