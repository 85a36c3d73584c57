// structure.matrix_files of the config loader: the structure's matrices read from text or Matrix
// Market files into the experiment (dense, or sparse when any file is a Matrix Market one), with the
// DOF map's names, kinds, ground influence, recorded DOFs and the sites' influence; every problem
// named by its file and line.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/text_lines.hpp"
#include "common/dynamics/matrix_market.hpp"
#include "config_loading.hpp"

namespace rths::loading {
namespace {

// A square matrix as text (MatrixFiles): one row per line, values separated by commas, CRLF allowed,
// blank lines ignored. Row-major values and the size; ConfigError naming file:line otherwise.
std::pair<std::vector<double>, std::uint32_t> read_matrix_text(const std::filesystem::path& file) {
  TextLines lines(read_text_file(file));
  std::vector<double> values;
  std::size_t columns = 0;
  std::size_t rows = 0;
  for (std::string_view line; lines.next(line);) {
    const std::size_t line_number = lines.number();
    if (trim(line).empty()) continue;
    std::size_t count = 0;
    for (const std::string_view cell : split_list(line)) {
      const std::string_view value = trim(cell);
      double v = 0;
      const auto [ptr, error] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || error != std::errc() || ptr != value.data() + value.size() || !std::isfinite(v)) {
        throw ConfigError(fmt::format("{}:{}: value {} is \"{}\", expected a finite number", file.string(), line_number,
                                      count + 1, value));
      }
      values.push_back(v);
      ++count;
    }
    if (rows == 0) columns = count;
    if (count != columns) {
      throw ConfigError(fmt::format("{}:{}: has {} values, expected {} like the first row", file.string(), line_number,
                                    count, columns));
    }
    ++rows;
  }
  if (rows == 0 || rows != columns) {
    throw ConfigError(
        fmt::format("{}: has {} rows of {} values, expected a square matrix", file.string(), rows, columns));
  }
  return {std::move(values), static_cast<std::uint32_t>(rows)};
}

// Fills a SparseMatrix of the config from entries numbered from 1.
void set_sparse(config::SparseMatrix& target, const SparseEntries& matrix) {
  target.Clear();
  for (const MatrixEntry& e : matrix.entries) {
    target.add_row(e.row);
    target.add_column(e.column);
    target.add_value(e.value);
  }
}

// The nonzero entries of a dense row-major matrix.
SparseEntries entries_of(const std::vector<double>& values, std::uint32_t size) {
  SparseEntries out;
  out.size = size;
  for (std::uint32_t r = 0; r < size; ++r) {
    for (std::uint32_t c = 0; c < size; ++c) {
      const double v = values[static_cast<std::size_t>(r) * size + c];
      if (v != 0.0) out.entries.push_back({r + 1, c + 1, v});
    }
  }
  return out;
}

// One cell of a DOF map as a number, or a ConfigError naming the file, line and column.
template <typename T>
T dof_map_number(std::string_view cell, const std::string& where, std::string_view column) {
  T value{};
  const auto [ptr, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (cell.empty() || error != std::errc() || ptr != cell.data() + cell.size() ||
      (std::is_floating_point_v<T> && !std::isfinite(static_cast<double>(value)))) {
    throw ConfigError(fmt::format("{}: {} \"{}\" is not {}", where, column, cell,
                                  std::is_floating_point_v<T> ? "a finite number" : "a whole number"));
  }
  return value;
}

// Reads a DOF map (MatrixFiles.dof_map_path) into the structure and the sites it names.
void apply_dof_map(config::Experiment& experiment, const std::filesystem::path& file, std::uint32_t dofs) {
  const std::string name = file.string();
  enum Column { kDof, kName, kGround, kRecord, kInterface, kKind };
  const std::vector<std::pair<std::string_view, Column>> known{
      {"dof", kDof},       {"name", kName},           {"ground_influence", kGround},
      {"record", kRecord}, {"interface", kInterface}, {"kind", kKind}};
  std::vector<Column> columns;
  std::vector<std::string> names(dofs);
  std::vector<config::DofKind> kinds(dofs, config::DOF_KIND_FROM_NAME);
  std::vector<double> ground(dofs, 0.0);
  std::vector<bool> listed(dofs, false);
  std::vector<std::uint32_t> recorded;
  // Per site: (dof, channel, factor, the map's line), all numbered from 1.
  std::map<std::string, std::vector<std::tuple<std::uint32_t, std::uint32_t, double, std::size_t>>, std::less<>>
      interfaces;
  TextLines lines(read_text_file(file));
  for (std::string_view line; lines.next(line);) {
    if (trim(line).empty() || trim(line).front() == '#') continue;
    const std::string where = fmt::format("{}:{}", name, lines.number());
    const std::vector<std::string_view> cells = split_list(line);
    if (columns.empty()) {
      for (const std::string_view cell : cells) {
        const auto found = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == cell; });
        if (found == known.end()) {
          throw ConfigError(
              fmt::format("{}: unknown column \"{}\"; expected a header of dof, name, ground_influence, "
                          "record, interface, kind",
                          where, cell));
        }
        if (std::find(columns.begin(), columns.end(), found->second) != columns.end()) {
          throw ConfigError(fmt::format("{}: column \"{}\" twice", where, cell));
        }
        columns.push_back(found->second);
      }
      if (std::find(columns.begin(), columns.end(), kDof) == columns.end()) {
        throw ConfigError(
            fmt::format("{}: the header has no \"dof\" column; expected dof and any of name, "
                        "ground_influence, record, interface, kind",
                        where));
      }
      continue;
    }
    if (cells.size() != columns.size()) {
      throw ConfigError(
          fmt::format("{}: has {} values, expected {} like the header", where, cells.size(), columns.size()));
    }
    std::uint32_t dof = 0;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (columns[c] == kDof) dof = dof_map_number<std::uint32_t>(cells[c], where, "dof");
    }
    if (dof < 1 || dof > dofs) {
      throw ConfigError(fmt::format("{}: dof {} is outside the structure's 1..{}", where, dof, dofs));
    }
    if (listed[dof - 1]) throw ConfigError(fmt::format("{}: dof {} is listed twice", where, dof));
    listed[dof - 1] = true;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string_view cell = cells[c];
      switch (columns[c]) {
        case kDof:
          break;
        case kName:
          names[dof - 1] = std::string(cell);
          break;
        case kGround:
          ground[dof - 1] = cell.empty() ? 0.0 : dof_map_number<double>(cell, where, "ground_influence");
          break;
        case kRecord:
          if (cell == "yes" || cell == "1") {
            recorded.push_back(dof);
          } else if (!(cell.empty() || cell == "no" || cell == "0")) {
            throw ConfigError(fmt::format("{}: record \"{}\"; expected yes or no", where, cell));
          }
          break;
        case kKind:
          if (cell == "translation") {
            kinds[dof - 1] = config::TRANSLATION;
          } else if (cell == "rotation") {
            kinds[dof - 1] = config::ROTATION;
          } else if (!cell.empty()) {
            throw ConfigError(
                fmt::format("{}: kind \"{}\"; expected translation or rotation (or nothing: the "
                            "name decides, docs/models.md)",
                            where, cell));
          }
          break;
        case kInterface: {
          std::size_t at = 0;
          while (at < cell.size()) {
            const std::size_t next = std::min(cell.find_first_of(" ;", at), cell.size());
            const std::string_view item = cell.substr(at, next - at);
            at = next + 1;
            if (item.empty()) continue;
            const std::size_t first = item.find(':');
            const std::size_t second = first == std::string_view::npos ? first : item.find(':', first + 1);
            if (second == std::string_view::npos) {
              throw ConfigError(
                  fmt::format("{}: interface \"{}\"; expected SITE:CHANNEL:FACTOR, e.g. spring:1:-1", where, item));
            }
            interfaces[std::string(item.substr(0, first))].emplace_back(
                dof, dof_map_number<std::uint32_t>(item.substr(first + 1, second - first - 1), where, "channel"),
                dof_map_number<double>(item.substr(second + 1), where, "factor"), lines.number());
          }
          break;
        }
      }
    }
  }
  if (columns.empty()) throw ConfigError(fmt::format("{}: is empty; expected a header line and a line per DOF", name));

  auto& structure = *experiment.mutable_structure();
  const auto has = [&columns](Column c) { return std::find(columns.begin(), columns.end(), c) != columns.end(); };
  const auto refuse_both = [&](std::string_view field) {
    throw ConfigError(fmt::format("{}: gives {}, and so does the config; expected it in one place", name, field));
  };
  if (has(kName)) {
    if (structure.dof_name_size() > 0) refuse_both("structure.dof_name");
    for (std::uint32_t d = 0; d < dofs; ++d) {
      structure.add_dof_name(names[d].empty() ? fmt::format("x{}", d + 1) : names[d]);
    }
  }
  if (has(kKind)) {
    if (structure.dof_kind_size() > 0) refuse_both("structure.dof_kind");
    for (const config::DofKind kind : kinds) structure.add_dof_kind(kind);
  }
  if (has(kGround)) {
    if (structure.ground_influence_size() > 0) refuse_both("structure.ground_influence");
    structure.mutable_ground_influence()->Assign(ground.begin(), ground.end());
  }
  if (has(kRecord)) {
    if (structure.record_dof_size() > 0) refuse_both("structure.record_dof");
    if (recorded.empty()) {
      throw ConfigError(
          fmt::format("{}: the record column says yes for no DOF; expected at least one DOF recorded "
                      "(without the column every DOF is)",
                      name));
    }
    structure.mutable_record_dof()->Assign(recorded.begin(), recorded.end());
  }
  for (const auto& [site_name, entries] : interfaces) {
    const std::string& wanted = site_name;  // (a lambda may not capture a structured binding before C++20's DR)
    const auto site = std::find_if(experiment.mutable_site()->begin(), experiment.mutable_site()->end(),
                                   [&wanted](const config::Site& s) { return s.name() == wanted; });
    if (site == experiment.mutable_site()->end()) {
      throw ConfigError(fmt::format("{}:{}: interface names site \"{}\", which the config does not have", name,
                                    std::get<3>(entries.front()), site_name));
    }
    if (site->influence_size() > 0) refuse_both(fmt::format("site \"{}\"'s influence", site_name));
    const auto channels = static_cast<std::uint32_t>(site->channel_size());
    std::vector<double> influence(static_cast<std::size_t>(dofs) * channels, 0.0);
    for (const auto& [dof, channel, factor, line] : entries) {
      if (channel < 1 || channel > channels) {
        throw ConfigError(fmt::format("{}:{}: interface of dof {} names channel {} of site \"{}\", which has {}", name,
                                      line, dof, channel, site_name, channels));
      }
      influence[static_cast<std::size_t>(dof - 1) * channels + (channel - 1)] += factor;
    }
    site->mutable_influence()->Assign(influence.begin(), influence.end());
  }
}
}  // namespace

