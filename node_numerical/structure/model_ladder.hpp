#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/core/dof_kind.hpp"
#include "common/dynamics/matrix_market.hpp"
#include "node_numerical/structure/structure.hpp"

namespace rths {

// Structural models of chosen size for the example ladder and the cost measurements (docs/models.md):
// what an FE program would export, as Matrix Market matrices and a DOF map.
struct GeneratedModel {
  std::string description;
  std::uint32_t dofs = 0;
  SparseEntries mass;       // kg, kg m^2
  SparseEntries stiffness;  // N/m, N/rad, N m/rad
  std::vector<std::string> names;
  std::vector<DofKind> kinds;  // what each DOF is (the map's kind column); empty: all translations
  std::vector<double> ground_influence;
  std::vector<std::uint32_t> recorded;  // from 1
  std::uint32_t interface_dof = 1;      // the site's spring acts here (from 1), resisting its motion
  double interface_stiffness_n_per_m = 0.0;
};

// A uniform shear building of `storeys` floors (2e5 kg each) with the storey stiffness that gives its
// first mode a period of max(2 s, storeys / 100 s): K tridiagonal, M diagonal, so that its modes are
// known in closed form, omega_j = 2 sqrt(k/m) sin((2j - 1) pi / (2 (2N + 1))), phi_j(i) =
// sin((2j - 1) pi i / (2N + 1)). The site: a spring of a tenth of a storey's stiffness between the
// ground and floor 1. Records every floor up to 200, else floor 1, each tenth and the roof.
GeneratedModel shear_building(std::uint32_t storeys);

// Storey stiffness (N/m) and floor mass (kg) of shear_building(storeys).
double shear_building_storey_stiffness(std::uint32_t storeys);
constexpr double kShearBuildingFloorMass = 2.0e5;

// A plane steel moment frame of `bays` bays (6 m) and `storeys` storeys (3.5 m) fixed at its base:
// Euler-Bernoulli beam-column elements with consistent mass, 3 DOFs per node (ux, uy, rz), a floor
// mass of 4e4 kg per node on ux and uy: 3 (bays + 1) storeys DOFs, sparse. The site: a spring of a
// tenth of the first storey's lateral stiffness at the ux of the first floor's first column. Records
// that DOF, the ux of the first column at mid-height and at the roof.
GeneratedModel plane_frame(std::uint32_t bays, std::uint32_t storeys);

// The model as write_model's experiment holds it: sparse, 2 % Rayleigh damping at modes 1 and 3, the
// ground influence of its DOF map (for the tests and benchmarks that step it without a config).
StructuralModel structural_model(const GeneratedModel& model);

// Writes mass.mtx and stiffness.mtx (symmetric), dofs.csv (the DOF map) and NAME.textproto, an
// experiment with KR-alpha at 1024 Hz, 2 % Rayleigh damping at modes 1 and 3, El Centro 1940 NS x 0.2
// from ground_motion (as written into the config: relative to dir, or absolute) and one remote site.
// Throws ConfigError when a file cannot be written.
void write_model(const GeneratedModel& model, const std::filesystem::path& dir, const std::string& name,
                 const std::string& ground_motion, const std::string& generated_by);

}  // namespace rths
