#include "rths/smith_predictor/prediction_model.hpp"

#include <stdexcept>

#include "experiment.pb.h"
#include "rths/common/digest.hpp"
#include "rths/smith_predictor/bouc_wen_damper.hpp"
#include "rths/smith_predictor/frame_smith.hpp"
#include "rths/smith_predictor/linear_spring.hpp"

namespace rths {

std::unique_ptr<PredictionModel> make_model(const config::Model& model) {
  switch (model.kind_case()) {
    case config::Model::kSpring:
      return std::make_unique<LinearSpring>(model.spring().stiffness_n_per_m());
    case config::Model::kBoucWen: {
      const config::BoucWenDamper& c = model.bouc_wen();
      BoucWenDamper::Parameters p;
      p.alpha_a_n_per_m = c.alpha_a_n_per_m();
      p.alpha_b_n_per_m_v = c.alpha_b_n_per_m_v();
      p.c0a_ns_per_m = c.c0a_ns_per_m();
      p.c0b_ns_per_m_v = c.c0b_ns_per_m_v();
      p.c1a_ns_per_m = c.c1a_ns_per_m();
      p.c1b_ns_per_m_v = c.c1b_ns_per_m_v();
      p.k0_n_per_m = c.k0_n_per_m();
      p.k1_n_per_m = c.k1_n_per_m();
      p.x0_m = c.x0_m();
      p.gamma_per_m2 = c.gamma_per_m2();
      p.beta_per_m2 = c.beta_per_m2();
      p.a = c.a();
      p.n = c.n();
      p.eta_per_s = c.eta_per_s();
      p.voltage_v = c.voltage_v();
      p.substeps = c.substeps();
      return std::make_unique<BoucWenDamper>(p);
    }
    case config::Model::KIND_NOT_SET:
      break;
  }
  throw std::invalid_argument("make_model: the model names no kind (expected spring or bouc_wen)");
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
