#pragma once

#include <numbers>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_plant_model.hpp"

namespace rths::test {

// The maRTHS benchmark's nominal control plant, the one place the tests hold its numbers: seed 000
// Eqs. 25-26 with its digest's errata (roots printed in Hz, so 2 pi times each here; H12's gain
// 4.5394e6 and H22's 1.9238e7 from the package's ID_Control_plant_100Hz.mat and
// fcn_build_uncert_plant.m), the same as seed 001 Table 1's nominal values.
inline FramePlantModel marths_nominal_plant() {
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  FramePlantModel m;
  m.gain[FramePlantModel::kK11] = 2165.2;
  m.gain[FramePlantModel::kK21] = 349.95;
  m.gain[FramePlantModel::kK12] = 4.5394e6;
  m.gain[FramePlantModel::kK22] = 1.9238e7;
  m.theta[FramePlantModel::kA1] = kTwoPi * 2.65;  // column 0's poles
  m.theta[FramePlantModel::kA2] = kTwoPi * 40.0;
  m.theta[FramePlantModel::kB1] = kTwoPi * 120.0;  // column 0's zeros
  m.theta[FramePlantModel::kB2] = kTwoPi * 90.0;
  m.theta[FramePlantModel::kC1] = kTwoPi * 50.0;  // the frame's pole pair -c1 +- c2 j
  m.theta[FramePlantModel::kC2] = kTwoPi * 63.0;
  m.theta[FramePlantModel::kP1] = kTwoPi * 3.0;  // H12's zero
  m.theta[FramePlantModel::kP2] = kTwoPi * 5.0;  // H22's zero
  m.theta[FramePlantModel::kD1] = kTwoPi * 3.5;  // column 1's poles
  m.theta[FramePlantModel::kD2] = kTwoPi * 18.5;
  return m;
}

// The same plant as a config's two_actuator_frame (no uncertainty).
inline config::TwoActuatorFramePlant marths_nominal_plant_config() {
  const FramePlantModel m = marths_nominal_plant();
  config::TwoActuatorFramePlant c;
  c.set_k11(m.gain[FramePlantModel::kK11]);
  c.set_k21(m.gain[FramePlantModel::kK21]);
  c.set_k12(m.gain[FramePlantModel::kK12]);
  c.set_k22(m.gain[FramePlantModel::kK22]);
  c.set_a1_rad_per_s(m.theta[FramePlantModel::kA1]);
  c.set_a2_rad_per_s(m.theta[FramePlantModel::kA2]);
  c.set_b1_rad_per_s(m.theta[FramePlantModel::kB1]);
  c.set_b2_rad_per_s(m.theta[FramePlantModel::kB2]);
  c.set_c1_rad_per_s(m.theta[FramePlantModel::kC1]);
  c.set_c2_rad_per_s(m.theta[FramePlantModel::kC2]);
  c.set_p1_rad_per_s(m.theta[FramePlantModel::kP1]);
  c.set_p2_rad_per_s(m.theta[FramePlantModel::kP2]);
  c.set_d1_rad_per_s(m.theta[FramePlantModel::kD1]);
  c.set_d2_rad_per_s(m.theta[FramePlantModel::kD2]);
  return c;
}

}  // namespace rths::test
