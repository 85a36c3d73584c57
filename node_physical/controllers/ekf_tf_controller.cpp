#include "node_physical/controllers/ekf_tf_controller.hpp"

#include <cmath>
#include <memory>

namespace rths {

EkfTfInverseDynamicsController::EkfTfInverseDynamicsController(const config::EkfTfInverseDynamics& parameters,
                                                               const FramePlantModel& initial, double rate_hz)
    : TfInverseDynamicsController("EKF-TF", parameters, initial, rate_hz) {}

bool EkfTfInverseDynamicsController::correct(const Input& reading, const Input& command) {
  RootEstimate<kRoots>& e = tf_.estimate;
  const RootEstimate<kRoots>::Covariance prior = e.p_next;
  FrameCommandModel::Jacobian h;
  const Input predicted = tf_.model.predict(e.x, reading, &h);
  return ekf_update(e, e.x, prior, h, Input(command - predicted), measurement_noise_);
}

namespace {

void validate(const config::EkfTfInverseDynamics& ekf, const ComponentContext& context, const Checker& check) {
  validate_inverse_dynamics(ekf, context, check);
}

std::unique_ptr<SiteController> make(const config::EkfTfInverseDynamics& ekf, const ComponentContext& context) {
  return std::make_unique<EkfTfInverseDynamicsController>(ekf, initial_model_of(ekf, context), context.rate_hz);
}

[[maybe_unused]] const bool kEkfTfControllerRegistered =
    register_site_controller<config::EkfTfInverseDynamics>(validate, make);

}  // namespace
}  // namespace rths
