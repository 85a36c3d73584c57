// Loading an experiment: its text parsed with the position of every field (config_text.cpp), the
// `--set` overrides applied by reflection (config_override.cpp), the structure's matrix files read
// into it (config_matrix_files.cpp), then validated; the calibration files of its RLS controllers
// copied inline, and what its structure says of its DOFs. What the values must mean is checked in
// config_validate.cpp.
#include "common/config/config.hpp"
#include "common/core/input_file.hpp"

#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "config_loading.hpp"

namespace rths {
namespace {

using google::protobuf::TextFormat;
using loading::inline_matrix_files;
using loading::record_locations;

}  // namespace

config::Experiment parse_experiment(const std::string& text, const std::string& source_name,
                                    const std::vector<std::string>& overrides, const std::filesystem::path& base_dir) {
  config::Experiment experiment;
  TextFormat::ParseInfoTree tree;
  parse_text_message(text, source_name, experiment, &tree);
  FieldLocations where;
  record_locations(experiment, tree, "", where);
  for (const auto& assignment : overrides)
    where.add_override(apply_override_resolved(experiment, assignment), assignment);
  inline_matrix_files(experiment, base_dir, source_name);
  validate(experiment, source_name, &where);
  return experiment;
}

namespace {

// Copies the RLS initial values of every channel that names a calibration file (written by
// `rths-numerical calibrate`) into the channel's controller, so everything downstream sees them
// inline, at both ends of a link.
void resolve_calibrations(config::Experiment& experiment, const std::filesystem::path& base_dir,
                          const std::string& source_name) {
  for (auto& site : *experiment.mutable_site()) {
    for (int c = 0; c < site.channel_size(); ++c) {
      auto& channel = *site.mutable_channel(c);
      if (!channel.controller().has_rls() || !channel.controller().rls().has_calibration_path()) continue;
      auto& rls = *channel.mutable_controller()->mutable_rls();
      const std::string at =
          fmt::format("{}: site[{}].channel[{}].controller.rls.calibration_path", source_name, site.name(), c);
      std::filesystem::path file = rls.calibration_path();
      if (file.is_relative()) file = base_dir / file;
      std::string text;
      try {
        text = read_text_file(file);
      } catch (const ConfigError& error) {
        throw ConfigError(
            fmt::format("{}: {}; expected a file written by `rths-numerical calibrate`", at, error.what()));
      }
      config::RlsCalibration calibration;
      parse_text_message(text, file.string(), calibration);
      const auto entry = std::find_if(calibration.entry().begin(), calibration.entry().end(), [&](const auto& e) {
        return e.site() == site.name() && e.channel() == static_cast<std::uint32_t>(c);
      });
      if (entry == calibration.entry().end()) {
        throw ConfigError(
            fmt::format("{}: {} has no entry for site \"{}\" channel {}; expected one written by "
                        "`rths-numerical calibrate` for this experiment",
                        at, file.string(), site.name(), c));
      }
      const auto taps = static_cast<int>(rls.taps());
      if (entry->ff_size() != taps || entry->covariance_size() != taps * taps) {
        throw ConfigError(
            fmt::format("{}: {} holds {} taps ({} covariance entries) for site \"{}\" channel {}, "
                        "the controller has taps = {}",
                        at, file.string(), entry->ff_size(), entry->covariance_size(), site.name(), c, taps));
      }
      for (const double v : entry->ff()) {
        if (!std::isfinite(v)) throw ConfigError(fmt::format("{}: {} holds a non-finite FF value", at, file.string()));
      }
      *rls.mutable_initial_ff() = entry->ff();
      *rls.mutable_initial_covariance() = entry->covariance();
      rls.clear_calibration_path();
    }
  }
}

}  // namespace

std::vector<std::string> dof_names(const config::Structure& s) {
  std::vector<std::string> names;
  names.reserve(s.dofs());
  for (std::uint32_t i = 0; i < s.dofs(); ++i) {
    // fmt rather than "x" + std::to_string: GCC 12 raises a false -Wrestrict on the latter.
    names.push_back(static_cast<int>(i) < s.dof_name_size() ? s.dof_name(static_cast<int>(i))
                                                            : fmt::format("x{}", i + 1));
  }
  return names;
}

std::vector<std::uint32_t> recorded_dofs(const config::Structure& s) {
  std::vector<std::uint32_t> dofs;
  if (s.record_dof_size() == 0) {
    dofs.resize(s.dofs());
    for (std::uint32_t i = 0; i < s.dofs(); ++i) dofs[i] = i;
    return dofs;
  }
  for (const std::uint32_t d : s.record_dof()) dofs.push_back(d - 1);
  return dofs;
}

std::vector<std::string> recorded_dof_names(const config::Structure& s) {
  const std::vector<std::string> all = dof_names(s);
  std::vector<std::string> names;
  for (const std::uint32_t d : recorded_dofs(s)) names.push_back(all.at(d));  // validated within 1..dofs
  return names;
}

std::vector<DofKind> dof_kinds(const config::Structure& s) {
  const std::vector<std::string> names = dof_names(s);
  std::vector<DofKind> kinds;
  kinds.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto given =
        static_cast<int>(i) < s.dof_kind_size() ? s.dof_kind(static_cast<int>(i)) : config::DOF_KIND_FROM_NAME;
    kinds.push_back(given == config::ROTATION      ? DofKind::kRotation
                    : given == config::TRANSLATION ? DofKind::kTranslation
                                                   : kind_from_name(names[i]));
  }
  return kinds;
}

std::vector<DofKind> recorded_dof_kinds(const config::Structure& s) {
  const std::vector<DofKind> all = dof_kinds(s);
  std::vector<DofKind> kinds;
  for (const std::uint32_t d : recorded_dofs(s)) kinds.push_back(all.at(d));
  return kinds;
}

std::vector<DofKind> channel_kinds(const config::Structure& s, const config::Site& site) {
  const std::vector<DofKind> dofs = dof_kinds(s);
  const auto channels = static_cast<std::size_t>(site.channel_size());
  std::vector<DofKind> kinds(channels, DofKind::kTranslation);
  if (static_cast<std::size_t>(site.influence_size()) != dofs.size() * channels) return kinds;
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t d = 0; d < dofs.size(); ++d) {
      if (site.influence(static_cast<int>(d * channels + c)) != 0.0 && dofs[d] == DofKind::kRotation) {
        kinds[c] = DofKind::kRotation;
      }
    }
  }
  return kinds;
}

LoadedConfig load_experiment(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                             bool resolve_calibration_files) {
  const std::string text = read_text_file(file);
  LoadedConfig loaded;
  loaded.source = file;
  // Absolute, so that relative paths still resolve after a process changes its working folder.
  loaded.base_dir = std::filesystem::absolute(file).parent_path();
  loaded.experiment = parse_experiment(text, file.string(), overrides, loaded.base_dir);
  if (resolve_calibration_files) resolve_calibrations(loaded.experiment, loaded.base_dir, file.string());
  return loaded;
}

}  // namespace rths
