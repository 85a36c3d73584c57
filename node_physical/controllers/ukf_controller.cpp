#include "node_physical/controllers/ukf_controller.hpp"

#include <cmath>

namespace rths {

UkfInverseDynamicsController::UkfInverseDynamicsController(const config::UkfInverseDynamics& parameters,
                                                           const FramePlantModel& initial, double rate_hz)
    : InverseDynamicsController("UKF", parameters, initial, rate_hz),
      scheme_(frame_discretisation(parameters.discretisation())),
      process_noise_(parameters.process_noise()),
      measurement_noise_(parameters.measurement_noise()),
      estimate_(initial, parameters.initial_covariance()) {
  weights_ = UnscentedWeights::scaled(kAugmented, parameters.alpha(), parameters.beta(), parameters.kappa());
  sigma_.setZero();
  outputs_.setZero();
}

// One cycle of the scaled UT filter: the sigma points of the estimate through the model's step (when
// predicting) and its output, the propagated points reused for the measurement.
bool UkfInverseDynamicsController::estimate(const Input* measured, const Input& command, bool predict, Theta& theta) {
  Covariance root;
  if (!sigma_factor(estimate_.p, root)) return false;
  sigma_points(estimate_.x, root, weights_.spread, sigma_);
  const FrameStateModel::Gains& gain = model().gain;
  for (int i = 0; i < kSigmaPoints; ++i) {
    const Theta point_theta = sigma_.col(i).tail<kRoots>();
    FrameStateModel::State z = sigma_.col(i).head<kStates>();
    if (predict) {
      z = FrameStateModel::step(z, point_theta, gain, command, dt_s(), scheme_);
      sigma_.col(i).head<kStates>() = z;
    }
    outputs_.col(i) = FrameStateModel::output(z, point_theta, gain);
  }

  const Augmented mean = unscented_mean(weights_, sigma_);
  Covariance prior = unscented_covariance(weights_, sigma_, mean, sigma_, mean);
  if (predict) prior.diagonal().array() += process_noise_;
  if (measured == nullptr) {
    estimate_.x_next = mean;
    estimate_.p_next = prior;
    return propose(estimate_, theta);
  }
  return ukf_update(estimate_, weights_, mean, prior, sigma_, outputs_, *measured, measurement_noise_) &&
         propose(estimate_, theta);
}

std::unique_ptr<SiteController> make_ukf_controller(const config::UkfInverseDynamics& parameters,
                                                    const FramePlantModel& initial, double rate_hz) {
  return std::make_unique<UkfInverseDynamicsController>(parameters, initial, rate_hz);
}

namespace {

void validate(const config::UkfInverseDynamics& ukf, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(ukf, context, check);
  validate_sigma_points(ukf, UkfInverseDynamicsController::kAugmented, check);
}

std::unique_ptr<SiteController> make(const config::UkfInverseDynamics& ukf, const ComponentContext& context) {
  return make_ukf_controller(ukf, initial_model_of(ukf, context), context.rate_hz);
}

[[maybe_unused]] const bool kUkfControllerRegistered =
    register_site_controller<config::UkfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
