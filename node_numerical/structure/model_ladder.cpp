#include "node_numerical/structure/model_ladder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <numbers>

#include "common/config/config.hpp"

namespace rths {

namespace {

// Adds value at (row, column), both from 1, summing what an earlier element put there.
class Assembly {
 public:
  explicit Assembly(std::uint32_t size) : size_(size) {}
  void add(std::uint32_t row, std::uint32_t column, double value) {
    if (value != 0.0) entries_[{row, column}] += value;
  }
  [[nodiscard]] SparseEntries entries() const {
    SparseEntries out;
    out.size = size_;
    for (const auto& [at, value] : entries_) {
      if (value != 0.0) out.entries.push_back({at.first, at.second, value});
    }
    return out;
  }

 private:
  std::uint32_t size_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> entries_;
};

using Matrix6 = std::array<std::array<double, 6>, 6>;

// A 2-D Euler-Bernoulli beam-column element along (cx, cy), in global coordinates: T^T k T with
// local (u1, v1, r1, u2, v2, r2) (Przemieniecki, Theory of Matrix Structural Analysis, §5 and §11).
Matrix6 to_global(const Matrix6& local, double cx, double cy) {
  Matrix6 t{};
  for (int node = 0; node < 2; ++node) {
    const int o = 3 * node;
    t[o][o] = cx;
    t[o][o + 1] = cy;
    t[o + 1][o] = -cy;
    t[o + 1][o + 1] = cx;
    t[o + 2][o + 2] = 1.0;
  }
  Matrix6 out{};
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      double sum = 0.0;
      for (int a = 0; a < 6; ++a) {
        for (int b = 0; b < 6; ++b) sum += t[a][i] * local[a][b] * t[b][j];
      }
      out[i][j] = sum;
    }
  }
  return out;
}

Matrix6 element_stiffness(double e, double area, double inertia, double length) {
  Matrix6 k{};
  const double axial = e * area / length;
  k[0][0] = k[3][3] = axial;
  k[0][3] = k[3][0] = -axial;
  const double b = e * inertia / (length * length * length);
  const std::array<int, 4> at{1, 2, 4, 5};
  const double l = length;
  const std::array<std::array<double, 4>, 4> bending{{{12.0, 6.0 * l, -12.0, 6.0 * l},
                                                      {6.0 * l, 4.0 * l * l, -6.0 * l, 2.0 * l * l},
                                                      {-12.0, -6.0 * l, 12.0, -6.0 * l},
                                                      {6.0 * l, 2.0 * l * l, -6.0 * l, 4.0 * l * l}}};
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 4; ++j) k[at[i]][at[j]] = b * bending[i][j];
  }
  return k;
}

Matrix6 element_mass(double density, double area, double length) {
  Matrix6 m{};
  const double total = density * area * length;
  m[0][0] = m[3][3] = total / 3.0;
  m[0][3] = m[3][0] = total / 6.0;
  const double c = total / 420.0;
  const std::array<int, 4> at{1, 2, 4, 5};
  const double l = length;
  const std::array<std::array<double, 4>, 4> bending{{{156.0, 22.0 * l, 54.0, -13.0 * l},
                                                      {22.0 * l, 4.0 * l * l, 13.0 * l, -3.0 * l * l},
                                                      {54.0, 13.0 * l, 156.0, -22.0 * l},
                                                      {-13.0 * l, -3.0 * l * l, -22.0 * l, 4.0 * l * l}}};
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 4; ++j) m[at[i]][at[j]] = c * bending[i][j];
  }
  return m;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out.flush()) throw ConfigError(fmt::format("{}: cannot be written", file.string()));
}

// The lower triangle of a symmetric matrix, for a symmetric Matrix Market file.
SparseEntries lower_triangle(const SparseEntries& m) {
  SparseEntries out;
  out.size = m.size;
  std::copy_if(m.entries.begin(), m.entries.end(), std::back_inserter(out.entries),
               [](const MatrixEntry& e) { return e.row >= e.column; });
  return out;
}

}  // namespace

double shear_building_storey_stiffness(std::uint32_t storeys) {
  const double n = storeys;
  const double period_s = std::max(2.0, n / 100.0);
  const double root =
      (2.0 * std::numbers::pi / period_s) / (2.0 * std::sin(std::numbers::pi / (2.0 * (2.0 * n + 1.0))));
  return kShearBuildingFloorMass * root * root;
}

