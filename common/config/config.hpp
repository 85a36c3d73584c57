#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/text_format.h>

#include "common/core/config_error.hpp"
#include "common/core/dof_kind.hpp"
#include "common/core/field_locations.hpp"
#include "common/core/input_file.hpp"
#include "common/core/text.hpp"
#include "experiment.pb.h"

namespace rths {

struct LoadedConfig {
  config::Experiment experiment;
  std::filesystem::path source;    // the file as given
  std::filesystem::path base_dir;  // relative paths in the config resolve against this
};

// Reads a protobuf text-format Experiment, applies each "path=value" override in order (the
// `--set` option of every command), then validates. Throws ConfigError.
// With resolve_calibrations (default), every RLS controller's calibration_path is read and its
// values copied inline (the file must exist); `rths-numerical calibrate` loads without, to write it.
LoadedConfig load_experiment(const std::filesystem::path& file, const std::vector<std::string>& overrides = {},
                             bool resolve_calibration_files = true);

// The same from text already in memory (source_name is used in messages; structure.matrix_files'
// relative paths start from base_dir, the working folder when empty).
config::Experiment parse_experiment(const std::string& text, const std::string& source_name,
                                    const std::vector<std::string>& overrides = {},
                                    const std::filesystem::path& base_dir = {});

// The structure's DOF names: dof_name, else x1..xN (the numerical records' columns and responses).
std::vector<std::string> dof_names(const config::Structure& structure);
// The DOFs the run records (structure.record_dof, numbered from 0 here; every DOF when none is named)
// and their names, in the order of the records' columns.
std::vector<std::uint32_t> recorded_dofs(const config::Structure& structure);
std::vector<std::string> recorded_dof_names(const config::Structure& structure);
// What each DOF is: structure.dof_kind's entry, else (none given, or DOF_KIND_FROM_NAME) what its
// name says (kind_from_name), in DOF order; and the recorded DOFs' kinds, in their columns' order.
std::vector<DofKind> dof_kinds(const config::Structure& structure);
std::vector<DofKind> recorded_dof_kinds(const config::Structure& structure);
// What each channel of a site moves: the kind of the DOFs its influence column touches (validate()
// refuses a channel on DOFs of both kinds); a translation when it touches none.
std::vector<DofKind> channel_kinds(const config::Structure& structure, const config::Site& site);

// One override: `site[0].link.forward.delay_s=0.025`, `ground_motion.scale=0.4`,
// `site[purdue].compensation.mode=NONE` (a repeated message may be picked by index or by its
// `name`; the index equal to its size appends), `structure.mass_kg=[1,0,0,1]` (a whole repeated
// scalar field), `site[0].link={ forward { delay_s: 0.02 } }` (a whole message, in text format),
// `ground_motion.synthetic.seed=3` (selects that member of the oneof), `site[0].link=` (nothing
// after '=' removes the field). Throws ConfigError and leaves the experiment unchanged.
void apply_override(config::Experiment& experiment, const std::string& assignment);

// Like apply_override; also returns the path it assigned with element names resolved to indices
// (`site[purdue].link` -> `site[0].link`), so that a later error can be traced to the override.
std::string apply_override_resolved(config::Experiment& experiment, const std::string& assignment);

// The longest name of a site, a DOF or a spring, in bytes. Each becomes part of file names in the run
// folder (site_NAME.csv, site_NAME_1_model_error.png, response_DOF.png, spring_NAME_loop.png), and a
// file name may have 255 bytes: the longest of those affixes (27 bytes) leaves room for 228.
inline constexpr std::size_t kMaxNameBytes = 128;

// Why `name` cannot name a site (empty when it can): 1 to kMaxNameBytes letters, digits, '_' or '-'.
// What it is compared with ("contains ' '; expected only ...", "is 10000 bytes long; ..."), for the
// config's site[i].name and the --site option of the site's programs alike.
std::string site_name_problem(std::string_view name);

// Shape and sense checks of a parsed experiment; `where` maps a field to its source line when the
// text was parsed from a file (nullptr: messages carry the field path only).
void validate(const config::Experiment& experiment, const std::string& source_name,
              const FieldLocations* where = nullptr);

// Parses text-format `text` into `message` (any schema of proto/: an experiment, a calibration, a
// study) with the config loader's messages: "<source>:<line>:<column>: unknown field \"axes\" in
// Study; did you mean \"axis\"? expected one of: ...". Throws ConfigError. `tree`, when given,
// receives where each field was written.
void parse_text_message(const std::string& text, const std::string& source_name, google::protobuf::Message& message,
                        google::protobuf::TextFormat::ParseInfoTree* tree = nullptr);

// Canonical text form, written into every run folder as the config used.
std::string to_text(const config::Experiment& experiment);

}  // namespace rths
