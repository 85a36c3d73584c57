#pragma once

#include <cstddef>

#include "experiment.pb.h"

namespace rths {

struct ComponentContext;
class Checker;

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

// The question a setup kind answers beside its rules and its factory (register_fact, in its file of
// node_physical/setups/): how many actuators it drives (a matrix's `actuators`, 1 for an inclined
// actuator, 2 for two planar actuators or a rigid coupler).
struct SetupActuators {
  using Value = std::size_t;
};

// A site's setup transformation (proto/setup.proto, SetupTransform): its kind by the rules the
// kind registered (node_physical/setups/), the site's channels (context.site) its interface DOFs, and
// the actuators' stroke limits (none, or one per actuator, each finite and above 0), checked when the
// kind has no problem. True when the setup has none. The config validator checks every site's setup
// with it (adding the site, the file and the line), make_setup_transform the one it builds.
bool check_setup(const config::SetupTransform& setup, const ComponentContext& context, const Checker& check);

// The number of actuators a setup drives, by its kind's answer (0 without a kind). The datagrams of a
// site's driver carry this many.
std::size_t setup_actuators(const config::SetupTransform& setup);

// What a site's driver datagrams carry, one entry per: the setup's actuators, else the site's channels.
std::size_t driven_channels(const config::Site& site);

}  // namespace rths
