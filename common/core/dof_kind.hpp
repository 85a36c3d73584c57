#pragma once

#include <string_view>

namespace rths {

// What a DOF or a site channel moves, and so the units of everything recorded about it: a
// translation's displacement is in m and the force on it in N; a rotation's in rad and N m.
enum class DofKind { kTranslation, kRotation };

// The kind a DOF's name says, for a structure that gives no dof_kind (docs/models.md, "DOF kinds"):
// a rotation when the letters the name starts with (up to its first digit, '_', or its end) are
// r, rx, ry, rz, rot, theta, thetax, thetay or thetaz, in any case (rz_c0_s1, RZ12, r1, theta_3),
// else a translation (x1, ux_c0_s1, roof, floor2, q7).
DofKind kind_from_name(std::string_view name);

// The unit suffixes of a record's columns (`r1_rad`, `v_r1_rad_per_s`, `f_iisl_2_Nm`), fixed: tools
// that read the CSVs and the telemetry find their columns by them.
std::string_view displacement_unit(DofKind kind);  // m, rad
std::string_view velocity_unit(DofKind kind);      // m_per_s, rad_per_s
std::string_view force_unit(DofKind kind);         // N, Nm (a moment)

// A column's SI unit (its suffix) as a person reads it: the label and the factor from SI. Lengths and
// rotations in thousandths (mm, mrad, mm/s, mrad/s); forces in N or, with kilo_forces, kN (and N·m or
// kN·m). Any other unit unchanged, factor 1.
struct DisplayUnit {
  std::string_view label;
  double scale = 1.0;
};
DisplayUnit display_unit(std::string_view si_unit, bool kilo_forces = false);

}  // namespace rths
