#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace rths::study {

// One axis of a study's grid: the override paths each of its values assigns, and the values.
struct Axis {
  std::string name;
  std::vector<std::string> paths;
  std::vector<std::string> shown;                // each value as study.csv's axis column shows it
  std::vector<std::vector<std::string>> values;  // [value][path]: the override value of each path
  bool tuples = false;                           // written as tuples, one element per path
  int line = 0;                                  // where the study file writes it (0: nowhere)

  // Whether every path lies inside a site's link or compensation (site[...].link...,
  // site[...].compensation...): the network and how the predictor meets it, which the pure
  // simulation replaces, so that its result is the same for every value of such an axis.
  [[nodiscard]] bool network_side() const;
};

// An axis whose values each set every one of its paths (`value` of a study file).
Axis value_axis(std::string name, std::vector<std::string> paths, const std::vector<std::string>& values);

// The grid of a study: the Cartesian product of its axes, the first axis slowest; a row is the index
// of a point from 0. The run of a row applies `sets` in order, then each axis's paths in order, then
// `after`: every override a `--set` of rths-numerical run, so that the row's command line repeats it.
struct Grid {
  std::vector<std::string> sets;
  std::vector<Axis> axes;
  std::vector<std::string> after;

  // Points of the grid: the product of the axes' value counts (1 without axes).
  [[nodiscard]] std::size_t rows() const;
  // The value index of each axis at row (row < rows()).
  [[nodiscard]] std::vector<std::size_t> point(std::size_t row) const;
  // The inverse of point().
  [[nodiscard]] std::size_t row_of(const std::vector<std::size_t>& point) const;
  // The overrides of row's run, in the order it applies them ("PATH=VALUE").
  [[nodiscard]] std::vector<std::string> overrides(std::size_t row) const;
  [[nodiscard]] std::optional<std::size_t> axis_index(const std::string& name) const;

  // The grid of the pure simulations (seed 002 Figs. 9 and 13: the erroneous model, no network):
  // the axes off the network side, and after them the overrides that lose every remote site's
  // feedback under MODIFIED_SMITH, so that the numerical node integrates f = f_model(x) + 0.
  [[nodiscard]] Grid pure(const std::vector<std::string>& remote_sites) const;
  // The row of pure() that holds the pure simulation of this grid's point.
  [[nodiscard]] std::size_t pure_row(const std::vector<std::size_t>& point) const;
};

}  // namespace rths::study
