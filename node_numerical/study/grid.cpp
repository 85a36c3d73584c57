#include "node_numerical/study/grid.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace rths::study {

namespace {

// The fields of a site that the pure simulation overrides (Grid::pure).
constexpr std::array<std::string_view, 2> kNetworkFields{".link", ".compensation"};

}  // namespace

Axis value_axis(std::string name, std::vector<std::string> paths, const std::vector<std::string>& values) {
  Axis a;
  a.name = std::move(name);
  a.paths = std::move(paths);
  a.shown = values;
  for (const auto& v : values) {
    a.values.emplace_back(a.paths.size(), v);
  }
  return a;
}

bool Axis::network_side() const {
  return std::all_of(paths.begin(), paths.end(), [](const std::string& p) {
    const auto close = p.find(']');
    if (!p.starts_with("site[") || close == std::string::npos) {
      return false;
    }
    const std::string_view rest = std::string_view(p).substr(close + 1);
    return std::any_of(kNetworkFields.begin(), kNetworkFields.end(), [&](std::string_view f) {
      return rest.starts_with(f) && (rest.size() == f.size() || rest[f.size()] == '.');
    });
  });
}

std::size_t Grid::rows() const {
  std::size_t n = 1;
  for (const auto& a : axes) {
    n *= a.values.size();
  }
  return n;
}

std::vector<std::size_t> Grid::point(std::size_t row) const {
  std::vector<std::size_t> idx(axes.size());
  for (std::size_t i = axes.size(); i-- > 0;) {
    idx[i] = row % axes[i].values.size();
    row /= axes[i].values.size();
  }
  return idx;
}

std::size_t Grid::row_of(const std::vector<std::size_t>& point) const {
  std::size_t row = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    row = row * axes[i].values.size() + point[i];
  }
  return row;
}

std::vector<std::string> Grid::overrides(std::size_t row) const {
  std::vector<std::string> out = sets;
  const auto idx = point(row);
  for (std::size_t a = 0; a < axes.size(); ++a) {
    for (std::size_t p = 0; p < axes[a].paths.size(); ++p) {
      out.push_back(axes[a].paths[p] + "=" + axes[a].values[idx[a]][p]);
    }
  }
  out.insert(out.end(), after.begin(), after.end());
  return out;
}

std::optional<std::size_t> Grid::axis_index(const std::string& name) const {
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].name == name) {
      return i;
    }
  }
  return std::nullopt;
}

Grid Grid::pure(const std::vector<std::string>& remote_sites) const {
  Grid pure{sets, {}, after};
  std::copy_if(axes.begin(), axes.end(), std::back_inserter(pure.axes),
               [](const Axis& a) { return !a.network_side(); });
  for (const auto& site : remote_sites) {
    pure.after.push_back("site[" + site + "].link={ backward { loss { probability: 1 } } }");
    pure.after.push_back("site[" + site + "].compensation={ mode: MODIFIED_SMITH }");
  }
  return pure;
}

std::size_t Grid::pure_row(const std::vector<std::size_t>& point) const {
  std::size_t row = 0;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (!axes[a].network_side()) {
      row = row * axes[a].values.size() + point[a];
    }
  }
  return row;
}

}  // namespace rths::study
