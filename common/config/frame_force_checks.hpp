#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "common/config/setup_checks.hpp"
#include "experiment.pb.h"

namespace rths {

// What makes a model impossible to build: the field, relative to the message checked (`dofs`,
// `stiffness_n_per_m[7]`; empty: the message itself), and one sentence of what was found and what was
// expected.
struct SetupProblem {
  std::string field;
  std::string what;
};

// What makes a frame force model (proto/models.proto, FrameForceModel) impossible to build for a
// site of `channels` channels: the field, relative to the message (`dofs`, `mass_kg`,
// `stiffness_n_per_m[7]`), and one sentence of what was found and what was expected. One set of rules
// for the config validator (which adds the site, the file and the line) and for node_physical's
// FrameForceModel (which throws std::invalid_argument with it). The rules:
// - dofs is given, at least the site's channels (the model's first DOFs are the channels);
// - mass_kg, damping_ns_per_m and stiffness_n_per_m have dofs x dofs entries (row-major), all finite;
// - the stiffness is symmetric (to 1e-9 of its largest entry: a stiffness is, and a typing slip in
//   one triangle is caught);
// - the condensed DOFs' stiffness block Koo (the rows and columns after the channels) is invertible,
//   its smallest singular value above kSetupRankTolerance times its largest: the condensation
//   o = -Koo^-1 Kot t needs it, and a nearly singular Koo would amplify the stiffness's rounding.
std::optional<SetupProblem> frame_force_model_problem(const config::FrameForceModel& model, std::size_t channels);

// The same rules on plain numbers (matrices row-major, dofs x dofs).
std::optional<SetupProblem> frame_force_model_problem(std::size_t dofs, std::span<const double> mass_kg,
                                                      std::span<const double> damping_ns_per_m,
                                                      std::span<const double> stiffness_n_per_m, std::size_t channels);

}  // namespace rths
