// A site's setup transformation from its config (docs/setup-transformations.md): the kinds are
// node_physical/setups/'s, each registered with its rules and its factory.
#include "rths/node_physical/setup_transform.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "rths/common/component_registry.hpp"
#include "rths/common/problems.hpp"
#include "rths/common/setup_checks.hpp"

namespace rths {

std::unique_ptr<SetupTransform> make_setup_transform(const config::Site& site) {
  const ComponentContext context{.site = &site};
  Problems problems;
  check_setup(site.setup(), context, Checker(problems, "setup"));
  if (!problems.empty()) throw std::invalid_argument(fmt::format("{}", fmt::join(problems.lines(), "\n")));
  return ComponentFactories<SetupTransform>::make_member(site.setup(), "kind", context);
}

}  // namespace rths