GeneratedModel shear_building(std::uint32_t storeys) {
  if (storeys < 1) throw ConfigError("shear building: expected at least 1 storey");
  GeneratedModel model;
  const double k = shear_building_storey_stiffness(storeys);
  model.dofs = storeys;
  model.description = fmt::format(
      "a uniform shear building of {} storeys (floor mass {:g} kg, storey stiffness {:.6g} "
      "N/m, first period {:g} s)",
      storeys, kShearBuildingFloorMass, k, std::max(2.0, storeys / 100.0));
  Assembly mass(storeys);
  Assembly stiffness(storeys);
  for (std::uint32_t i = 1; i <= storeys; ++i) {
    mass.add(i, i, kShearBuildingFloorMass);
    stiffness.add(i, i, i < storeys ? 2.0 * k : k);
    if (i < storeys) {
      stiffness.add(i, i + 1, -k);
      stiffness.add(i + 1, i, -k);
    }
    model.names.push_back(fmt::format("floor{}", i));
    model.ground_influence.push_back(1.0);
  }
  model.mass = mass.entries();
  model.stiffness = stiffness.entries();
  if (storeys <= 200) {
    for (std::uint32_t i = 1; i <= storeys; ++i) model.recorded.push_back(i);
  } else {
    model.recorded.push_back(1);
    for (std::uint32_t i = 1; i <= 10; ++i) model.recorded.push_back(std::max<std::uint32_t>(2, i * storeys / 10));
  }
  model.interface_dof = 1;
  model.interface_stiffness_n_per_m = 0.1 * k;
  return model;
}

GeneratedModel plane_frame(std::uint32_t bays, std::uint32_t storeys) {
  if (bays < 1 || storeys < 1) throw ConfigError("plane frame: expected at least 1 bay and 1 storey");
  constexpr double kE = 2.0e11;        // Pa, steel
  constexpr double kDensity = 7850.0;  // kg/m^3
  constexpr double kColumnArea = 0.03;
  constexpr double kColumnInertia = 2.0e-3;
  constexpr double kBeamArea = 0.02;
  constexpr double kBeamInertia = 1.0e-3;
  constexpr double kStorey = 3.5;
  constexpr double kBay = 6.0;
  constexpr double kFloorMass = 4.0e4;  // per node, on ux and uy
  GeneratedModel model;
  const std::uint32_t columns = bays + 1;
  model.dofs = 3 * columns * storeys;
  model.description =
      fmt::format("a plane steel moment frame of {} bays x {} storeys, {} DOFs", bays, storeys, model.dofs);
  // DOF (from 1) of node (column c, storey s >= 1), component 0 ux, 1 uy, 2 rz; the base (s = 0) is fixed.
  const auto dof = [columns](std::uint32_t c, std::uint32_t s, std::uint32_t component) {
    return 3 * ((s - 1) * columns + c) + component + 1;
  };
  Assembly mass(model.dofs);
  Assembly stiffness(model.dofs);
  const auto add_element = [&](std::uint32_t c1, std::uint32_t s1, std::uint32_t c2, std::uint32_t s2, double area,
                               double inertia, double length, double cx, double cy) {
    const Matrix6 k = to_global(element_stiffness(kE, area, inertia, length), cx, cy);
    const Matrix6 m = to_global(element_mass(kDensity, area, length), cx, cy);
    for (int i = 0; i < 6; ++i) {
      const std::uint32_t si = i < 3 ? s1 : s2;
      if (si == 0) continue;  // the fixed base
      const std::uint32_t di = dof(i < 3 ? c1 : c2, si, static_cast<std::uint32_t>(i % 3));
      for (int j = 0; j < 6; ++j) {
        const std::uint32_t sj = j < 3 ? s1 : s2;
        if (sj == 0) continue;
        const std::uint32_t dj = dof(j < 3 ? c1 : c2, sj, static_cast<std::uint32_t>(j % 3));
        stiffness.add(di, dj, k[i][j]);
        mass.add(di, dj, m[i][j]);
      }
    }
  };
  for (std::uint32_t s = 1; s <= storeys; ++s) {
    for (std::uint32_t c = 0; c < columns; ++c) {
      add_element(c, s - 1, c, s, kColumnArea, kColumnInertia, kStorey, 0.0, 1.0);
      if (c + 1 < columns) add_element(c, s, c + 1, s, kBeamArea, kBeamInertia, kBay, 1.0, 0.0);
      mass.add(dof(c, s, 0), dof(c, s, 0), kFloorMass);
      mass.add(dof(c, s, 1), dof(c, s, 1), kFloorMass);
    }
  }
  model.mass = mass.entries();
  model.stiffness = stiffness.entries();
  model.names.resize(model.dofs);
  model.kinds.assign(model.dofs, DofKind::kTranslation);
  model.ground_influence.assign(model.dofs, 0.0);
  for (std::uint32_t s = 1; s <= storeys; ++s) {
    for (std::uint32_t c = 0; c < columns; ++c) {
      model.names[dof(c, s, 0) - 1] = fmt::format("ux_c{}_s{}", c, s);
      model.names[dof(c, s, 1) - 1] = fmt::format("uy_c{}_s{}", c, s);
      model.names[dof(c, s, 2) - 1] = fmt::format("rz_c{}_s{}", c, s);
      model.kinds[dof(c, s, 2) - 1] = DofKind::kRotation;
      model.ground_influence[dof(c, s, 0) - 1] = 1.0;
    }
  }
  model.interface_dof = dof(0, 1, 0);
  model.recorded = {model.interface_dof};
  if (storeys >= 3) model.recorded.push_back(dof(0, (storeys + 1) / 2, 0));
  if (storeys >= 2) model.recorded.push_back(dof(0, storeys, 0));
  model.interface_stiffness_n_per_m = 0.1 * columns * 12.0 * kE * kColumnInertia / (kStorey * kStorey * kStorey);
  return model;
}

