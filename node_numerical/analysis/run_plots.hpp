#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/records/gnuplot.hpp"

namespace rths {

// The plots of one run folder, as PNGs with units and legends (`rths-numerical plot RUN_DIR`), each
// drawn by gnuplot from a script NAME.gp beside it that holds its data, decimated to the picture
// (decimation.hpp: every peak stays), and all of them by one gnuplot process:
//   response_<dof>         the hybrid run's DOF against the monolithic reference's, over time: every
//                          recorded DOF of a run recording at most 8; of a larger model the DOFs of
//                          interest: each site's interface DOFs (its influence's rows, from the run's
//                          config.textproto), each multi-axial site's evaluation_dof, and the roof
//                          (the recorded translation with the largest peak); PlotOptions asks for more
//   site_<ch>_tracking     each site channel's interface target (u) and measured motion (xm)
//   site_<ch>_error        the tracking error xm - u
//   site_<ch>_loop         the force-displacement (moment-rotation) loop: measured force fm against xm
//   site_<ch>_model_error  the Smith predictor's model error e (a site that holds one: remote sites)
//   site_<a>_stroke        each actuator of a multi-axial site: stroke target, command and measured
//   site_<a>_stroke_error  its stroke tracking error
//   spring_<name>_loop     each hysteretic spring of the numerical model: force against deformation
//   lateness, compute      the step loop's histograms (real-time runs: timing.csv)
//   round_trip_<site>      each remote site's round-trip histogram (real-time runs)
// Units follow each column's kind: mm for translations, mrad for rotations, kN for forces, kN·m for
// moments (the model error in N, N·m).
struct RunPlots {
  std::vector<std::string> names;  // the scripts written, NAME.gp each
  PlotCount count;                 // what gnuplot drew of them
};

struct PlotOptions {
  // Recorded DOFs (names) drawn beyond those of interest; "all": every recorded DOF.
  std::vector<std::string> dofs;
};

// Writes the scripts into out_dir (created) and renders them. Throws std::invalid_argument naming
// the file when run_dir is not a run folder (no numerical.csv with its header), or a DOF asked for
// that the run did not record.
RunPlots plot_run(const std::filesystem::path& run_dir, const std::filesystem::path& out_dir,
                  const PlotOptions& options = {});

}  // namespace rths
