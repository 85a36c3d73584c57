#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "node_physical/controllers/site_controller.hpp"
#include "node_physical/plants/setup_transform.hpp"
#include "node_physical/plants/site_plants.hpp"

namespace rths {

// A site's channels (its interface DOFs) driven through the actuators of a setup transformation
// (OpenFresco's ExperimentalSetup between the site and its ExperimentalControl; Schellenberg, Mahin &
// Fenves 2009, PEER 2009/104): the driver behind it speaks actuators -- stroke commands out, measured
// strokes and load-cell forces back -- and this one speaks the channels the controllers, the
// interlock, Smith part 2 and the records see.
//
// Each step, before anything is sent, check() computes the strokes of the controllers' commands and
// refuses the step (an interlock trip) when one is beyond its actuator's stroke limit or the commands
// leave the setup's valid range. exchange() sends each actuator its stroke, stroke velocity J v and
// stroke acceleration J a + (dJ/dt) v (the curvature term by a central difference of J v along the
// motion over one step, exact for a matrix, where it is 0); it maps what the actuators read back to
// the interface: displacements by the exact inverse (least squares for redundant actuators), forces
// by J^T f at the measured geometry, velocities by the inverse's derivative along the measured stroke
// velocities. A measurement outside the setup's valid range stops the site (the equipment reads a
// position the setup cannot be in). Hardware-true timing is the actuators' driver's: the setup adds
// no delay. Nothing in check() or exchange() allocates.
//
// Two options make it a multi-axial site (seed 000's maRTHS benchmark): an actuator controller
// (SiteController) between the setup's stroke targets and the actuators, whose commands are checked
// finite and inside their stroke limits before anything is sent (else the driver stops: nothing
// moves); and an interface force source, which gives the interface forces from the measured interface
// motion instead of the load cells (seed 000 §5.2).
class InterfaceForceSource {
 public:
  InterfaceForceSource() = default;
  InterfaceForceSource(const InterfaceForceSource&) = delete;
  InterfaceForceSource& operator=(const InterfaceForceSource&) = delete;
  InterfaceForceSource(InterfaceForceSource&&) = delete;
  InterfaceForceSource& operator=(InterfaceForceSource&&) = delete;
  virtual ~InterfaceForceSource() = default;
  // The forces at the measured interface displacements of this step (one each); false when not
  // finite. dt_s is the step (0: the reading before the first step). No allocation.
  [[nodiscard]] virtual bool step(std::span<const double> interface_displacement_m, std::span<double> forces_n,
                                  double dt_s) = 0;
};

class SetupDriver final : public PlantDriver, public ActuatorSpace {
 public:
  // stroke_limits_m: one per actuator (> 0). Throws std::invalid_argument when the counts disagree.
  SetupDriver(std::unique_ptr<SetupTransform> setup, std::vector<double> stroke_limits_m,
              std::unique_ptr<PlantDriver> actuators, std::unique_ptr<SiteController> controller = nullptr,
              std::unique_ptr<InterfaceForceSource> forces = nullptr);

  [[nodiscard]] std::size_t channels() const override { return setup_->dofs(); }
  void open(std::span<Measurement> measured) override;
  [[nodiscard]] InterlockTrip check(std::span<const InterfaceMotion> commands) override;
  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) override;
  // A ramp's step: the strokes go to the actuators without the actuator controller.
  bool move(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) override;
  // The actuator command that the last exchange() or move() refused (kActuatorStroke: beyond its
  // stroke limit; kActuatorNotFinite: a part not finite); nothing was sent.
  [[nodiscard]] InterlockTrip refused() const override { return refused_; }
  std::string disarm() override { return actuators_->disarm(); }
  // Any actuator's bits: every actuator of a setup can move every channel.
  [[nodiscard]] std::uint32_t status(std::size_t channel) const override;
  [[nodiscard]] std::string fault() const override;
  // The actuators' driver's report (channel c: actuator c, the last actuator for a channel beyond
  // them).
  void report(std::size_t channel, results::PlantReport& out) const override;

  // The strokes last wanted (from the setup), commanded (after the controller) and read, and the
  // load cells' forces (m, m, m, N; one per actuator).
  [[nodiscard]] const ActuatorSpace* actuator_space() const override { return this; }
  [[nodiscard]] std::size_t actuators() const override { return actuator_commands_.size(); }
  [[nodiscard]] std::span<const InterfaceMotion> actuator_targets() const override { return actuator_targets_; }
  [[nodiscard]] std::span<const InterfaceMotion> actuator_commands() const override { return actuator_commands_; }
  [[nodiscard]] std::span<const Measurement> actuator_measured() const override { return actuator_measured_; }
  void report_actuator_controller(std::size_t actuator, results::ControllerReport& out) const override;
  [[nodiscard]] std::string actuator_controller_warning() const override;

 private:
  enum class Fault : std::uint8_t { kNone, kCommandOutside, kMeasuredOutside };

  // exchange() and move(): through the actuator controller or past it.
  bool step(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s, bool controlled);

  // actuator_measured_ -> measured (interface); false when outside the setup's valid range or the
  // force source's forces are not finite.
  [[nodiscard]] bool to_interface(std::span<Measurement> measured, double dt_s);
  // The stroke accelerations of the commands in u_, v_, a_ into stroke_a_.
  [[nodiscard]] bool stroke_accelerations(double dt_s);

  std::unique_ptr<SetupTransform> setup_;
  std::vector<double> stroke_limits_m_;
  std::unique_ptr<PlantDriver> actuators_;
  std::unique_ptr<SiteController> controller_;
  std::unique_ptr<InterfaceForceSource> forces_;
  Fault fault_ = Fault::kNone;
  InterlockTrip refused_;  // the last exchange's refused controller command

  // Scratch, sized once: interface (dofs) and actuator (actuators) vectors.
  std::vector<double> u_, v_, a_, probe_u_, probe_rate_, measured_u_, measured_f_, shifted_u_;
  std::vector<double> strokes_, stroke_v_, stroke_a_, shifted_s_, read_s_, read_f_;
  // The controller's filtered strokes of this step's reading, passed on instead of it when `filtered_`
  // (SiteController::filtered_strokes).
  std::vector<double> filtered_s_;
  bool filtered_ = false;
  std::vector<InterfaceMotion> actuator_targets_;
  std::vector<InterfaceMotion> actuator_commands_;
  std::vector<Measurement> actuator_measured_;
  std::vector<Measurement> last_;  // the last interface measurement: held on a failure
};

}  // namespace rths
