#pragma once

#include <memory>

#include "experiment.pb.h"
#include "node_physical/interfaces/setup_transform.hpp"

namespace rths {

// The setup of a site (site.setup(); its interface DOFs are the site's channels), built by the
// registry from the kind its config names (node_physical/setups/). Throws std::invalid_argument with
// the field and what was expected (`setup.matrix.value: is rank deficient: ...`, a line per problem)
// when the setup breaks the rules the config validator applies (check_setup, common/config/setup_checks.hpp).
std::unique_ptr<SetupTransform> make_setup_transform(const config::Site& site);

}  // namespace rths
