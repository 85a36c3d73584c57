#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace rths::config {
class Model;
class Site;
}  // namespace rths::config

namespace rths {

// Motion imposed on one channel of a specimen (SI).
struct InterfaceMotion {
  double displacement_m = 0.0;
  double velocity_m_per_s = 0.0;
  double acceleration_m_per_s2 = 0.0;
};

// A model of one specimen channel: the restoring force it develops under an imposed motion.
// The same classes serve as virtual specimens and as the Smith predictor's prediction models,
// which is what makes the model error exactly zero when the two share parameters.
//
// Timing contract (docs/architecture.md §3): step() holds the motion of t_k over [t_k, t_k + dt), advances the
// internal state across the step and returns the force the specimen develops under that motion at
// the end of it; the caller holds that force over the step. Reading the force from the state at t_k
// instead would let a hysteretic force lag its motion by one step: on the seed 002 damper at 3 V
// that costs 0.5 % of the floor-1 peak at 1024 Hz, against 0.03 % this way (both against a run at
// 16384 Hz), and this is the convention of docs/reference-values.md. It allocates nothing.
class PredictionModel {
 public:
  PredictionModel() = default;
  PredictionModel(const PredictionModel&) = default;
  PredictionModel& operator=(const PredictionModel&) = default;
  PredictionModel(PredictionModel&&) = default;
  PredictionModel& operator=(PredictionModel&&) = default;
  virtual ~PredictionModel() = default;

  virtual double step(const InterfaceMotion& motion, double dt_s) = 0;
  // Back to the initial (unforced, at rest) state.
  virtual void reset() = 0;
  [[nodiscard]] virtual std::unique_ptr<PredictionModel> clone() const = 0;
  // Canonical text of every parameter, for the handshake digest and the logs.
  [[nodiscard]] virtual std::string describe() const = 0;
};

// Builds the model a config describes. Throws ConfigError-free std::invalid_argument on a model the
// loader should already have rejected (kept as a guard).
std::unique_ptr<PredictionModel> make_model(const config::Model& model);

// FNV-1a over describe(): equal for both Smith parts exactly when their parameters are equal.
std::uint64_t model_digest(const PredictionModel& model);

// The models a site's Smith predictor holds, as the handshake compares them (site_terms of
// common/site_terms.hpp): the site's frame prediction model where it has one, else each channel's
// prediction model (its specimen where it has none; "none" for a channel with neither), described,
// joined by " | ".
std::string describe_site_models(const config::Site& site);

}  // namespace rths
