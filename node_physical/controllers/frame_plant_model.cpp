#include "node_physical/controllers/frame_plant_model.hpp"

#include <algorithm>

#include <cmath>
#include <string>
#include <utility>

#include <google/protobuf/descriptor.h>

#include <fmt/format.h>

#include "common/core/component_registry.hpp"

namespace rths {

FramePlantModel FramePlantModel::from_config(const config::TwoActuatorFramePlant& plant) {
  FramePlantModel m;
  m.gain = {plant.k11(), plant.k21(), plant.k12(), plant.k22()};
  m.theta = {plant.a1_rad_per_s(), plant.a2_rad_per_s(), plant.b1_rad_per_s(), plant.b2_rad_per_s(),
             plant.c1_rad_per_s(), plant.c2_rad_per_s(), plant.p1_rad_per_s(), plant.p2_rad_per_s(),
             plant.d1_rad_per_s(), plant.d2_rad_per_s()};
  return m;
}

std::complex<double> FramePlantModel::response(int i, int j, std::complex<double> s) const {
  const auto& t = theta;
  const std::complex<double> frame = (s + t[kC1]) * (s + t[kC1]) + t[kC2] * t[kC2];
  if (j == 0) {
    const double k = i == 0 ? gain[kK11] : gain[kK21];
    return k * (s + t[kB1]) * (s + t[kB2]) / ((s + t[kA1]) * (s + t[kA2]) * frame);
  }
  const double k = i == 0 ? gain[kK12] : gain[kK22];
  const double zero = i == 0 ? t[kP1] : t[kP2];
  return k * (s + zero) / ((s + t[kD1]) * (s + t[kD2]) * frame);
}

double FramePlantModel::static_gain(int i, int j) const {
  return response(i, j, 0.0).real();
}

bool FramePlantModel::well_formed() const {
  return std::all_of(theta.begin(), theta.end(), [](double r) { return positive_finite(r); }) &&
         std::all_of(gain.begin(), gain.end(), [](double k) { return std::isfinite(k) && k != 0.0; });
}

void validate_frame_plant_model(const config::TwoActuatorFramePlant& plant, const Checker& check) {
  namespace pb = google::protobuf;
  const pb::Descriptor& type = *config::TwoActuatorFramePlant::GetDescriptor();
  const pb::Reflection& reflection = *config::TwoActuatorFramePlant::GetReflection();
  for (int f = 0; f < type.field_count(); ++f) {
    const pb::FieldDescriptor& field = *type.field(f);
    if (field.cpp_type() != pb::FieldDescriptor::CPPTYPE_DOUBLE) continue;
    const bool root = field.name().ends_with("_rad_per_s");
    if (!check.expect(reflection.HasField(plant, &field), field.name(),
                      root ? "missing; expected the root's magnitude (rad/s, > 0; seed 000 Eqs. 25-26 times 2 pi)"
                           : "missing; expected the entry's gain (nonzero; seed 000's errata: k12 4.5394e6, k22 "
                             "1.9238e7)")) {
      continue;
    }
    const double value = reflection.GetDouble(plant, &field);
    check.expect(std::isfinite(value) && (root ? value > 0 : value != 0), field.name(),
                 fmt::format("is {}, expected {}", value, root ? "a root magnitude > 0 rad/s" : "a nonzero gain"));
  }
  if (plant.has_uncertainty()) {
    const auto& u = plant.uncertainty();
    const Checker uncertainty = check.at("uncertainty");
    uncertainty.expect(u.seed() != 0, "seed",
                       "is 0, expected a seed from 1 (the run summaries say 0 for the nominal plant)");
    for (const auto& [name, sd] :
         {std::pair{"column1_zero_sd", u.column1_zero_sd()}, std::pair{"column1_pole_sd", u.column1_pole_sd()},
          std::pair{"column2_sd", u.column2_sd()}, std::pair{"frame_pole_sd", u.frame_pole_sd()}}) {
      // A factor 1 + sd n <= 0 is drawn again (draw_uncertain), so a robustness study's large sd still
      // gives a plant of positive roots; the bound keeps 1 + sd n finite and the roots within decades.
      uncertainty.expect(std::isfinite(sd) && sd >= 0 && sd <= 10, name,
                         fmt::format("is {}, expected a relative standard deviation from 0 to 10 (seed 001 Table 1: "
                                     "0.03 to 0.06)",
                                     sd));
    }
  }
}

namespace {

void validate_as_plant(const config::TwoActuatorFramePlant& plant, const ComponentContext& /*context*/,
                       const Checker& check) {
  validate_frame_plant_model(plant, check);
}

// The plant's rules, registered here with the model they are about; the plant itself is built by
// the site's actuator_plant factory.
[[maybe_unused]] const bool kFramePlantModelRegistered =
    register_rules<config::TwoActuatorFramePlant>(validate_as_plant);

}  // namespace
std::optional<FramePlantModel> validate_model_source(const config::TwoActuatorFramePlant* model, const char* field,
                                                     const char* what, const ComponentContext& context,
                                                     const Checker& check) {
  const bool passed = check.section([&] {
    if (model != nullptr) {
      validate_frame_plant_model(*model, check.at(field));
      return;
    }
    check.expect(context.site != nullptr && context.site->actuator_plant().has_two_actuator_frame(), field,
                 fmt::format("missing, and the site has no actuator_plant {{ two_actuator_frame }} to start from; "
                             "expected {}",
                             what));
  });
  if (!passed) return std::nullopt;
  FramePlantModel built = model_of_site_or(model, context);
  if (!built.well_formed()) return std::nullopt;
  return built;
}

FramePlantModel model_of_site_or(const config::TwoActuatorFramePlant* model, const ComponentContext& context) {
  return FramePlantModel::from_config(model != nullptr ? *model : context.site->actuator_plant().two_actuator_frame());
}

}  // namespace rths
