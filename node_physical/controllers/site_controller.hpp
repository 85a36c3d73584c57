#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/interfaces/measurement.hpp"
#include "results.pb.h"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// The controller of a multi-axial site (config Site.actuator_controller), in actuator coordinates:
// every actuator's stroke target in, every actuator's stroke command out, in one call, so that a
// controller may couple the actuators (seed 003's UKF) or not (seed 001's decentralised RLS). It
// sits between the setup transformation and the actuators (SetupDriver): targets are the strokes the
// setup computes from the interface targets, `previous` what the actuators read at the step before
// (hardware-true: the measurement of this step is read after this command is written).
//
// command() runs in the site's step: spans of exactly actuators() entries, no allocation, no locks,
// no I/O. A command that is not finite or beyond an actuator's stroke limit never reaches it: the
// caller checks every entry before anything is sent.
class SiteController {
 public:
  SiteController() = default;
  SiteController(const SiteController&) = delete;
  SiteController& operator=(const SiteController&) = delete;
  SiteController(SiteController&&) = delete;
  SiteController& operator=(SiteController&&) = delete;
  virtual ~SiteController() = default;

  [[nodiscard]] virtual std::size_t actuators() const = 0;
  virtual void command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
                       std::span<InterfaceMotion> commands, double dt_s) = 0;
  // What the run summaries say about actuator i's controller; after the run, off the hot path.
  virtual void report(std::size_t actuator, results::ControllerReport& out) const = 0;
  // What went wrong that the operator must hear of (empty: nothing); after the run.
  [[nodiscard]] virtual std::string warning() const { return {}; }
  // The strokes the site passes on for this tick's reading (to the setup's map to the interface, and so
  // to the force estimate) when the controller filters them: seed 000's benchmark controller's eta_hat_m,
  // as in its loop (seed 000 Figs. 13A, 14, 22B). Called once per controlled step, after the exchange,
  // with that step's readings; false (the default): the readings pass on as they are. In the step.
  virtual bool filtered_strokes(std::span<const Measurement> /*measured*/, std::span<double> /*strokes_m*/) {
    return false;
  }
};

// The commands of a site controller that computes strokes only: each stroke's rate and acceleration by
// backward differences of the strokes it commanded (zero at the first steps). Nothing downstream of a
// stroke command reads them in the benchmark's actuators, and a controller without the target's higher
// derivatives cannot give them exactly. No allocation.
class StrokeCommands {
 public:
  explicit StrokeCommands(double dt_s) : dt_s_(dt_s) {}
  // The strokes of this step (m) into `commands`, one per actuator (at most 2).
  void write(const std::array<double, 2>& strokes_m, std::span<InterfaceMotion> commands) {
    for (std::size_t i = 0; i < commands.size() && i < strokes_m.size(); ++i) {
      const double rate = steps_ == 0 ? 0.0 : (strokes_m[i] - last_stroke_m_[i]) / dt_s_;
      const double accel = steps_ <= 1 ? 0.0 : (rate - last_rate_[i]) / dt_s_;
      commands[i] = {strokes_m[i], rate, accel};
      last_stroke_m_[i] = strokes_m[i];
      last_rate_[i] = rate;
    }
    ++steps_;
  }

 private:
  double dt_s_;
  std::array<double, 2> last_stroke_m_{};
  std::array<double, 2> last_rate_{};
  std::int64_t steps_ = 0;
};

// The site's actuator controller from its config (Site.actuator_controller, validated): the one
// registered for the message its oneof holds (register_site_controller).
std::unique_ptr<SiteController> make_site_controller(const config::Site& site, double rate_hz);

// Registers a site controller: its rules (the only statement of them) and its factory, keyed by its
// config message; the context has the site (its plant, its setup). One statement in its source file.
template <class Config>
bool register_site_controller(void (*validate)(const Config&, const ComponentContext&, const Checker&),
                              std::unique_ptr<SiteController> (*make)(const Config&,
                                                                      const ComponentContext&)) noexcept {
  return register_component<Config, SiteController>(validate, make);
}

}  // namespace rths
