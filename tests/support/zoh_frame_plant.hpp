#pragma once

// An independent simulation of FramePlantModel's transfer matrix for the UKF controller's tests and
// benchmark: every entry H_ij = k N(s) / D(s) in partial fractions over its four distinct poles, each
// mode x' = s_p x + u held over the step exact, x+ = e^(s_p dt) x + (e^(s_p dt) - 1) / s_p u (the
// zero-order hold a sampled actuator command is), read hardware-true: the reading of a tick is the
// state the earlier steps left, before that tick's command acts. It shares nothing with the
// controller's realisations but FramePlantModel's numbers.

#include <array>
#include <complex>
#include <cstddef>
#include <vector>

#include "node_physical/controllers/frame_plant_model.hpp"

namespace rths::test {

class ZohFramePlant {
 public:
  ZohFramePlant(const FramePlantModel& m, double dt_s) {
    using R = FramePlantModel::Root;
    using Complex = std::complex<double>;
    const auto& t = m.theta;
    const Complex frame(-t[R::kC1], t[R::kC2]);
    for (int j = 0; j < 2; ++j) {
      const std::array<Complex, 4> poles =
          j == 0 ? std::array<Complex, 4>{-t[R::kA1], -t[R::kA2], frame, std::conj(frame)}
                 : std::array<Complex, 4>{-t[R::kD1], -t[R::kD2], frame, std::conj(frame)};
      for (int i = 0; i < 2; ++i) {
        for (std::size_t p = 0; p < poles.size(); ++p) {
          const Complex s = poles[p];
          Complex numerator;
          if (j == 0) {
            numerator =
                m.gain[i == 0 ? FramePlantModel::kK11 : FramePlantModel::kK21] * (s + t[R::kB1]) * (s + t[R::kB2]);
          } else {
            numerator =
                m.gain[i == 0 ? FramePlantModel::kK12 : FramePlantModel::kK22] * (s + t[i == 0 ? R::kP1 : R::kP2]);
          }
          Complex denominator = 1.0;
          for (std::size_t q = 0; q < poles.size(); ++q) {
            if (q != p) denominator *= s - poles[q];
          }
          const Complex decay = std::exp(s * dt_s);
          modes_.push_back({decay, (decay - 1.0) / s, numerator / denominator, 0.0, i, j});
        }
      }
    }
  }

  // The reading at this tick, then the plant moves over the step with `u` held (mm in, mm out).
  std::array<double, 2> step(const std::array<double, 2>& u) {
    std::array<double, 2> y{};
    for (Mode& mode : modes_) {
      y[static_cast<std::size_t>(mode.output)] += (mode.residue * mode.state).real();
      mode.state = mode.decay * mode.state + mode.input * u[static_cast<std::size_t>(mode.input_index)];
    }
    return y;
  }

 private:
  struct Mode {
    std::complex<double> decay, input, residue, state;
    int output, input_index;
  };
  std::vector<Mode> modes_;
};

}  // namespace rths::test
