#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/records/gnuplot.hpp"
#include "node_numerical/study/grid.hpp"
#include "node_numerical/study/study_file.hpp"
#include "node_numerical/study/tables.hpp"

namespace rths::study {

// The plots of a study (seed 002 Figs. 7, 9, 12, 13): a response's peak error J_peak (%) against one
// axis, one line per value of another, with the pure simulation dashed; per plot and combination of
// the other axes' values a data file (.dat, every number copied from study.csv and pure.csv), a
// gnuplot script (.gp) and, where gnuplot is installed, the PNG.

// What a plot shows for an axis: its title and a text per value (and that text's number, if any).
struct AxisView {
  std::string title;                       // with unit, e.g. "round trip (ms)"
  std::vector<std::string> text;           // per value
  std::vector<std::optional<double>> num;  // per value, when a number
};
// The label when the axis has one; else, for the delay_s of both legs of a site, the round trip in
// ms (the first site named); else the axis's name and values.
AxisView axis_view(const StudyFile& study, const Axis& axis);

// "model error (%)" and "-30" -> "model error -30 %"; a title without a unit -> "TITLE VALUE".
std::string legend(const std::string& title, const std::string& value);
// A text as part of a file name: letters, digits, '.', '+' and '-' kept, anything else '_'.
std::string file_word(const std::string& text);

// Plots refer to two different axes of the study and their x axis shows numbers. Throws BadInput
// naming the study file's line.
void check_plots(const StudyFile& study);

// One plot file pair: NAME.dat and NAME.gp.
struct PlotFile {
  std::string name;  // without extension
  std::string dat;
  std::string gp;
};

// Plot `plot` of study at one combination of the other axes (point holds their value indices; the x
// and lines axes are filled in here), from the grid's table and the pure simulations' (none: no
// dashed lines).
PlotFile make_plot(const StudyFile& study, const Plot& plot, std::vector<std::size_t> point,
                   const std::vector<std::size_t>& others, const Table& grid, const Table* pure);

// Every plot of study into dir, from dir/study.csv and dir/pure.csv; with gnuplot on PATH the PNGs too
// (its output in dir/gnuplot.log). Without gnuplot one warning says so and nothing fails: the scripts
// are there to run later.
PlotCount write_plots(const StudyFile& study, const std::filesystem::path& dir);

// ", 4 plots" or ", 3 plots (1 failed)" for a closing line.
std::string plot_text(const PlotCount& plots);

}  // namespace rths::study
