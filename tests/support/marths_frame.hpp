#pragma once

// The maRTHS benchmark's model of its physical frame for the force estimate (seed 000 §2.7, the
// package's physicalFrame_feedbackForce.m), computed here independently of the product: the frame
// assembled from standard 2-D frame elements through a connectivity map (the package picks the
// global entries by hand), with the package's parameters, lumped masses and modal damping.
//
//   node 2 .------------. node 1 (the interface node: x and theta are the site's channels)
//          |            |
//   node 3 A            A node 4   (pinned bases)
//
// DOFs: 0 the sway X of nodes 1 and 2 (the beam is axially rigid), 1..4 the rotations of nodes 1..4;
// vertical motion is nil (the columns are axially rigid), the bases do not translate. Units: m, rad;
// N/m, N, N m/rad; kg and kg m^2.

#include <array>
#include <cmath>

#include <Eigen/Core>

#include "common/dynamics/eigen_problems.hpp"

namespace rths::test {

struct MarthsFrame {
  static constexpr int kDofs = 5;
  using Matrix = Eigen::Matrix<double, kDofs, kDofs>;
  Matrix mass;
  Matrix damping;
  Matrix stiffness;
  std::array<double, kDofs> natural_rad_per_s{};  // ascending, rounded to 0.01 rad/s as the package does
};

// Element parameters of physicalFrame_feedbackForce.m.
struct MarthsFrameParameters {
  static constexpr double kInch = 0.0254;
  double beam_length_m = 0.762;
  double column_length_m = 0.64135;
  double column_inertia_m4 = 2.520 * std::pow(kInch, 4) * 0.7;  // S3x5.7, times the package's tuning factor
  double beam_inertia_m4 = 4.21372e-7;
  double column_area_m2 = 1.670 * kInch * kInch;
  double beam_area_m2 = 7.56e-4;
  double modulus_pa = 200e9;
  double density_kg_per_m3 = 7850;
  double mass_factor = 1.1;     // the package's lumped masses are 10 % heavier
  double damping_ratio = 0.05;  // on every mode
};

// The 6 x 6 stiffness of a 2-D frame element (axial and Euler-Bernoulli bending) in global
// coordinates, for an element from its node a to its node b at angle phi to the X axis. Local DOFs
// (u, v, theta) at a then b; global (X, Y, theta) by the rotation u = c X + s Y, v = -s X + c Y.
inline Eigen::Matrix<double, 6, 6> frame_element(double e, double area, double inertia, double length, double phi) {
  const double l = length;
  const double ea = e * area / l;
  const double k12 = 12 * e * inertia / (l * l * l);
  const double k6 = 6 * e * inertia / (l * l);
  const double k4 = 4 * e * inertia / l;
  const double k2 = 2 * e * inertia / l;
  Eigen::Matrix<double, 6, 6> k;
  k << ea, 0, 0, -ea, 0, 0,       //
      0, k12, k6, 0, -k12, k6,    //
      0, k6, k4, 0, -k6, k2,      //
      -ea, 0, 0, ea, 0, 0,        //
      0, -k12, -k6, 0, k12, -k6,  //
      0, k6, k2, 0, -k6, k4;
  const double c = std::cos(phi);
  const double s = std::sin(phi);
  Eigen::Matrix3d r;
  r << c, s, 0, -s, c, 0, 0, 0, 1;
  Eigen::Matrix<double, 6, 6> t = Eigen::Matrix<double, 6, 6>::Zero();
  t.topLeftCorner<3, 3>() = r;
  t.bottomRightCorner<3, 3>() = r;
  return t.transpose() * k * t;
}

inline MarthsFrame marths_frame(const MarthsFrameParameters& p = {}) {
  MarthsFrame f;
  f.stiffness.setZero();
  // Each node's (X, Y, theta) -> the frame's DOF, -1 where the motion is nil.
  constexpr std::array<std::array<int, 3>, 5> kNodeDofs{{
      {-1, -1, -1},  // (no node 0)
      {0, -1, 1},    // node 1
      {0, -1, 2},    // node 2
      {-1, -1, 3},   // node 3
      {-1, -1, 4},   // node 4
  }};
  struct Element {
    int a, b;
    double area, inertia, length, phi;
  };
  const std::array<Element, 3> elements{{
      {4, 1, p.column_area_m2, p.column_inertia_m4, p.column_length_m, M_PI / 2},  // right column, base up
      {3, 2, p.column_area_m2, p.column_inertia_m4, p.column_length_m, M_PI / 2},  // left column
      {2, 1, p.beam_area_m2, p.beam_inertia_m4, p.beam_length_m, 0.0},             // beam, left to right
  }};
  for (const Element& el : elements) {
    const auto k = frame_element(p.modulus_pa, el.area, el.inertia, el.length, el.phi);
    std::array<int, 6> map{};
    for (int i = 0; i < 3; ++i) {
      map[static_cast<std::size_t>(i)] = kNodeDofs[static_cast<std::size_t>(el.a)][static_cast<std::size_t>(i)];
      map[static_cast<std::size_t>(i + 3)] = kNodeDofs[static_cast<std::size_t>(el.b)][static_cast<std::size_t>(i)];
    }
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 6; ++j) {
        const int gi = map[static_cast<std::size_t>(i)];
        const int gj = map[static_cast<std::size_t>(j)];
        if (gi >= 0 && gj >= 0) f.stiffness(gi, gj) += k(i, j);
      }
    }
  }

  // The package's lumped masses: half of the beam's and both columns' mass on the sway; at each top joint
  // (half the beam's mass Lb^2 + half a column's Lc^2) / 3, at each base half a column's Lc^2 / 3.
  const double beam_kg = p.density_kg_per_m3 * p.beam_area_m2 * p.beam_length_m;
  const double column_kg = p.density_kg_per_m3 * p.column_area_m2 * p.column_length_m;
  const double lb2 = p.beam_length_m * p.beam_length_m;
  const double lc2 = p.column_length_m * p.column_length_m;
  const double sway_kg = (beam_kg + 2 * column_kg) / 2 * p.mass_factor;
  const double top_kg_m2 = (beam_kg / 2 * lb2 + column_kg / 2 * lc2) / 3 * p.mass_factor;
  const double base_kg_m2 = column_kg / 2 * lc2 / 3 * p.mass_factor;
  f.mass.setZero();
  f.mass.diagonal() << sway_kg, top_kg_m2, top_kg_m2, base_kg_m2, base_kg_m2;

  // Modal damping, zeta on every mode: C = M Phi diag(2 zeta w_i) Phi^T M with Phi mass-normalised,
  // so that Phi^T C Phi = diag(2 zeta w_i). The package rounds w_i to 0.01 rad/s before it forms C.
  const SymmetricEigen modes = generalized_symmetric_eigen(f.stiffness, f.mass);
  const MarthsFrame::Matrix phi = modes.vectors;  // mass-normalised, ascending
  Eigen::Matrix<double, MarthsFrame::kDofs, 1> modal = Eigen::Matrix<double, MarthsFrame::kDofs, 1>::Zero();
  for (int i = 0; i < MarthsFrame::kDofs; ++i) {
    const double w = std::round(100 * std::sqrt(modes.values(i))) / 100;
    f.natural_rad_per_s[static_cast<std::size_t>(i)] = w;
    modal(i) = 2 * p.damping_ratio * w;
  }
  f.damping = f.mass * phi * modal.asDiagonal() * phi.transpose() * f.mass;
  return f;
}

}  // namespace rths::test
