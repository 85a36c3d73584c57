#include "rths/common/structural_damping.hpp"

#include <stdexcept>

#include "experiment.pb.h"
#include "rths/common/component_registry.hpp"

namespace rths {

const config::Structure& damped_structure(const ComponentContext& context) {
  const auto* structure = dynamic_cast<const config::Structure*>(context.holder);
  if (structure == nullptr) throw std::logic_error("a structure's damping is checked within its structure");
  return *structure;
}

}  // namespace rths
