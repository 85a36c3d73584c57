#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace rths {

// How a site's actuators sit on its interface DOFs: OpenFresco's experimental setup (Schellenberg,
// Mahin & Fenves 2009, "Advanced implementation of hybrid simulation", PEER 2009/104, ch. 3; its
// ExperimentalSetup classes). The numerical node commands interface displacements; the rig moves
// actuators. The setup maps interface displacements to actuator strokes, and measured strokes and
// load-cell forces back to interface displacements and forces (docs/setup-transformations.md). Each
// kind is a class of node_physical/setups/, registered with its config message (a member of
// config::SetupTransform's oneof, docs/architecture.md §9) with its rules, its factory and the number
// of actuators it drives; the rest of the system holds this interface only.
//
// Units and signs: interface displacements in m along the site's channels; strokes in m, the
// change of an actuator's pin-to-pin length from its reference length, positive when it extends;
// an actuator force is its load cell's in N, positive in compression (the actuator pushes on the
// specimen), so that it does work on the stroke as the interface force does on the interface
// displacement.
//
// Every call below runs in the site's step: spans of exactly dofs() or actuators() entries (the
// caller sizes its buffers once), no allocation, no locks, no I/O. Each returns true on success,
// false when an input is not finite, a result would not be, or the configuration is outside the
// valid range (valid_range() says what it is): the outputs are then untouched, so the caller holds
// its last good values and stops.
class SetupTransform {
 public:
  SetupTransform(std::size_t dofs, std::size_t actuators) : dofs_(dofs), actuators_(actuators) {}
  SetupTransform(const SetupTransform&) = delete;
  SetupTransform& operator=(const SetupTransform&) = delete;
  SetupTransform(SetupTransform&&) = delete;
  SetupTransform& operator=(SetupTransform&&) = delete;
  virtual ~SetupTransform() = default;

  [[nodiscard]] std::size_t dofs() const { return dofs_; }
  [[nodiscard]] std::size_t actuators() const { return actuators_; }

  // Interface DOF displacements -> actuator strokes.
  [[nodiscard]] virtual bool strokes(std::span<const double> interface_displacement_m, std::span<double> strokes_m) = 0;

  // The strokes' rates at an interface displacement: J(u) v, J = d strokes / d u (a command may carry
  // a velocity).
  [[nodiscard]] virtual bool stroke_velocities(std::span<const double> interface_displacement_m,
                                               std::span<const double> interface_velocity_m_per_s,
                                               std::span<double> stroke_velocity_m_per_s) = 0;

  // Measured strokes -> interface displacements: the inverse of strokes(), exact for the geometric
  // setups, least squares for a matrix with more actuators than DOFs.
  [[nodiscard]] virtual bool interface_displacements(std::span<const double> strokes_m,
                                                     std::span<double> interface_displacement_m) = 0;

  // Load-cell forces -> generalised forces on the interface DOFs, at the deformed geometry the
  // measured strokes give: J^T f. By virtual work, f_interface . du = sum_i f_i ds_i for every du
  // and ds = J du, which for all du is f_interface = J^T f (the actuators are two-force members,
  // massless and pinned without friction: the power they deliver is the power the interface receives).
  [[nodiscard]] virtual bool interface_forces(std::span<const double> strokes_m,
                                              std::span<const double> actuator_forces_n,
                                              std::span<double> interface_forces_n) = 0;

  // The other way, for an emulated rig (rths-target): interface forces -> the load-cell forces that
  // produce them at the deformed geometry, the f with J^T f = f_interface of least norm (exact for as
  // many actuators as DOFs; with redundant actuators, the split in which they fight each other least).
  [[nodiscard]] virtual bool actuator_forces(std::span<const double> strokes_m,
                                             std::span<const double> interface_forces_n,
                                             std::span<double> actuator_forces_n) = 0;

  // The valid range in words and numbers, for the message of a site that stops on a false return
  // (off the step: it allocates).
  [[nodiscard]] virtual std::string valid_range() const = 0;

 private:
  std::size_t dofs_;
  std::size_t actuators_;
};

}  // namespace rths
