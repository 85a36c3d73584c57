#include "node_physical/controllers/ukf_tf_controller.hpp"

#include <memory>

namespace rths {

UkfTfInverseDynamicsController::UkfTfInverseDynamicsController(const config::UkfTfInverseDynamics& parameters,
                                                               const FramePlantModel& initial, double rate_hz)
    : TfInverseDynamicsController("UKF-TF", parameters, initial, rate_hz),
      weights_(UnscentedWeights::scaled(kRoots, parameters.alpha(), parameters.beta(), parameters.kappa())) {
  sigma_.setZero();
  outputs_.setZero();
}

bool UkfTfInverseDynamicsController::correct(const Input& reading, const Input& command) {
  RootEstimate<kRoots>& e = tf_.estimate;
  const RootEstimate<kRoots>::Covariance prior = e.p_next;
  RootEstimate<kRoots>::Covariance root;
  if (!sigma_factor(prior, root)) return false;
  sigma_points(e.x, root, weights_.spread, sigma_);
  for (int i = 0; i < kSigmaPoints; ++i) outputs_.col(i) = tf_.model.predict(sigma_.col(i), reading, nullptr);
  return ukf_update(e, weights_, e.x, prior, sigma_, outputs_, command, measurement_noise_);
}

namespace {

void validate(const config::UkfTfInverseDynamics& ukf, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(ukf, context, check);
  validate_sigma_points(ukf, FramePlantModel::kRoots, check);
}

std::unique_ptr<SiteController> make(const config::UkfTfInverseDynamics& ukf, const ComponentContext& context) {
  return std::make_unique<UkfTfInverseDynamicsController>(ukf, initial_model_of(ukf, context), context.rate_hz);
}

[[maybe_unused]] const bool kUkfTfControllerRegistered =
    register_site_controller<config::UkfTfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
