#include "common/records/decimation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rths {

std::vector<std::size_t> decimate_min_max(std::span<const double> y, std::size_t columns) {
  const std::size_t n = y.size();
  std::vector<std::size_t> kept;
  if (n <= columns || columns == 0) {
    kept.resize(n);
    for (std::size_t i = 0; i < n; ++i) kept[i] = i;
    return kept;
  }
  kept.reserve(4 * columns + 1);
  for (std::size_t c = 0; c < columns; ++c) {
    // Column c holds samples [n c / columns, n (c + 1) / columns): every sample in exactly one column.
    const std::size_t first = n * c / columns;
    const std::size_t last = n * (c + 1) / columns;  // past the end; > first since n > columns
    std::size_t low = first;
    std::size_t high = first;
    std::size_t non_finite = last;
    for (std::size_t i = first; i < last; ++i) {
      if (!std::isfinite(y[i])) {
        non_finite = std::min(non_finite, i);
        continue;
      }
      if (!std::isfinite(y[low]) || y[i] < y[low]) low = i;
      if (!std::isfinite(y[high]) || y[i] > y[high]) high = i;
    }
    std::size_t in_column[] = {first, low, high, non_finite, last - 1};
    std::sort(std::begin(in_column), std::end(in_column));
    for (const std::size_t i : in_column) {
      if (i < last && (kept.empty() || kept.back() != i)) kept.push_back(i);
    }
  }
  return kept;
}

namespace {

// The points of the path at least `step` pixels (x_step, y_step in the axes' units) from the last kept.
std::vector<std::size_t> thin_path(std::span<const double> x, std::span<const double> y, std::size_t n, double x_step,
                                   double y_step) {
  const auto moved = [](double from, double to, double step) { return step > 0.0 && std::abs(to - from) >= step; };
  std::vector<std::size_t> kept{0};
  for (std::size_t i = 1; i + 1 < n; ++i) {
    const std::size_t at = kept.back();
    const bool finite = std::isfinite(x[i]) && std::isfinite(y[i]);
    const bool after_gap = !std::isfinite(x[at]) || !std::isfinite(y[at]);
    if (!finite || after_gap || moved(x[at], x[i], x_step) || moved(y[at], y[i], y_step)) kept.push_back(i);
  }
  if (n > 1) kept.push_back(n - 1);
  return kept;
}

}  // namespace

std::vector<std::size_t> decimate_path(std::span<const double> x, std::span<const double> y, std::size_t width,
                                       std::size_t height, std::size_t max_points) {
  const std::size_t n = std::min(x.size(), y.size());
  if (n == 0) return {};
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -x_min;
  double y_min = x_min;
  double y_max = -x_min;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    x_min = std::min(x_min, x[i]);
    x_max = std::max(x_max, x[i]);
    y_min = std::min(y_min, y[i]);
    y_max = std::max(y_max, y[i]);
  }
  // A pixel in each axis's unit; an axis without extent (0) never moves, so never keeps a point.
  const auto pixel = [](double extent, std::size_t pixels) {
    return extent > 0 ? extent / static_cast<double>(std::max<std::size_t>(pixels, 1)) : 0.0;
  };
  const double x_pixel = pixel(x_max - x_min, width);
  const double y_pixel = pixel(y_max - y_min, height);
  // The step (in pixels) grows by half each round from half a pixel to at most the whole picture,
  // where only the ends and the non-finite points stay.
  const double largest_step = 2.0 * static_cast<double>(width);
  double step = 0.5;
  std::vector<std::size_t> kept = thin_path(x, y, n, step * x_pixel, step * y_pixel);
  while (kept.size() > max_points && step < largest_step) {
    step *= 1.5;
    kept = thin_path(x, y, n, step * x_pixel, step * y_pixel);
  }
  return kept;
}

}  // namespace rths
