#include "node_numerical/structure/hysteretic_spring.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rths {

namespace {

// Bouc-Wen's z moves at most this share of u_y per sub-step: RK4 on dz/du is then accurate to about
// 1e-10 of z's range (HystereticLaw tests), and a step of a hybrid test (about a millimetre at
// 1024 Hz) takes one to a few sub-steps.
constexpr double kBoucWenSubstep = 0.01;
// A path longer than this many yield deformations in one step is not a structure's motion; it is
// cut into this many sub-steps at most, so a diverging run stays bounded in time (its non-finite
// state stops it).
constexpr int kMaxSubsteps = 1000;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("hysteretic spring: " + what);
}

}  // namespace

HystereticLaw::HystereticLaw(const Parameters& parameters) : parameters_(parameters) {
  const Parameters& p = parameters_;
  require(std::isfinite(p.stiffness_n_per_m) && p.stiffness_n_per_m > 0.0,
          "stiffness_n_per_m is " + std::to_string(p.stiffness_n_per_m) + ", expected a finite value > 0");
  require(std::isfinite(p.yield_force_n) && p.yield_force_n > 0.0,
          "yield_force_n is " + std::to_string(p.yield_force_n) + ", expected a finite value > 0");
  require(p.hardening_ratio >= 0.0 && p.hardening_ratio < 1.0,
          "the post-yield stiffness ratio is " + std::to_string(p.hardening_ratio) + ", expected 0 to below 1");
  if (p.kind == Kind::kBoucWen) {
    // Constantinou and Adnane (1987): beta > 0 and -beta <= gamma <= beta give a dissipating loop;
    // gamma = -beta is left out, where z never saturates and the unloading stiffness has no bound.
    require(std::isfinite(p.beta) && p.beta > 0.0, "beta is " + std::to_string(p.beta) + ", expected > 0");
    require(std::isfinite(p.gamma) && p.gamma > -p.beta && p.gamma <= p.beta,
            "gamma is " + std::to_string(p.gamma) + ", expected -beta < gamma <= beta");
    require(std::isfinite(p.exponent) && p.exponent >= 1.0 && p.exponent <= 100.0,
            "exponent is " + std::to_string(p.exponent) + ", expected 1 to 100");
  }
}

double HystereticLaw::largest_tangent(const Parameters& p) {
  if (p.kind == Kind::kBilinear) return p.stiffness_n_per_m;
  // dz/du on unloading from z's saturation |z|^n = 1 / (beta + gamma): (1 + (beta - gamma) / (beta +
  // gamma)) / u_y; on loading and with gamma = beta it never exceeds 1 / u_y.
  const double unloading = std::max(1.0, 2.0 * p.beta / (p.beta + p.gamma));
  return p.stiffness_n_per_m * (p.hardening_ratio + (1.0 - p.hardening_ratio) * unloading);
}

void HystereticLaw::reset() {
  u_m_ = force_n_ = plastic_m_ = back_force_n_ = z_ = 0.0;
}

double HystereticLaw::deform(double u_m) {
  force_n_ = parameters_.kind == Kind::kBilinear ? deform_bilinear(u_m) : deform_bouc_wen(u_m);
  u_m_ = u_m;
  return force_n_;
}

// Return mapping of rate-independent plasticity with linear kinematic hardening (Simo and Hughes,
// Computational Inelasticity, 1998, §1.3): elastic modulus k, hardening modulus H = b k / (1 - b) so
// that the post-yield stiffness is k H / (k + H) = b k. On a straight path the answer is exact.
double HystereticLaw::deform_bilinear(double u_m) {
  const double k = parameters_.stiffness_n_per_m;
  const double b = parameters_.hardening_ratio;
  const double hardening = b * k / (1.0 - b);
  const double trial = k * (u_m - plastic_m_);
  const double relative = trial - back_force_n_;
  const double excess = std::abs(relative) - parameters_.yield_force_n;
  if (!(excess > 0.0)) return trial;
  const double direction = relative > 0.0 ? 1.0 : -1.0;
  const double slip = excess / (k + hardening);
  plastic_m_ += direction * slip;
  back_force_n_ += direction * hardening * slip;
  return trial - direction * k * slip;
}

double HystereticLaw::bouc_wen_slope(double z, double sign_du) const {
  const double abs_z = std::abs(z);
  const double power = parameters_.exponent == 2.0 ? abs_z * abs_z : std::pow(abs_z, parameters_.exponent);
  const double sign_z = z > 0.0 ? 1.0 : (z < 0.0 ? -1.0 : 0.0);
  const double yield_m = parameters_.yield_force_n / parameters_.stiffness_n_per_m;
  // dz/du = (1 - |z|^n (beta sgn(du z) + gamma)) / u_y.
  return (1.0 - power * (parameters_.beta * sign_du * sign_z + parameters_.gamma)) / yield_m;
}

// z integrated over the path by classical RK4 in u (the law is rate independent: dz/du depends on z
// and the direction of motion only).
double HystereticLaw::deform_bouc_wen(double u_m) {
  const double k = parameters_.stiffness_n_per_m;
  const double yield_m = parameters_.yield_force_n / k;
  const double path = u_m - u_m_;
  if (!std::isfinite(path)) {
    z_ = path;  // a diverged deformation: the force is not finite either, and the run stops on it
  } else if (path != 0.0) {
    const double sign_du = path > 0.0 ? 1.0 : -1.0;
    const double wanted = std::ceil(std::abs(path) / (kBoucWenSubstep * yield_m));
    const int substeps = static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(kMaxSubsteps)));
    const double h = path / substeps;
    for (int s = 0; s < substeps; ++s) {
      const double k1 = bouc_wen_slope(z_, sign_du);
      const double k2 = bouc_wen_slope(z_ + 0.5 * h * k1, sign_du);
      const double k3 = bouc_wen_slope(z_ + 0.5 * h * k2, sign_du);
      const double k4 = bouc_wen_slope(z_ + h * k3, sign_du);
      z_ += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
  }
  const double a = parameters_.hardening_ratio;
  return a * k * u_m + (1.0 - a) * parameters_.yield_force_n * z_;
}

}  // namespace rths
