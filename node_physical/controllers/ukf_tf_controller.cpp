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

bool UkfTfInverseDynamicsController::estimate(const Input* measured, const Input& command, bool predict, Theta& theta) {
  using Covariance = RootEstimate<kRoots>::Covariance;
  RootEstimate<kRoots>& e = tf_.estimate;
  const Input* reading = tf_.predict(measured, predict, process_noise_);
  if (reading == nullptr) return propose(e, theta);
  const Covariance prior = e.p_next;

  const Eigen::LLT<Covariance> llt(prior);
  const Covariance root = llt.matrixL();
  if (llt.info() != Eigen::Success || !root.allFinite()) {
    const Eigen::SelfAdjointEigenSolver<Covariance> eigen(prior, Eigen::EigenvaluesOnly);
    freeze(EstimateFreeze::kIndefinite, eigen.eigenvalues().minCoeff());
    return false;
  }
  sigma_points(Eigen::Matrix<double, kRoots, 1>(e.x), root, weights_.spread, sigma_);
  for (int i = 0; i < kSigmaPoints; ++i) outputs_.col(i) = tf_.model.predict(sigma_.col(i), *reading, nullptr);
  const Input output_mean = unscented_mean(weights_, outputs_);
  Eigen::Matrix2d innovation = unscented_covariance(weights_, outputs_, output_mean, outputs_, output_mean);
  innovation.diagonal().array() += measurement_noise_;
  if (!innovation_definite(innovation)) return false;
  const Eigen::Matrix<double, kRoots, 2> cross =
      unscented_covariance(weights_, sigma_, Theta(e.x), outputs_, output_mean);
  const Eigen::Matrix<double, kRoots, 2> gain = cross * innovation.inverse();
  e.x_next = e.x + gain * (command - output_mean);
  e.p_next = prior - gain * innovation * gain.transpose();
  return propose(e, theta);
}

namespace {

void validate(const config::UkfTfInverseDynamics& ukf, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(ukf, context, check);
  validate_sigma_points(ukf, FramePlantModel::kRoots, check);
}

std::unique_ptr<SiteController> make(const config::UkfTfInverseDynamics& ukf, const ComponentContext& context) {
  return std::make_unique<UkfTfInverseDynamicsController>(ukf, initial_model_of(ukf, context), context.rate_hz);
}

[[maybe_unused]] const bool kRegistered = register_site_controller<config::UkfTfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
