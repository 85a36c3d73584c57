#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace rths {

// What of a recorded history a picture needs: the plots of a run draw a few thousand points per line
// instead of every step, and look the same.

// The samples of a history sampled at equal steps worth drawing on `columns` pixel columns: per
// column, its first and last sample and those of its smallest and largest value (M4: Jugel et al.
// 2014, "M4: a visualization-oriented time series data aggregation", PVLDB 7(10)), in time order. A
// line through them covers the same pixels as a line through every sample, so a peak or a spike of
// a single sample stays in the picture. A non-finite sample is kept too (the first of its column),
// so that a gap or a NaN stays visible. A history of at most `columns` samples is kept whole.
// Returns the indices kept, ascending.
std::vector<std::size_t> decimate_min_max(std::span<const double> y, std::size_t columns);

// The points of a path (x, y) worth drawing on a picture of width x height pixels spanning the
// path's range, at most max_points of them: a point is kept when it lies at least half a pixel from
// the last kept one on either axis (the first and last points always, and every non-finite one), so
// the path drawn through them differs from the whole one by less than a pixel. A path that needs
// more points than max_points (a noisy record moves by a pixel or more at every sample) is thinned
// by a coarser step, 1.5 times larger each time, until it fits: it then differs by up to that step.
// Rendering cost grows faster than the points (pngcairo strokes a self-crossing path in about
// quadratic time), hence the bound. Returns the indices kept, ascending.
std::vector<std::size_t> decimate_path(std::span<const double> x, std::span<const double> y, std::size_t width,
                                       std::size_t height, std::size_t max_points);

}  // namespace rths
