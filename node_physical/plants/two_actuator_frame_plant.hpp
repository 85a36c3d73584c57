#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <Eigen/Core>

#include "common/core/random.hpp"
#include "experiment.pb.h"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/plants/site_plants.hpp"
#include "results.pb.h"

namespace rths {

// One member of the maRTHS plant family (seed 000 §2.10, seed 001 Table 1, the benchmark's
// fcn_build_uncert_plant.m): each root x of the nominal model becomes x (1 + sd n), n ~ N(0, 1),
// with its group's relative sd (b1, b2: column1_zero_sd; a1, a2: column1_pole_sd; p1, p2, d1, d2:
// column2_sd; c1 and c2 one draw together, frame_pole_sd: the frame's complex pole moves along its
// ray, as the package multiplies the complex pole by one real number). Then every gain is rescaled so
// that its entry's static gain H_ij(0) is the nominal one. The package rescales at the first
// frequency of a Bode grid (0.01 Hz for H11, MATLAB's automatic grid for the others), an
// approximation of DC; this uses DC exactly, so the uncertainty never changes the static coupling.
//
// Draws come from the project's own generator (common/core/random.hpp), seeded with the uncertainty's
// seed on a stream of its own (a run whose noise seed equals it gets independent noise), in the
// order of theta with c1 and c2 as one: a1 a2 b1 b2 (c1 c2) p1 p2 d1 d2. The same seed gives the
// same plant on every platform.
//
// A root never comes out <= 0 (a pole there is an unstable or marginal plant, not an uncertain
// version of this one): a factor 1 + sd n <= 0 is drawn again, so each root follows the normal law
// truncated at 0. At the benchmark's sd (at most 6 %) that needs n below -16 and never happens; at
// a robustness study's larger sd every seed still gives a plant. Each attempt succeeds with
// probability above 1/2, whatever the sd.
// For an uncertainty that passed the rules (validate_frame_plant_model: every sd finite and >= 0, a
// seed from 1; the results reserve 0 for the nominal plant).
FramePlantModel draw_uncertain(const FramePlantModel& nominal, const config::PlantUncertainty& uncertainty);

// The maRTHS benchmark's simulated control plant behind a site's two actuators (seed 000 §2.5, Eqs.
// 19-26, with its digest's errata; FramePlantModel): channel j is actuator j (0 the bottom one),
// commanded stroke in, measured stroke out, both in metres. H is dimensionless (its static gains
// are 0.86, 0.13 / 0.14, 0.93), so the package's mm -> mm model is the same m -> m.
//
// Realisation: not the package's 8-state canonical form (entries from 1 to 1.7e7). Each column j is
// one input driving a chain of sections with unit static gain, all states of the same order of
// magnitude:
//   frame        f' = wn g,  g' = -wn f - 2 c1 g + wn u_j     (F(s) = s^2 + 2 c1 s + wn^2, wn^2 = c1^2 + c2^2)
//   column 0     two lead-lags (a/b)(s + b)/(s + a):  z' = -a z + a in,  out = (a/b) in + (1 - a/b) z,
//                f -> (a1, b1) -> (a2, b2) -> y; y_i = H_i0(0) y       (H21 = k21 / k11 H11)
//   column 1     two lags d/(s + d): v' = -d1 v + d1 f, w' = -d2 w + d2 v; the zero (s + p_i)/p_i as
//                y_i = H_i1(0) (w + d2 (v - w) / p_i)                   (one chain, two output rows)
// Each column's 4 states are discretised exactly by zero-order hold (common/dynamics/linear_system.hpp) at
// the site's rate; the commands are held over the step, as a D/A converter holds them. The sampled
// model is then exact at the ticks for commands that are constant over each step.
//
// Timing is hardware-true (PlantDriver): exchange() returns the strokes read at the step's tick --
// the state the earlier steps left, before this step's command acts -- then advances the state over
// the step with the command held. The first reading is the plant at rest (0), whatever the first
// command. Measured stroke: the model's output plus seeded Gaussian noise (config SensorNoise
// displacement_sd_m, one stream per actuator: stream i of the noise seed). Measured velocity: the
// noiseless output's exact derivative at the tick, y' = C A x (every entry has relative degree 2 or
// more, so C B = 0 and the derivative does not jump with the new command); a controller that wants
// what an LVDT's derivative would give differences the measured strokes itself. Measured force: 0
// (a maRTHS site takes its force from a model of the frame, seed 000 §5.2, not from load cells).
class TwoActuatorFramePlant final : public PlantDriver {
 public:
  // model: roots finite and > 0, gains finite and nonzero; rate_hz > 0; noise.displacement_sd_m
  // finite and >= 0, noise.force_sd_n 0 (there is no force measurement to add it to): what the rules
  // of the site's actuator_plant hold (validate_frame_plant_model and the site's), which every config
  // passes before a plant is built. uncertainty_seed: what the report says the model was drawn with
  // (0: the nominal plant).
  // common_noise: both readings get the same noise sample (the benchmark package's shared seed).
  TwoActuatorFramePlant(const FramePlantModel& model, const config::SensorNoise& noise, double rate_hz,
                        std::uint64_t uncertainty_seed = 0, bool common_noise = false);

  [[nodiscard]] std::size_t channels() const override { return 2; }
  // Real-time: no allocation. False (fault() says why, measured holds the last readings, the state is
  // untouched) on a step length other than the rate's, a command that is not finite, or spans of
  // other than 2 entries.
  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) override;
  [[nodiscard]] std::string fault() const override;
  // The roots and gains as run, the uncertainty's seed and the noise, the same on either channel.
  void report(std::size_t channel, results::PlantReport& out) const override;

  [[nodiscard]] const FramePlantModel& model() const { return model_; }
  [[nodiscard]] double dt_s() const { return dt_s_; }

 private:
  // One column: the input's chain of sections, stepped exactly; output rows for both actuators.
  struct Column {
    Eigen::Matrix4d a_d;                 // ZOH state transition
    Eigen::Vector4d b_d;                 // ZOH input
    Eigen::Matrix<double, 2, 4> c;       // strokes of actuators 0 and 1
    Eigen::Matrix<double, 2, 4> c_rate;  // C A of the continuous chain: the strokes' derivatives
    Eigen::Vector4d x = Eigen::Vector4d::Zero();
  };
  enum class Fault : std::uint8_t { kNone, kSpans, kStep, kCommand };

  void build_columns();

  FramePlantModel model_;
  config::SensorNoise noise_;
  bool common_noise_ = false;
  double dt_s_;
  std::uint64_t uncertainty_seed_;
  std::array<Column, 2> columns_{};
  std::array<Rng, 2> noise_streams_;
  std::array<Measurement, 2> last_{};  // the last readings returned (what a failed step leaves)
  Fault fault_ = Fault::kNone;
  std::size_t fault_actuator_ = 0;
  double fault_value_ = 0.0;  // the step length or command a fault refused
};

// The site's actuator plant from its config (config::ActuatorPlant, which passed the site's rules):
// the nominal model, drawn from its uncertainty when one is given.
std::unique_ptr<PlantDriver> make_actuator_plant(const config::ActuatorPlant& plant, double rate_hz);

}  // namespace rths
