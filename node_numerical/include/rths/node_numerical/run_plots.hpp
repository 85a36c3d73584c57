#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "rths/common/gnuplot.hpp"

namespace rths {

// The plots of one run folder, as PNGs with units and legends (`rths-numerical plot RUN_DIR`), each
// drawn by gnuplot from a script NAME.gp beside it that reads the run's CSV files where they are:
//   response_<dof>         every response of summary.json (else every DOF, at most 8): the hybrid
//                          run's displacement against the monolithic reference's, mm over s
//   site_<ch>_tracking     each site channel's interface target (u) and measured displacement (xm)
//   site_<ch>_error        the tracking error xm - u
//   site_<ch>_loop         the force-displacement loop: measured force (fm) against xm
//   site_<ch>_model_error  the Smith predictor's model error e (remote sites)
//   lateness, compute      the step loop's histograms (real-time runs: timing.csv)
//   round_trip_<site>      each remote site's round-trip histogram (real-time runs)
struct RunPlots {
  std::vector<std::string> names;  // the scripts written, NAME.gp each
  PlotCount count;                 // what gnuplot drew of them
};

// Writes the scripts into out_dir (created) and renders them. Throws std::invalid_argument naming
// the file when run_dir is not a run folder (no numerical.csv with its header).
RunPlots plot_run(const std::filesystem::path& run_dir, const std::filesystem::path& out_dir);

}  // namespace rths
