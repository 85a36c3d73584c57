#include "common/dynamics/structural_damping.hpp"

#include <stdexcept>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"

namespace rths {

const config::Structure& damped_structure(const ComponentContext& context) {
  const auto* structure = dynamic_cast<const config::Structure*>(context.holder);
  if (structure == nullptr) throw std::logic_error("a structure's damping is checked within its structure");
  return *structure;
}

}  // namespace rths