StructuralModel structural_model(const GeneratedModel& model) {
  StructuralModel structure;
  structure.sparse_mass = to_sparse_matrix(model.mass);
  structure.sparse_stiffness = to_sparse_matrix(model.stiffness);
  structure.sparse_damping = rayleigh_damping(structure.sparse_mass, structure.sparse_stiffness, 1, 0.02, 3, 0.02);
  structure.ground_influence =
      Eigen::Map<const Eigen::VectorXd>(model.ground_influence.data(), static_cast<Eigen::Index>(model.dofs));
  return structure;
}

void write_model(const GeneratedModel& model, const std::filesystem::path& dir, const std::string& name,
                 const std::string& ground_motion, const std::string& generated_by) {
  std::filesystem::create_directories(dir);
  write_matrix_market(dir / "mass.mtx", lower_triangle(model.mass),
                      fmt::format("mass (kg; kg m^2 on rotations) of {}", model.description), true);
  write_matrix_market(dir / "stiffness.mtx", lower_triangle(model.stiffness),
                      fmt::format("stiffness (N/m; N/rad, N m/rad on rotations) of {}", model.description), true);
  // A model with rotations says which DOFs they are (the kind column), rather than leave it to names.
  const bool kinds = !model.kinds.empty();
  std::string map =
      kinds ? "dof,name,kind,ground_influence,record,interface\n" : "dof,name,ground_influence,record,interface\n";
  for (std::uint32_t d = 1; d <= model.dofs; ++d) {
    const bool recorded = std::find(model.recorded.begin(), model.recorded.end(), d) != model.recorded.end();
    const std::string kind = !kinds ? "" : model.kinds[d - 1] == DofKind::kRotation ? "rotation," : "translation,";
    map += fmt::format("{},{},{}{:g},{},{}\n", d, model.names[d - 1], kind, model.ground_influence[d - 1],
                       recorded ? "yes" : "no", d == model.interface_dof ? "spring:1:-1" : "");
  }
  // record_dof follows the file's order: the recorded DOFs in the order the model lists them.
  write_text(dir / "dofs.csv", map);
  const double k = model.interface_stiffness_n_per_m;
  write_text(
      dir / (name + ".textproto"),
      fmt::format(R"(# {description}.
# Generated by `{generated_by}` (docs/models.md): the matrices in mass.mtx and stiffness.mtx, the DOF
# map (names, ground influence, recorded DOFs, the site's interface) in dofs.csv.
name: "{name}"
rate_hz: 1024
integrator: KR_ALPHA
rho_infinity: 0.5

structure {{
  matrix_files {{ mass_path: "mass.mtx" stiffness_path: "stiffness.mtx" dof_map_path: "dofs.csv" }}
  rayleigh {{ mode_a: 1 zeta_a: 0.02 mode_b: 3 zeta_b: 0.02 }}
}}

ground_motion {{
  record {{ path: "{ground_motion}" format: TWO_COLUMN unit: G }}
  scale: 0.2
}}

site {{
  name: "spring"
  placement: REMOTE
  # influence from dofs.csv: the spring resists the motion of DOF {interface}.
  channel {{
    stroke_limit_m: 0.2 velocity_limit_m_per_s: 2 force_limit_n: {force_limit:.6g}
    specimen {{ spring {{ stiffness_n_per_m: {k:.9g} }} }}
    prediction {{ spring {{ stiffness_n_per_m: {k:.9g} }} }}
  }}
  compensation {{ mode: MODIFIED_SMITH }}
  link {{
    forward {{ delay_s: 0.01 }}
    backward {{ delay_s: 0.01 }}
  }}
}}
)",
                  fmt::arg("description", model.description), fmt::arg("generated_by", generated_by),
                  fmt::arg("name", name), fmt::arg("ground_motion", ground_motion),
                  fmt::arg("interface", model.interface_dof), fmt::arg("force_limit", k * 0.2), fmt::arg("k", k)));
}

}  // namespace rths
