#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "experiment.pb.h"

namespace rths {

// What makes a setup transformation (proto/experiment.proto, SetupTransform) impossible to build:
// the field, relative to the message checked (`matrix.value`, `two_actuators.actuator[1].angle_deg`;
// empty: the message itself), and one sentence of what was found and what was expected. One set of
// rules for the config validator (which adds the site, the file and the line) and for
// node_physical's setup transformations (which throw std::invalid_argument with it).
struct SetupProblem {
  std::string field;
  std::string what;
};

// A geometric layout must control its DOFs with a margin: at the reference the Jacobian of strokes
// by interface displacements (rows: the actuators' unit axes projected on the DOFs) has a
// determinant of magnitude sin(10 deg) or more. One inclined actuator lies within 80 degrees of its
// DOF's line, two planar actuators cross at 10 degrees or more. Below it an error of a stroke
// reading grows more than 1 / sin(10 deg) = 5.8 times in the interface displacement, and at 0 a DOF
// is not controlled at all.
inline constexpr double kSetupMinCrossingDeg = 10.0;
// A matrix has full column rank when its smallest singular value is above this fraction of its
// largest: the entries are typed by hand, so exact rank would accept a matrix whose T+ has no correct
// digit.
inline constexpr double kSetupRankTolerance = 1e-9;

// The whole setup for a site of `dofs` interface DOFs (its channels): the kind's own rules and the
// kind against the DOFs (an inclined actuator drives 1, two planar actuators drive 2, a matrix has one
// column per DOF).
// Also the actuators' stroke limits: none, or one per actuator, each finite and above 0.
std::optional<SetupProblem> setup_problem(const config::SetupTransform& setup, std::size_t dofs);

// The number of actuators a setup drives (a matrix's `actuators`, 1 for an inclined actuator, 2 for
// two planar actuators; 0 without a kind). The datagrams of a site's driver carry this many.
std::size_t setup_actuators(const config::SetupTransform& setup);

// What a site's driver datagrams carry, one entry per: the setup's actuators, else the site's channels.
std::size_t driven_channels(const config::Site& site);

// The rules of each kind on plain numbers (fields named as in its message).
std::optional<SetupProblem> setup_matrix_problem(std::size_t actuators, std::span<const double> t_row_major,
                                                 std::size_t dofs);
std::optional<SetupProblem> inclined_actuator_problem(double length_m, double angle_deg, double offset_m);
// RigidCoupler: arm p (m) and pin angle alpha (degrees).
std::optional<SetupProblem> rigid_coupler_problem(double arm_m, double angle_deg);
std::optional<SetupProblem> two_actuators_problem(double length0_m, double angle0_deg, double length1_m,
                                                  double angle1_deg);

}  // namespace rths
