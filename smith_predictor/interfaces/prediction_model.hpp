#pragma once

#include <complex>
#include <memory>
#include <string>

namespace rths {

// Motion imposed on one channel of a specimen (SI).
struct InterfaceMotion {
  double displacement_m = 0.0;
  double velocity_m_per_s = 0.0;
  double acceleration_m_per_s2 = 0.0;
};

// A model of one specimen channel: the restoring force it develops under an imposed motion.
// The same classes serve as virtual specimens and as the Smith predictor's prediction models,
// which is what makes the model error exactly zero when the two share parameters. Each model is a
// class of smith_predictor/models/, registered with its config message (a member of config::Model's
// oneof, docs/architecture.md §9); the rest of the system holds this interface only.
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
  // The model linearised about its initial state: its dynamic stiffness F / X at the circular
  // frequency w (N/m, complex; k + j w c for a spring k and a dashpot c), what the stability planner
  // adds to the structure (docs/stability.md). Off the hot path.
  [[nodiscard]] virtual std::complex<double> dynamic_stiffness(double omega_rad_s) const = 0;
};

}  // namespace rths
