// A site's setup transformation from its config (docs/setup-transformations.md): the kinds are
// node_physical/setups/'s, each registered with its rules and its factory.
#include "node_physical/plants/setup_transform.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "common/config/setup_checks.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"

namespace rths {

std::unique_ptr<SetupTransform> make_setup_transform(const config::Site& site) {
  const ComponentContext context{.site = &site};
  Problems problems;
  check_setup(site.setup(), context, Checker(problems, "setup"));
  if (!problems.empty()) throw std::invalid_argument(fmt::format("{}", fmt::join(problems.lines(), "\n")));
  return ComponentFactories<SetupTransform>::make_member(site.setup(), "kind", context);
}

}  // namespace rths
