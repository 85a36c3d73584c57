#include "node_physical/controllers/frame_command_model.hpp"

namespace rths {

namespace {

FrameInverseCommand::Roots roots_of(const FrameCommandModel::Theta& theta) {
  FrameInverseCommand::Roots roots{};
  for (int r = 0; r < FrameCommandModel::kRoots; ++r) roots[r] = theta[r];
  return roots;
}

}  // namespace

FrameCommandModel::FrameCommandModel(const FramePlantModel& initial, double dt_s)
    : model_(initial),
      // The cubic through the last four readings, whatever the command law's window: they are
      // low-passed, and it interpolates at the half step (docs/marths-ukf.md, TF-1 and TF-2).
      inverse_(initial, dt_s, FrameInverseCommand::kHalfStepBack, true, FrameInverseCommand::kMinTargetWindow) {}

void FrameCommandModel::start(const Input& measured) {
  inverse_.step({measured[0], measured[1]});
}

FrameCommandModel::Input FrameCommandModel::predict(const Theta& theta, const Input& measured,
                                                    Jacobian* jacobian) const {
  FrameInverseCommand::RootJacobian d{};
  const FrameInverseCommand::Vector2 u =
      inverse_.command_under(roots_of(theta), {measured[0], measured[1]}, jacobian == nullptr ? nullptr : &d);
  if (jacobian != nullptr) {
    for (int i = 0; i < 2; ++i) {
      for (int r = 0; r < kRoots; ++r) (*jacobian)(i, r) = d[i][r];
    }
  }
  return {u[0], u[1]};
}

void FrameCommandModel::advance(const Theta& theta, const Input* measured) {
  FramePlantModel next = model_;
  for (int r = 0; r < kRoots; ++r) next.theta[r] = theta[r];
  if (inverse_.set_model(next)) model_ = next;
  if (measured == nullptr) {
    inverse_.step(inverse_.extrapolated());
    readings_in_a_row_ = 0;
  } else {
    inverse_.step({(*measured)[0], (*measured)[1]});
    ++readings_in_a_row_;
  }
}

}  // namespace rths
