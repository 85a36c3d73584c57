#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "experiment.pb.h"

namespace rths {

// The interface forces of a specimen from its model, driven by the measured interface motion (seed
// 000 §5.2, Eq. 31: f = M q'' + C q' + K q; the benchmark package's "Feedback Force Computation"
// block). The load cells of the maRTHS setup also carry the coupler's inertia, so its site feeds back
// this estimate instead.
//
// The model has n DOFs; its first `channels` are the site's channels t (for the maRTHS frame x and
// theta of the interface node), the other n - c are condensed statically: o = -Koo^-1 Kot t, q = [t; o]
// (the package's gain -inv(Koo)*Kot). Velocities and accelerations are backward differences at the
// site's step, as the package's two cascaded Simulink Derivative blocks give them at a fixed step:
//   q'_k = (q_k - q_{k-1}) / dt,   q''_k = (q'_k - q'_{k-1}) / dt,
// and both are 0 at the first step (Simulink's Derivative starts from an output of 0), so the second
// step's q'' is q'_1 / dt: the interface is taken as at rest at its first sample before the run.
// Both differences lag half a step: for a sinusoid of frequency w they are exact for the operator
// D = (1 - exp(-i w dt)) / dt = i w exp(-i w dt / 2) sinc(w dt / 2) instead of i w.
//
// forces are f's first c entries, in the model's own DOFs and signs (the package feeds back
// F27 = f1, M21 = -f2: the numerical substructure's sign of theta is the setup's business). The
// condensed DOFs' forces (the package's M29 = -f3 at the uncontrolled joint) have no stiffness part:
// Kot t + Koo o = 0 by the condensation; dof_forces() holds them for the record.
//
// step() runs in the site's step: no allocation, no locks, no I/O.
class FrameForceModel {
 public:
  // A model the config validator accepted (frame_force_model_problem); throws std::invalid_argument
  // with its field and sentence otherwise.
  FrameForceModel(const config::FrameForceModel& model, std::size_t channels);

  // One step of dt_s (> 0) with the interface displacements t (channels() entries, m and rad): the
  // channels' forces (channels() entries, N and N m). False when an input is not finite, dt_s is not
  // above 0, a span has the wrong size, or a force would not be finite: forces and the model's state
  // are then untouched, so the caller holds its last good values and stops.
  [[nodiscard]] bool step(std::span<const double> interface_displacement, std::span<double> forces, double dt_s);

  // Forgets the motion: the next step is a first step.
  void reset();

  [[nodiscard]] std::size_t dofs() const { return dofs_; }
  [[nodiscard]] std::size_t channels() const { return channels_; }
  // f of every DOF at the last good step (zeros before the first).
  [[nodiscard]] std::span<const double> dof_forces() const { return f_; }
  // -Koo^-1 Kot, (dofs - channels) x channels, row-major: the condensed DOFs per unit channel motion.
  [[nodiscard]] std::span<const double> condensation() const { return condensation_; }

 private:
  std::size_t dofs_;
  std::size_t channels_;
  std::vector<double> condensation_;
  // M T, C T and K T with T = [I; -Koo^-1 Kot]: n x c, row-major, so that f = (M T) t'' + (C T) t' +
  // (K T) t (the DOFs' motion is linear in the channels', so are its differences).
  std::vector<double> mass_t_;
  std::vector<double> damping_t_;
  std::vector<double> stiffness_t_;
  // The channels' last displacement and velocity; the step's velocity and acceleration; f.
  std::vector<double> t_prev_;
  std::vector<double> v_prev_;
  std::vector<double> v_;
  std::vector<double> a_;
  std::vector<double> f_;
  std::vector<double> f_next_;
  bool first_step_ = true;  // no good step since the start or reset()
};

// Canonical text of a frame prediction model (every number to 17 digits), for the handshake digest.
std::string describe_frame_model(const config::FrameForceModel& model);

}  // namespace rths
