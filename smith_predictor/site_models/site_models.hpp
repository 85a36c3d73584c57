#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths::config {
class Model;
class Site;
}  // namespace rths::config

namespace rths {

// The model a validated config describes: the one registered for the member its oneof holds
// (docs/architecture.md §9; the models are in smith_predictor/models/, linked whole through
// rths_components). Throws std::invalid_argument when the oneof holds none, which the config validator
// refuses (kept as a guard for a model built outside a config).
std::unique_ptr<PredictionModel> make_model(const config::Model& model);

// FNV-1a over describe(): equal for both Smith parts exactly when their parameters are equal.
std::uint64_t model_digest(const PredictionModel& model);

// The models a site's Smith predictor holds, as the handshake compares them (site_terms of
// common/protocol/site_terms.hpp): the site's frame prediction model where it has one, else each channel's
// prediction model (its specimen where it has none; "none" for a channel with neither), described,
// joined by " | ".
std::string describe_site_models(const config::Site& site);

}  // namespace rths