// Reads structure.matrix_files into mass_kg, stiffness_n_per_m and damping_ns_per_m (text files), or
// into structure.sparse when any is a Matrix Market file, sets dofs, then drops the paths: the
// experiment is then whole in itself, as the run folder's config.textproto must be.
void inline_matrix_files(config::Experiment& experiment, const std::filesystem::path& base_dir,
                         const std::string& source_name) {
  if (!experiment.structure().has_matrix_files()) return;
  auto& structure = *experiment.mutable_structure();
  const config::MatrixFiles files = structure.matrix_files();
  const auto at = [&](std::string_view field) {
    return fmt::format("{}: structure.matrix_files.{}", source_name, field);
  };
  if (structure.mass_kg_size() != 0 || structure.stiffness_n_per_m_size() != 0 || structure.has_sparse()) {
    throw ConfigError(
        fmt::format("{}: structure.matrix_files: given with mass_kg, stiffness_n_per_m or sparse; expected "
                    "the matrices from files or inline, not both",
                    source_name));
  }
  if (files.has_damping_path() && structure.damping_case() != config::Structure::DAMPING_NOT_SET) {
    throw ConfigError(fmt::format("{}: given with structure.{}; expected one damping", at("damping_path"),
                                  structure.has_rayleigh() ? "rayleigh" : "damping_ns_per_m"));
  }
  const auto is_market = [](const std::string& path) { return std::filesystem::path(path).extension() == ".mtx"; };
  const bool sparse = is_market(files.mass_path()) || is_market(files.stiffness_path()) ||
                      (files.has_damping_path() && is_market(files.damping_path()));
  std::uint32_t dofs = 0;
  // The DOFs that have a diagonal entry in the mass or the stiffness: every DOF needs one (a DOF with
  // neither has no equation), which bounds a size line by what the files hold.
  std::vector<std::uint32_t> held;
  for (const auto& [field, path, what] : {std::tuple{"mass_path", files.mass_path(), "mass"},
                                          std::tuple{"stiffness_path", files.stiffness_path(), "stiffness"},
                                          std::tuple{"damping_path", files.damping_path(), "damping"}}) {
    if (path.empty()) {
      if (std::string_view(field) == "damping_path") continue;  // damping from rayleigh, or none
      throw ConfigError(fmt::format("{}: missing; expected the file of the structure's {} matrix", at(field), what));
    }
    std::filesystem::path file = path;
    if (file.is_relative()) file = base_dir / file;
    SparseEntries entries;
    std::vector<double> dense;
    try {
      if (is_market(path)) {
        entries = read_matrix_market(file);
      } else {
        auto [values, size] = read_matrix_text(file);
        dense = std::move(values);
        entries.size = size;
      }
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", at(field), error.what()));
    }
    if (dofs != 0 && entries.size != dofs) {
      throw ConfigError(fmt::format("{}: {} is {} x {}, the mass matrix {} x {}; expected the same size", at(field),
                                    file.string(), entries.size, entries.size, dofs, dofs));
    }
    dofs = entries.size;
    const std::string_view name(field);
    if (sparse) {
      if (!is_market(path)) entries = entries_of(dense, dofs);
      if (name != "damping_path") {
        for (const MatrixEntry& e : entries.entries) {
          if (e.row == e.column) held.push_back(e.row);
        }
      }
      auto& target = *structure.mutable_sparse();
      set_sparse(name == "mass_path"        ? *target.mutable_mass_kg()
                 : name == "stiffness_path" ? *target.mutable_stiffness_n_per_m()
                                            : *target.mutable_damping_ns_per_m(),
                 entries);
    } else {
      auto* target = name == "mass_path"        ? structure.mutable_mass_kg()
                     : name == "stiffness_path" ? structure.mutable_stiffness_n_per_m()
                                                : structure.mutable_damping_ns_per_m()->mutable_value();
      target->Assign(dense.begin(), dense.end());
    }
  }
  if (sparse) {
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    if (held.size() < dofs) {
      // The first DOF missing: held is sorted, so where held[i] != i + 1 (or past its end).
      std::uint32_t missing = 1;
      while (missing <= held.size() && held[missing - 1] == missing) ++missing;
      throw ConfigError(fmt::format(
          "{}: the matrices are {} x {}, but {} of those DOFs have a diagonal entry in the stiffness or the mass "
          "(DOF {} has neither); expected every DOF with stiffness or mass (a DOF with neither has no equation), "
          "and a size line that counts the structure's DOFs",
          at("stiffness_path"), dofs, dofs, held.size(), missing));
    }
  }
  if (structure.has_dofs() && structure.dofs() != dofs) {
    throw ConfigError(fmt::format("{}: structure.dofs: is {}, the matrix files are {} x {}", source_name,
                                  structure.dofs(), dofs, dofs));
  }
  structure.set_dofs(dofs);
  if (files.has_dof_map_path()) {
    std::filesystem::path file = files.dof_map_path();
    if (file.is_relative()) file = base_dir / file;
    try {
      apply_dof_map(experiment, file, dofs);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", at("dof_map_path"), error.what()));
    }
  }
  experiment.mutable_structure()->clear_matrix_files();
}

}  // namespace rths::loading
