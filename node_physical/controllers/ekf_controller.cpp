#include "node_physical/controllers/ekf_controller.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include <fmt/format.h>

namespace rths {

namespace {

bool positive_finite(double x) {
  return std::isfinite(x) && x > 0.0;
}

}  // namespace

EkfInverseDynamicsController::EkfInverseDynamicsController(const config::EkfInverseDynamics& parameters,
                                                           const FramePlantModel& initial, double rate_hz,
                                                           FrameDiscretisation scheme)
    : InverseDynamicsController("EKF", initial, rate_hz, parameters.signal_scale(), parameters.filter_order(),
                                parameters.filter_cutoff_hz()),
      scheme_(scheme),
      process_noise_(parameters.process_noise()),
      measurement_noise_(parameters.measurement_noise()),
      estimate_(initial, parameters.initial_covariance()) {
  const auto check = [](bool ok, const char* field, double value, const char* expected) {
    if (!ok) throw std::invalid_argument(fmt::format("EKF {} {}; expected {}", field, value, expected));
  };
  check(positive_finite(parameters.initial_covariance()), "initial_covariance", parameters.initial_covariance(),
        "> 0 (P0 = this x I; seed 003 Table 1: 1)");
  check(std::isfinite(process_noise_) && process_noise_ >= 0.0, "process_noise", process_noise_,
        ">= 0 (Q = this x I; seed 003 Table 1: 0)");
  check(positive_finite(measurement_noise_), "measurement_noise", measurement_noise_,
        "> 0 (R = this x I in mm^2; seed 003 Table 1: 1e-3)");
}

bool EkfInverseDynamicsController::estimate(const Input* measured, const Input& command, bool predict, Theta& theta) {
  const FrameStateModel::Gains& gain = model().gain;
  Augmented x = estimate_.x;
  Covariance prior = estimate_.p;
  if (predict) {
    const FrameStateModel::State z = estimate_.x.head<kStates>();
    const Theta roots = estimate_.x.tail<kRoots>();
    Covariance f = Covariance::Identity();
    f.topRows<kStates>() = FrameStateModel::step_jacobian(z, roots, gain, command, dt_s(), scheme_);
    x.head<kStates>() = FrameStateModel::step(z, roots, gain, command, dt_s(), scheme_);
    prior = f * estimate_.p * f.transpose();
    prior.diagonal().array() += process_noise_;
  }
  if (measured == nullptr) {
    estimate_.x_next = x;
    estimate_.p_next = prior;
    return propose(estimate_, theta);
  }
  const FrameStateModel::State z = x.head<kStates>();
  const Theta roots = x.tail<kRoots>();
  const FrameStateModel::OutputJacobian h = FrameStateModel::output_jacobian(z, roots, gain);
  const Eigen::Matrix<double, kAugmented, 2> ph = prior * h.transpose();
  Eigen::Matrix2d innovation = h * ph;
  innovation.diagonal().array() += measurement_noise_;
  const double determinant = innovation.determinant();
  if (!(innovation(0, 0) > 0.0) || !(determinant > 0.0)) {
    // The smaller eigenvalue of the symmetric 2 x 2 (what the freeze names).
    const double half_trace = innovation.trace() / 2.0;
    freeze(EstimateFreeze::kIndefinite, half_trace - std::sqrt(half_trace * half_trace - determinant));
    return false;
  }
  const Eigen::Matrix<double, kAugmented, 2> k = ph * innovation.inverse();
  estimate_.x_next = x + k * (*measured - FrameStateModel::output(z, roots, gain));
  const Covariance joseph = Covariance::Identity() - k * h;
  estimate_.p_next = joseph * prior * joseph.transpose() + measurement_noise_ * k * k.transpose();
  return propose(estimate_, theta);
}

namespace {

void validate(const config::EkfInverseDynamics& ekf, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(ekf.has_initial_model() ? &ekf.initial_model() : nullptr, ekf.signal_scale(),
                            ekf.filter_order(), ekf.filter_cutoff_hz(), context, check);
  for (const auto& [name, value, zero_allowed] : {std::tuple{"initial_covariance", ekf.initial_covariance(), false},
                                                  std::tuple{"process_noise", ekf.process_noise(), true},
                                                  std::tuple{"measurement_noise", ekf.measurement_noise(), false}}) {
    check.expect(std::isfinite(value) && (zero_allowed ? value >= 0 : value > 0), name,
                 fmt::format("is {}, expected a finite value {}", value, zero_allowed ? ">= 0" : "> 0"));
  }
}

std::unique_ptr<SiteController> make(const config::EkfInverseDynamics& ekf, const ComponentContext& context) {
  return std::make_unique<EkfInverseDynamicsController>(
      ekf, initial_model_of(ekf.has_initial_model() ? &ekf.initial_model() : nullptr, context), context.rate_hz);
}

[[maybe_unused]] const bool kRegistered = register_site_controller<config::EkfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
