#include "rths/node_physical/frame_plant_model.hpp"

namespace rths {

FramePlantModel FramePlantModel::from_config(const config::TwoActuatorFramePlant& plant) {
  FramePlantModel m;
  m.gain = {plant.k11(), plant.k21(), plant.k12(), plant.k22()};
  m.theta = {plant.a1_rad_per_s(), plant.a2_rad_per_s(), plant.b1_rad_per_s(), plant.b2_rad_per_s(),
             plant.c1_rad_per_s(), plant.c2_rad_per_s(), plant.p1_rad_per_s(), plant.p2_rad_per_s(),
             plant.d1_rad_per_s(), plant.d2_rad_per_s()};
  return m;
}

std::complex<double> FramePlantModel::response(int i, int j, std::complex<double> s) const {
  const auto& t = theta;
  const std::complex<double> frame = (s + t[kC1]) * (s + t[kC1]) + t[kC2] * t[kC2];
  if (j == 0) {
    const double k = i == 0 ? gain[kK11] : gain[kK21];
    return k * (s + t[kB1]) * (s + t[kB2]) / ((s + t[kA1]) * (s + t[kA2]) * frame);
  }
  const double k = i == 0 ? gain[kK12] : gain[kK22];
  const double zero = i == 0 ? t[kP1] : t[kP2];
  return k * (s + zero) / ((s + t[kD1]) * (s + t[kD2]) * frame);
}

double FramePlantModel::static_gain(int i, int j) const {
  return response(i, j, 0.0).real();
}

}  // namespace rths
