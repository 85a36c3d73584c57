#include "smith_predictor/site_models/site_models.hpp"

#include <stdexcept>

#include <google/protobuf/descriptor.h>

#include <fmt/format.h>

#include "common/core/component_registry.hpp"
#include "common/core/digest.hpp"
#include "experiment.pb.h"
#include "smith_predictor/frame_model/frame_force_model.hpp"

namespace rths {

std::unique_ptr<PredictionModel> make_model(const config::Model& model) {
  std::unique_ptr<PredictionModel> made = ComponentFactories<PredictionModel>::make_member(model, "kind", {});
  if (made == nullptr) {
    // The oneof's members named from the schema, so that the sentence stays true as models are added.
    throw std::invalid_argument(fmt::format("make_model: the model names no kind (expected {})",
                                            registry::member_names(*config::Model::descriptor(), "kind")));
  }
  return made;
}

std::string describe_site_models(const config::Site& site) {
  if (site.compensation().has_frame_prediction()) {
    return describe_frame_model(site.compensation().frame_prediction());
  }
  std::string description;
  for (const auto& channel : site.channel()) {
    // A multi-axial site's channels have no model of their own (its force model is the site's).
    const bool modelled = channel.has_prediction() || channel.has_specimen();
    description +=
        (description.empty() ? "" : " | ") +
        (modelled ? make_model(channel.has_prediction() ? channel.prediction() : channel.specimen())->describe()
                  : std::string("none"));
  }
  return description;
}

std::uint64_t model_digest(const PredictionModel& model) {
  return fnv1a(model.describe());
}

}  // namespace rths
