#include "node_physical/controllers/ekf_controller.hpp"

#include <cmath>

namespace rths {

EkfInverseDynamicsController::EkfInverseDynamicsController(const config::EkfInverseDynamics& parameters,
                                                           const FramePlantModel& initial, double rate_hz)
    : InverseDynamicsController("EKF", parameters, initial, rate_hz),
      scheme_(frame_discretisation(parameters.discretisation())),
      process_noise_(parameters.process_noise()),
      measurement_noise_(parameters.measurement_noise()),
      estimate_(initial, parameters.initial_covariance()) {}

bool EkfInverseDynamicsController::estimate(const Input* measured, const Input& command, bool predict, Theta& theta) {
  const FrameStateModel::Gains& gain = model().gain;
  Augmented x = estimate_.x;
  Covariance prior = estimate_.p;
  if (predict) {
    const FrameStateModel::State z = estimate_.x.head<kStates>();
    const Theta roots = estimate_.x.tail<kRoots>();
    FrameStateModel::State stepped;
    const FrameStateModel::StepJacobian top =
        FrameStateModel::step_jacobian(z, roots, gain, command, dt_s(), scheme_, &stepped);
    x.head<kStates>() = stepped;
    // F P F^T with F = [top; 0 I] (theta's rows are the identity's): with M = top P, the states' block
    // is M top^T, their cross-covariance with theta M's theta columns, and theta's own block P's.
    const Eigen::Matrix<double, kStates, kAugmented> m = top * estimate_.p;
    prior.topLeftCorner<kStates, kStates>() = m * top.transpose();
    prior.topRightCorner<kStates, kRoots>() = m.rightCols<kRoots>();
    prior.bottomLeftCorner<kRoots, kStates>() = m.rightCols<kRoots>().transpose();
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
  const Input residual = *measured - FrameStateModel::output(z, roots, gain);
  return ekf_update(estimate_, x, prior, h, residual, measurement_noise_) && propose(estimate_, theta);
}

namespace {

void validate(const config::EkfInverseDynamics& ekf, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(ekf, context, check);
}

std::unique_ptr<SiteController> make(const config::EkfInverseDynamics& ekf, const ComponentContext& context) {
  return std::make_unique<EkfInverseDynamicsController>(ekf, initial_model_of(ekf, context), context.rate_hz);
}

[[maybe_unused]] const bool kEkfControllerRegistered =
    register_site_controller<config::EkfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
