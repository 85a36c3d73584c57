#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace rths {

struct PlotCount {
  std::size_t made = 0;    // PNGs drawn
  std::size_t failed = 0;  // scripts gnuplot did not turn into a PNG (each logged as an error)
};

// Draws each NAME.gp of scripts in dir (NAME.png expected; gnuplot's output in dir/gnuplot.log): all
// in one gnuplot process, through dir/all_plots.gp, which loads each from gnuplot's defaults. When
// that fails, each script alone, so that every failure is named. Without gnuplot one warning says so
// and nothing fails: the scripts are there to run later.
PlotCount render_plots(const std::filesystem::path& dir, const std::vector<std::string>& scripts);

// A gnuplot double-quoted string; backslashes pass (a title's "\\n" is a line break).
std::string gp_quote(const std::string& s);

// The lines every rths PNG starts with: pngcairo (else png) at 1000 x 650, no enhanced text, output
// NAME.png, NaN as missing data.
std::string gp_png_header(const std::string& name);

}  // namespace rths
