#pragma once

#include <Eigen/Dense>
#include <memory>

#include "rths/common/ground_motion.hpp"
#include "rths/common/structural_modes.hpp"

namespace rths::config {
class Structure;
}

namespace rths {

// Linear MDOF numerical substructure M x'' + C x' + K x = F - M Gamma a_g (seed 002 Eq. 6).
struct StructuralModel {
  Eigen::MatrixXd mass;
  Eigen::MatrixXd damping;
  Eigen::MatrixXd stiffness;
  Eigen::VectorXd ground_influence;

  [[nodiscard]] Eigen::Index dofs() const { return mass.rows(); }
  // Undamped natural frequencies (rad/s), ascending.
  [[nodiscard]] Eigen::VectorXd natural_frequencies_rad_s() const;
};

// Rayleigh C = a0 M + a1 K with zeta at two modes (1-based mode numbers).
Eigen::MatrixXd rayleigh_damping(const Eigen::MatrixXd& mass, const Eigen::MatrixXd& stiffness, int mode_a,
                                 double zeta_a, int mode_b, double zeta_b);

// The numerical substructure from a config the loader has validated: the structure's matrices and
// damping minus every removed part (seed 000 Eq. 5).
StructuralModel make_structure(const config::Structure& spec);
// The whole structure the config describes, before any part is removed: the monolithic reference of
// a structure with removed parts.
StructuralModel make_whole_structure(const config::Structure& spec);

struct StructuralState {
  Eigen::VectorXd displacement;  // relative to the ground (m)
  Eigen::VectorXd velocity;      // m/s
  Eigen::VectorXd acceleration;  // relative, m/s^2
};

// One integration step [t, t + dt) of the structure with the interface force vector held
// constant over the step. Implementations pre-size every temporary in their constructor: step()
// allocates nothing.
class Integrator {
 public:
  Integrator() = default;
  Integrator(const Integrator&) = delete;
  Integrator& operator=(const Integrator&) = delete;
  Integrator(Integrator&&) = delete;
  Integrator& operator=(Integrator&&) = delete;
  virtual ~Integrator() = default;

  // Sets state.acceleration consistent with the state at t (call once before stepping).
  virtual void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                          double t_s) = 0;
  virtual void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
                    double dt_s) = 0;
};

// Classical RK4 on the first-order form (seed 002 Eq. 7); the ground acceleration is evaluated at
// the stage times from the linearly interpolated record, the force is held.
std::unique_ptr<Integrator> make_rk4(const StructuralModel& model);
// Newmark constant average acceleration (beta = 1/4, gamma = 1/2), unconditionally stable; the
// force held over the step is the one applied at the end of the step.
std::unique_ptr<Integrator> make_newmark(const StructuralModel& model, double dt_s);
// Chen and Ricles (2008): explicit in displacement and velocity (the step's command needs only the
// state at t), unconditionally stable on a linear model, no numerical damping; the force is held
// over the step as with RK4.
std::unique_ptr<Integrator> make_chen_ricles(const StructuralModel& model, double dt_s);

}  // namespace rths
