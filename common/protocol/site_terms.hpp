#pragma once

#include <string>

#include "experiment.pb.h"
#include "wire.pb.h"

namespace rths {

// What a site is, as both ends derive it from their configs: rate, channels, stroke limits,
// compensation mode and the prediction models' digest (docs/architecture.md §5: the two Smith parts must hold the
// same model). Exchanged in hello/welcome before any motion. model_description is the canonical text
// of the site's models (describe_site_models of smith_predictor/site_models/site_models.hpp, which both
// nodes call); the digest is taken over it.
wire::SiteTerms site_terms(const config::Experiment& experiment, const config::Site& site,
                           const std::string& model_description);

// Empty when both ends agree; otherwise one line naming the first field that differs and both
// values, e.g. `prediction model differs in alpha_a_n_per_m: 2532 at the numerical node, 3584 at
// the site`.
std::string terms_mismatch(const wire::SiteTerms& numerical, const wire::SiteTerms& site);

}  // namespace rths
