#include "common/core/dof_kind.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace rths {

DofKind kind_from_name(std::string_view name) {
  std::string letters;
  for (const char c : name) {
    if (std::isalpha(static_cast<unsigned char>(c)) == 0) break;
    letters += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  // The prefixes FE programs and papers give rotations: OpenSees' and SAP2000's RX..RZ, theta.
  static constexpr std::array<std::string_view, 9> kRotation{"r",     "rx",     "ry",     "rz",    "rot",
                                                             "theta", "thetax", "thetay", "thetaz"};
  return std::find(kRotation.begin(), kRotation.end(), letters) != kRotation.end() ? DofKind::kRotation
                                                                                   : DofKind::kTranslation;
}

std::string_view displacement_unit(DofKind kind) {
  return kind == DofKind::kRotation ? "rad" : "m";
}

std::string_view velocity_unit(DofKind kind) {
  return kind == DofKind::kRotation ? "rad_per_s" : "m_per_s";
}

std::string_view force_unit(DofKind kind) {
  return kind == DofKind::kRotation ? "Nm" : "N";
}

DisplayUnit display_unit(std::string_view si_unit, bool kilo_forces) {
  if (si_unit == "m") return {"mm", 1e3};
  if (si_unit == "rad") return {"mrad", 1e3};
  if (si_unit == "m_per_s") return {"mm/s", 1e3};
  if (si_unit == "rad_per_s") return {"mrad/s", 1e3};
  if (si_unit == "N") return kilo_forces ? DisplayUnit{"kN", 1e-3} : DisplayUnit{"N", 1.0};
  if (si_unit == "Nm") return kilo_forces ? DisplayUnit{"kN·m", 1e-3} : DisplayUnit{"N·m", 1.0};
  return {si_unit, 1.0};
}

}  // namespace rths
