#pragma once

#include <Eigen/Core>
#include <string>

#include "common/core/dof_kind.hpp"

namespace rths {

// A hysteretic force-deformation law, advanced explicitly: deform(u) moves the history from the last
// deformation to u along a straight path and returns the force, with no iteration, as an integrator
// explicit in displacement needs (the displacement of a step is known before its force).
class HystereticLaw {
 public:
  enum class Kind { kBilinear, kBoucWen };
  struct Parameters {
    Kind kind = Kind::kBilinear;
    double stiffness_n_per_m = 0.0;  // k: elastic (bilinear), initial (Bouc-Wen)
    double yield_force_n = 0.0;      // F_y
    double hardening_ratio = 0.0;    // the post-yield stiffness over k: 0 to below 1
    // Bouc-Wen only (A = 1).
    double beta = 0.5;
    double gamma = 0.5;
    double exponent = 2.0;
  };

  // Throws std::invalid_argument naming the parameter that cannot make a dissipating loop.
  explicit HystereticLaw(const Parameters& parameters);

  // The force (N) at deformation u (m), the history moved there from the last deformation.
  double deform(double u_m);
  [[nodiscard]] double force_n() const { return force_n_; }
  [[nodiscard]] double deformation_m() const { return u_m_; }
  [[nodiscard]] double initial_stiffness_n_per_m() const { return parameters_.stiffness_n_per_m; }
  // The largest tangent stiffness the law can show, which the model's stiffness holds for it (the
  // explicit integrators stay unconditionally stable where the structure is softer than their K):
  // k for the bilinear law and for Bouc-Wen with gamma = beta; Bouc-Wen with gamma < beta unloads
  // stiffer than it loads, up to k (a + (1 - a) 2 beta / (beta + gamma)) from saturation.
  [[nodiscard]] double largest_tangent_n_per_m() const { return largest_tangent(parameters_); }
  [[nodiscard]] static double largest_tangent(const Parameters& parameters);
  // Back to the virgin state at u = 0.
  void reset();

 private:
  double deform_bilinear(double u_m);
  double deform_bouc_wen(double u_m);
  // z's slope dz/du (1/m) at z for a path moving in the direction of sign_du.
  [[nodiscard]] double bouc_wen_slope(double z, double sign_du) const;

  Parameters parameters_;
  double u_m_ = 0.0;
  double force_n_ = 0.0;
  double plastic_m_ = 0.0;     // bilinear: the plastic deformation
  double back_force_n_ = 0.0;  // bilinear: the centre of the elastic band (kinematic hardening)
  double z_ = 0.0;             // Bouc-Wen: the hysteretic variable, |z| < (beta + gamma)^(-1/n)
};

// A hysteretic spring of the numerical model between DOF i and DOF j (from 0; j -1: the ground).
struct SpringElement {
  std::string name;
  Eigen::Index dof_i = 0;
  Eigen::Index dof_j = -1;
  HystereticLaw::Parameters law;
  DofKind kind = DofKind::kTranslation;  // its DOFs': a rotational spring records rad and N m
};

}  // namespace rths
