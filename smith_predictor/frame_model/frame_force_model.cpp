#include "smith_predictor/frame_model/frame_force_model.hpp"

#include <Eigen/Core>
#include <Eigen/LU>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/config/frame_force_checks.hpp"

namespace rths {
namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RowMajor matrix(const google::protobuf::RepeatedField<double>& values, std::size_t n) {
  const auto size = static_cast<Eigen::Index>(n);
  return Eigen::Map<const RowMajor>(values.data(), size, size);
}

std::vector<double> row_major(const RowMajor& m) {
  return {m.data(), m.data() + m.size()};
}

}  // namespace

FrameForceModel::FrameForceModel(const config::FrameForceModel& model, std::size_t channels)
    : dofs_(model.dofs()), channels_(channels) {
  if (const auto problem = frame_force_model_problem(model, channels)) {
    throw std::invalid_argument(problem->field.empty() ? "force_model: " + problem->what
                                                       : "force_model." + problem->field + ": " + problem->what);
  }
  const auto n = static_cast<Eigen::Index>(dofs_);
  const auto c = static_cast<Eigen::Index>(channels_);
  const RowMajor k = matrix(model.stiffness_n_per_m(), dofs_);
  RowMajor t = RowMajor::Zero(n, c);
  t.topRows(c).setIdentity();
  if (n > c) {
    // Koo is invertible to kSetupRankTolerance (the rules above); full pivoting for its conditioning.
    t.bottomRows(n - c) = -k.bottomRightCorner(n - c, n - c).fullPivLu().solve(k.bottomLeftCorner(n - c, c));
  }
  condensation_ = row_major(t.bottomRows(n - c));
  mass_t_ = row_major(matrix(model.mass_kg(), dofs_) * t);
  damping_t_ = row_major(matrix(model.damping_ns_per_m(), dofs_) * t);
  stiffness_t_ = row_major(k * t);
  t_prev_.assign(channels_, 0.0);
  v_prev_.assign(channels_, 0.0);
  v_.assign(channels_, 0.0);
  a_.assign(channels_, 0.0);
  f_.assign(dofs_, 0.0);
  f_next_.assign(dofs_, 0.0);
}

bool FrameForceModel::step(std::span<const double> interface_displacement, std::span<double> forces, double dt_s) {
  if (interface_displacement.size() != channels_ || forces.size() != channels_ || !std::isfinite(dt_s) ||
      !(dt_s > 0.0)) {
    return false;
  }
  if (!std::all_of(interface_displacement.begin(), interface_displacement.end(),
                   [](double x) { return std::isfinite(x); })) {
    return false;
  }
  const auto& t = interface_displacement;
  for (std::size_t j = 0; j < channels_; ++j) {
    // Simulink's Derivative: 0 at the first step, then the backward difference of its input.
    v_[j] = first_step_ ? 0.0 : (t[j] - t_prev_[j]) / dt_s;
    a_[j] = first_step_ ? 0.0 : (v_[j] - v_prev_[j]) / dt_s;
  }
  bool finite = true;
  for (std::size_t i = 0; i < dofs_; ++i) {
    double f = 0.0;
    for (std::size_t j = 0; j < channels_; ++j) {
      const std::size_t at = i * channels_ + j;
      f += stiffness_t_[at] * t[j] + damping_t_[at] * v_[j] + mass_t_[at] * a_[j];
    }
    f_next_[i] = f;
    finite = finite && std::isfinite(f);
  }
  // Differences of finite inputs can still overflow (a jump of 1e300 over 1 ms).
  for (std::size_t j = 0; j < channels_; ++j) finite = finite && std::isfinite(v_[j]) && std::isfinite(a_[j]);
  if (!finite) {
    return false;
  }
  std::copy(t.begin(), t.end(), t_prev_.begin());
  std::copy(v_.begin(), v_.end(), v_prev_.begin());
  f_.swap(f_next_);
  std::copy_n(f_.begin(), channels_, forces.begin());
  first_step_ = false;
  return true;
}

void FrameForceModel::reset() {
  std::fill(t_prev_.begin(), t_prev_.end(), 0.0);
  std::fill(v_prev_.begin(), v_prev_.end(), 0.0);
  std::fill(f_.begin(), f_.end(), 0.0);
  first_step_ = true;
}

std::string describe_frame_model(const config::FrameForceModel& model) {
  const auto list = [](const google::protobuf::RepeatedField<double>& values) {
    return fmt::format("{:.17g}", fmt::join(values, ","));
  };
  return fmt::format("frame(dofs={}, mass_kg=[{}], damping_ns_per_m=[{}], stiffness_n_per_m=[{}])", model.dofs(),
                     list(model.mass_kg()), list(model.damping_ns_per_m()), list(model.stiffness_n_per_m()));
}

}  // namespace rths
