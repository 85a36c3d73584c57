#pragma once

// What the config validator (config_validate.cpp) shares with the files of its sections' rules
// (structure_checks.cpp, site_checks.cpp): the field paths its messages name, the rule of a name that
// heads CSV columns, and each section's entry. Internal to common/.
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "experiment.pb.h"

namespace rths {

class Checker;

namespace validation {

inline std::string child(const std::string& parent, std::string_view field) {
  return parent.empty() ? std::string(field) : fmt::format("{}.{}", parent, field);
}

inline std::string element(const std::string& field_path, int index) {
  return fmt::format("{}[{}]", field_path, index);
}

// Why a DOF's or a spring's name cannot head CSV columns and be part of a file name (response_DOF.png,
// spring_NAME_loop.png); empty when it can.
std::string column_name_problem(std::string_view name);

// The structure (structure_checks.cpp): its size, its matrices (dense or sparse) and damping, the
// removed parts, the springs, the recorded DOFs and the DOFs' names and kinds.
void check_structure(const config::Structure& structure, config::Integrator integrator, const Checker& check);

// structure.reduction (structure_checks.cpp), checked once the structure and every site passed.
void check_reduction(const config::Experiment& experiment, const Checker& check);

// Site `index` (site_checks.cpp): its name, influence and channels with what they hold, then its
// setup, address, safe motion, compensation, link, driver, delay guard and multi-axial parts.
void check_site(const config::Experiment& experiment, int index, const Checker& check);

}  // namespace validation
}  // namespace rths
