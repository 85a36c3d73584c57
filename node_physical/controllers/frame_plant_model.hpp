#pragma once

#include <array>
#include <cmath>
#include <complex>
#include <optional>

#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "experiment.pb.h"

namespace rths {

// The maRTHS benchmark's control plant in the form of seed 000 Eqs. 19-26 (with the errata of its
// digest: roots in rad/s, H12 gain 4.5394e6, H22 gain 1.9238e7), actuator 0 the bottom one:
//   H11 = k11 (s + b1)(s + b2) / ((s + a1)(s + a2) F(s)),   H21 = k21 (s + b1)(s + b2) / (same),
//   H12 = k12 (s + p1) / ((s + d1)(s + d2) F(s)),          H22 = k22 (s + p2) / (same),
//   F(s) = (s + c1)^2 + c2^2.
// H_ij maps actuator j's command to actuator i's measured stroke. The ten roots are seed 003's
// parameters theta, in its order; the simulated plant (TwoActuatorFramePlant) and the UKF
// controller's model share this one description.
struct FramePlantModel {
  enum Root : std::uint8_t { kA1, kA2, kB1, kB2, kC1, kC2, kP1, kP2, kD1, kD2, kRoots };
  enum Gain : std::uint8_t { kK11, kK21, kK12, kK22, kGains };
  std::array<double, kRoots> theta{};  // rad/s, each > 0
  std::array<double, kGains> gain{};

  // From a config the loader has validated (the nominal values; the uncertainty is not drawn).
  static FramePlantModel from_config(const config::TwoActuatorFramePlant& plant);
  // H_ij(s), i the measured actuator, j the commanded one (0 or 1).
  [[nodiscard]] std::complex<double> response(int i, int j, std::complex<double> s) const;
  // H_ij(0).
  [[nodiscard]] double static_gain(int i, int j) const;
  // Every root finite and > 0 and every gain finite and nonzero: the values validate_frame_plant_model
  // asks of a config (a model built from one that failed them may have zeros where fields were missing).
  [[nodiscard]] bool well_formed() const;
};

// x > 0 and finite: what a root, a rate, a step, a scale or a covariance of the frame's controllers
// must be.
inline bool positive_finite(double x) {
  return std::isfinite(x) && x > 0.0;
}

// The rules of a two-actuator frame plant's model (config TwoActuatorFramePlant): every root and
// gain given, finite, roots positive and gains nonzero, the uncertainty's deviations bounded. The
// plant (actuator_plant { two_actuator_frame }) and the UKF's initial model are both checked by them.
void validate_frame_plant_model(const config::TwoActuatorFramePlant& plant, const Checker& check);

// The model a controller of the frame starts from: `model` (its config's `field`, null when absent)
// or else the site's actuator_plant { two_actuator_frame } without its uncertainty. The rules: the
// model's own, or a site that has such a plant (`what`: what the model is for, in the message).
// Returns the model when they passed and its values are well formed (the site's plant's own rules
// report a site plant that is not), for the rules that need the model itself; else nothing.
std::optional<FramePlantModel> validate_model_source(const config::TwoActuatorFramePlant* model, const char* field,
                                                     const char* what, const ComponentContext& context,
                                                     const Checker& check);
// The model of a config that passed those rules.
FramePlantModel model_of_site_or(const config::TwoActuatorFramePlant* model, const ComponentContext& context);

}  // namespace rths
