#include "node_physical/controllers/lqg_controller.hpp"

#include <cmath>
#include <memory>
#include <optional>
#include <tuple>

#include <fmt/format.h>

namespace rths {

namespace {

FrameLqgWeights weights_of(const config::LqgBenchmark& p) {
  FrameLqgWeights w;
  w.output = p.output_weight();
  w.integral = {p.integral_weight_1(), p.integral_weight_2()};
  w.input = {p.input_weight_1(), p.input_weight_2()};
  w.process_noise = p.process_noise();
  w.measurement_noise = p.measurement_noise();
  return w;
}

template <class Matrix>
void append(const Matrix& m, google::protobuf::RepeatedField<double>& out) {
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) out.Add(m(i, j));
  }
}

}  // namespace

LqgController::LqgController(const config::LqgBenchmark& parameters, const FramePlantModel& model, double rate_hz)
    : lqg_(model, design_frame_lqg(model, weights_of(parameters), 1.0 / rate_hz), 1.0 / rate_hz),
      stroke_commands_(1.0 / rate_hz),
      filtered_onward_(parameters.filtered_strokes_onward()) {}

void LqgController::observe(std::span<const Measurement> measured) {
  const FrameLqg::Vector2 y{measured[0].displacement_m * kMillimetresPerMetre,
                            measured[1].displacement_m * kMillimetresPerMetre};
  const bool held = measured[0].held || measured[1].held || !y.allFinite();
  if (held) ++held_readings_;
  lqg_.observe(y, held);
}

void LqgController::command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
                            std::span<InterfaceMotion> commands, double /*dt_s*/) {
  if (!observed_) observe(previous);
  observed_ = false;
  const FrameLqg::Vector2 u = lqg_.command(
      {targets[0].displacement_m * kMillimetresPerMetre, targets[1].displacement_m * kMillimetresPerMetre});
  stroke_commands_.write({u[0] / kMillimetresPerMetre, u[1] / kMillimetresPerMetre}, commands);
}

bool LqgController::filtered_strokes(std::span<const Measurement> measured, std::span<double> strokes_m) {
  if (!filtered_onward_) return false;
  observe(measured);
  observed_ = true;
  strokes_m[0] = lqg_.estimated()[0] / kMillimetresPerMetre;
  strokes_m[1] = lqg_.estimated()[1] / kMillimetresPerMetre;
  return true;
}

void LqgController::report(std::size_t /*actuator*/, results::ControllerReport& out) const {
  results::LqgReport& r = *out.mutable_lqg();
  const FrameLqgDesign& d = lqg_.design();
  append(d.state_gain, *r.mutable_state_gain());
  append(d.integral_gain, *r.mutable_integral_gain());
  append(d.kalman_gain, *r.mutable_kalman_gain());
  r.set_held_readings(held_readings_);
}

std::string LqgController::warning() const {
  if (held_readings_ == 0) return {};
  return fmt::format("LQG: {} readings held or not finite; the filter predicted over them without a correction",
                     held_readings_);
}

namespace {

void validate(const config::LqgBenchmark& lqg, const ComponentContext& context, const Checker& check) {
  const std::optional<FramePlantModel> model = validate_model_source(lqg.has_model() ? &lqg.model() : nullptr, "model",
                                                                     "the plant the design is of", context, check);
  const bool weights_valid = check.section([&] {
    for (const auto& [name, value, zero_allowed] : {std::tuple{"output_weight", lqg.output_weight(), true},
                                                    std::tuple{"integral_weight_1", lqg.integral_weight_1(), false},
                                                    std::tuple{"integral_weight_2", lqg.integral_weight_2(), false},
                                                    std::tuple{"input_weight_1", lqg.input_weight_1(), false},
                                                    std::tuple{"input_weight_2", lqg.input_weight_2(), false},
                                                    std::tuple{"process_noise", lqg.process_noise(), true},
                                                    std::tuple{"measurement_noise", lqg.measurement_noise(), false}}) {
      check.expect(std::isfinite(value) && (zero_allowed ? value >= 0 : value > 0), name,
                   fmt::format("is {}, expected a finite value {}", value, zero_allowed ? ">= 0" : "> 0"));
    }
  });
  if (!model || !weights_valid) return;
  // A rule of the model and the weights together: the design the build makes must exist. It is made
  // here too (the regulator's Riccati equation on ten states, the filter's on eight: about 0.05 ms),
  // so that a design that fails is refused with the config's other problems (exit 2), not at the build.
  try {
    static_cast<void>(design_frame_lqg(*model, weights_of(lqg), 1.0 / context.rate_hz));
  } catch (const std::invalid_argument& e) {
    check.expect(false, "",
                 fmt::format("{} for {} with output_weight {:g}, integral_weight_1 {:g}, integral_weight_2 {:g}, "
                             "input_weight_1 {:g}, input_weight_2 {:g}, process_noise {:g} and measurement_noise "
                             "{:g}; expected a model and weights whose regulator and filter exist (the default "
                             "weights: 1, 1e10, 1e9, 1, 1, 1e-4, 1.5e-4)",
                             e.what(), lqg.has_model() ? "its model" : "the site's actuator_plant", lqg.output_weight(),
                             lqg.integral_weight_1(), lqg.integral_weight_2(), lqg.input_weight_1(),
                             lqg.input_weight_2(), lqg.process_noise(), lqg.measurement_noise()));
  }
}

std::unique_ptr<SiteController> make(const config::LqgBenchmark& lqg, const ComponentContext& context) {
  return std::make_unique<LqgController>(lqg, model_of_site_or(lqg.has_model() ? &lqg.model() : nullptr, context),
                                         context.rate_hz);
}

[[maybe_unused]] const bool kLqgControllerRegistered = register_site_controller<config::LqgBenchmark>(validate, make);

}  // namespace
}  // namespace rths
