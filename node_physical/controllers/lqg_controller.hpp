#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "experiment.pb.h"
#include "node_physical/controllers/frame_lqg.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/site_controller.hpp"
#include "results.pb.h"

namespace rths {

// Seed 000's benchmark controller at a maRTHS site (config actuator_controller { lqg {...} }): the
// integral-augmented LQR with its Kalman filter (FrameLqg), in actuator coordinates, signals in mm
// inside. A held reading (or one that is not finite) is not corrected on: the filter predicts over the
// step, and the operator hears how many there were. As in seed 000's loop, the filter's strokes
// eta_hat_m pass on to the setup's map to the interface, and so to the force estimate, instead of the
// readings (filtered_strokes_onward; the site's records keep the readings).
class LqgController final : public SiteController {
 public:
  // The loop runs in mm, the units of the design's weights. The controller is linear and its gains do
  // not depend on the units, so another scale in and out would cancel: there is no signal_scale.
  static constexpr double kMillimetresPerMetre = 1000.0;

  // Throws std::invalid_argument for weights the design refuses or a model without a stable loop.
  LqgController(const config::LqgBenchmark& parameters, const FramePlantModel& model, double rate_hz);

  [[nodiscard]] std::size_t actuators() const override { return 2; }
  void command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
               std::span<InterfaceMotion> commands, double dt_s) override;
  void report(std::size_t actuator, results::ControllerReport& out) const override;
  [[nodiscard]] std::string warning() const override;
  // eta_hat_m of this step's reading passed on (config filtered_strokes_onward, seed 000's loop).
  bool filtered_strokes(std::span<const Measurement> measured, std::span<double> strokes_m) override;

  // eta_hat_m: the filtered strokes of the last reading (m).
  [[nodiscard]] FrameLqg::Vector2 estimated_strokes_m() const { return lqg_.estimated() / kMillimetresPerMetre; }
  [[nodiscard]] const FrameLqgDesign& design() const { return lqg_.design(); }

 private:
  FrameLqg lqg_;
  StrokeCommands stroke_commands_;
  bool filtered_onward_;
  bool observed_ = false;  // this tick's reading went to the filter already (filtered_strokes)
  std::uint64_t held_readings_ = 0;

  void observe(std::span<const Measurement> measured);
};

}  // namespace rths
