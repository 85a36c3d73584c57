#pragma once

#include <memory>
#include <span>

#include <Eigen/Core>

#include "common/dynamics/ground_motion.hpp"
#include "node_numerical/structure/hysteretic_spring.hpp"
#include "node_numerical/structure/structure.hpp"

namespace rths::config {
class Experiment;
}  // namespace rths::config

namespace rths {

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
  // The DOFs the interface force acts on (the sites' influence rows): an integrator may prepare for a
  // force that changes only there (KR-alpha forms its force correction for each once). Optional.
  virtual void set_force_dofs(std::span<const Eigen::Index> dofs) { (void)dofs; }
  // The model's hysteretic springs as the last step left them (model.springs' order; empty without).
  [[nodiscard]] virtual std::span<const HystereticLaw> springs() const { return {}; }
};

// Classical RK4 on the first-order form (seed 002 Eq. 7); the ground acceleration is evaluated at
// the stage times from the linearly interpolated record, the force is held.
std::unique_ptr<Integrator> make_rk4(const StructuralModel& model);
// Newmark constant average acceleration (beta = 1/4, gamma = 1/2), unconditionally stable; the
// force held over the step is the one applied at the end of the step.
std::unique_ptr<Integrator> make_newmark(const StructuralModel& model, double dt_s);
// Chen and Ricles (2008): explicit in displacement and velocity (the step's command needs only the
// state at t), unconditionally stable on a linear model, no numerical damping; the force is held
// over the step as with RK4. The model's hysteretic springs, if any, add their force beyond their
// initial stiffness at the displacement each step starts from: the step's equilibrium a(i) then holds
// with the springs' force at x(i), as a physical specimen's measured force would (no iteration).
std::unique_ptr<Integrator> make_chen_ricles(const StructuralModel& model, double dt_s);
// Kolay and Ricles (2014), KR-alpha: explicit in displacement and velocity like Chen-Ricles, with
// numerical damping set by the high-frequency spectral radius rho_infinity (0..1; 1 is Chen-Ricles).
// a(i) comes from the weighted equilibrium once the force of step i is known, at the start of the step.
// Hysteretic springs as with Chen-Ricles: in the weighted equilibrium their force is weighted like
// the sites' forces, (1 - alpha_f) f(x(i+1)) + alpha_f f(x(i)).
std::unique_ptr<Integrator> make_kr_alpha(const StructuralModel& model, double dt_s, double rho_infinity);
// Chung and Hulbert (1993), generalised-alpha: implicit, second order, numerical damping set by
// rho_infinity (1 is Newmark average acceleration); like Newmark, the force held over the step
// stands for the force at the step's end.
std::unique_ptr<Integrator> make_generalized_alpha(const StructuralModel& model, double dt_s, double rho_infinity);

// The integrator the config names (integrator, rho_infinity) at its rate, for model.
std::unique_ptr<Integrator> make_integrator(const config::Experiment& cfg, const StructuralModel& model);

}  // namespace rths
