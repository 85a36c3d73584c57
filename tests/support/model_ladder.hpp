// What the tests of the example ladder's models share: the record they are shaken with, and a damped
// oscillator stepped exactly, the reference a modal solution is summed from.
#pragma once

#include <filesystem>
#include <string>

#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>

#include "support/test_support.hpp"

namespace rths::test {

// El Centro 1940 NS, from the repository's copy.
inline std::string ladder_record() {
  return (source_dir() / "examples/data/ground_motions/elcentro_1940_ns_g.dat").string();
}

// x'' + 2 zeta w x' + w^2 x = p(t), p linear over each step of dt, stepped exactly: the state [x, v]
// with the input p and its constant slope appended, d/dt [x v p p'] = [[0 1 0 0] [-w^2 -2 zeta w 1 0]
// [0 0 0 1] [0 0 0 0]] [x v p p'], advanced by the exponential of that matrix times dt (exact for any
// zeta: the stiffness-proportional damping overdamps the building's highest modes).
struct ExactStep {
  Eigen::Matrix4d transition;
  double dt;
  ExactStep(double w, double zeta, double step_s) : dt(step_s) {
    Eigen::Matrix4d a = Eigen::Matrix4d::Zero();
    a(0, 1) = 1.0;
    a(1, 0) = -w * w;
    a(1, 1) = -2.0 * zeta * w;
    a(1, 2) = 1.0;
    a(2, 3) = 1.0;
    transition = (a * dt).exp();
  }
  void step(double& x, double& v, double p0, double p1) const {
    const Eigen::Vector4d z = transition * Eigen::Vector4d(x, v, p0, (p1 - p0) / dt);
    x = z(0);
    v = z(1);
  }
};

}  // namespace rths::test
