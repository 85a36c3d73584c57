#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "node_physical/interfaces/setup_transform.hpp"

namespace rths {

// Small displacements, any layout (OpenFresco's linear-geometry setups are constant matrices):
// strokes = T u, with T actuators x dofs of full column rank, actuators >= dofs. Measured strokes ->
// u = T+ s, the least-squares fit (exact when the strokes are consistent, T u = s for some u); T+ is
// computed once, by a complete orthogonal decomposition. Forces: T^T f. Valid everywhere.
class MatrixSetup final : public SetupTransform {
 public:
  // A config that passed the rules of matrix_setup.cpp (validate). t_row_major: actuators x dofs
  // entries, the one guard of its memory (std::invalid_argument).
  MatrixSetup(std::size_t actuators, std::span<const double> t_row_major, std::size_t dofs);

  [[nodiscard]] bool strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) override;
  [[nodiscard]] bool stroke_velocities(std::span<const double> interface_displacement_m,
                                       std::span<const double> interface_velocity_m_per_s,
                                       std::span<double> stroke_velocity_m_per_s) override;
  [[nodiscard]] bool interface_displacements(std::span<const double> strokes_m,
                                             std::span<double> interface_displacement_m) override;
  [[nodiscard]] bool interface_forces(std::span<const double> strokes_m, std::span<const double> actuator_forces_n,
                                      std::span<double> interface_forces_n) override;
  [[nodiscard]] bool actuator_forces(std::span<const double> strokes_m, std::span<const double> interface_forces_n,
                                     std::span<double> actuator_forces_n) override;
  [[nodiscard]] std::string valid_range() const override;

 private:
  std::vector<double> t_;          // T, row-major actuators x dofs
  std::vector<double> t_plus_;     // T+, row-major dofs x actuators
  std::vector<double> actuator_;   // scratch, actuators entries: a result is written out only when finite
  std::vector<double> interface_;  // scratch, dofs entries
};

}  // namespace rths
