#pragma once

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <memory>
#include <span>
#include <vector>

#include "rths/common/ground_motion.hpp"
#include "rths/common/structural_modes.hpp"
#include "rths/node_numerical/hysteretic_spring.hpp"

namespace rths::config {
class Experiment;
class Structure;
}  // namespace rths::config

namespace rths {

// Linear MDOF numerical substructure M x'' + C x' + K x = F - M Gamma a_g (seed 002 Eq. 6), held
// dense (mass, damping, stiffness) or, at an FE model's size, sparse (sparse_mass, sparse_damping,
// sparse_stiffness, every one n x n; the dense ones then empty): the integrators then multiply and
// factorise sparse.
struct StructuralModel {
  Eigen::MatrixXd mass;
  Eigen::MatrixXd damping;
  Eigen::MatrixXd stiffness;
  Eigen::SparseMatrix<double> sparse_mass;
  Eigen::SparseMatrix<double> sparse_damping;
  Eigen::SparseMatrix<double> sparse_stiffness;
  Eigen::VectorXd ground_influence;
  // Hysteretic springs: their initial stiffness is already in the stiffness above; an integrator
  // adds each one's force beyond that line, f(u) - k u, to the step's force (make_chen_ricles,
  // make_kr_alpha; the others refuse a model with springs).
  std::vector<SpringElement> springs;

  [[nodiscard]] bool is_sparse() const { return sparse_mass.rows() > 0; }
  [[nodiscard]] Eigen::Index dofs() const { return is_sparse() ? sparse_mass.rows() : mass.rows(); }
  // Undamped natural frequencies (rad/s), ascending.
  [[nodiscard]] Eigen::VectorXd natural_frequencies_rad_s() const;
};

// The same model held sparse (the dense matrices moved into sparse ones, the dense ones emptied), or
// dense: to compare the two forms, or to hold a small sparse model dense.
StructuralModel sparse_form(StructuralModel model);
StructuralModel dense_form(StructuralModel model);

// Rayleigh C = a0 M + a1 K with zeta at two modes (1-based mode numbers) of a sparse model, its modes
// from lowest_squared_frequencies (the dense one is in common's structural_modes.hpp).
Eigen::SparseMatrix<double> rayleigh_damping(const Eigen::SparseMatrix<double>& mass,
                                             const Eigen::SparseMatrix<double>& stiffness, int mode_a, double zeta_a,
                                             int mode_b, double zeta_b);
// The squared natural frequencies (rad^2/s^2) of a sparse model's `count` lowest modes, ascending
// (Lanczos with shift-invert, Spectra; dense below 200 DOFs).
Eigen::VectorXd lowest_squared_frequencies(const Eigen::SparseMatrix<double>& mass,
                                           const Eigen::SparseMatrix<double>& stiffness, int count);

// The modes of K phi = omega^2 M phi: the lowest `count`, ascending, each shape M-normalised
// (phi^T M phi = 1).
struct Modes {
  Eigen::VectorXd squared_frequencies;  // rad^2/s^2
  Eigen::MatrixXd shapes;               // dofs x count
};

// The lowest `count` modes of a model with a positive-definite stiffness: Lanczos with shift-invert
// about 0 (Spectra) above 200 DOFs, a dense symmetric eigensolver below (on L^-1 M L^-T with
// K = L L^T, so that massless DOFs, modes of infinite frequency, are never among the lowest). Throws
// std::invalid_argument when count is out of 1..dofs - 1 (all DOFs below 200 DOFs), more than the DOFs
// with mass, or the solver does not converge.
Modes lowest_modes(const StructuralModel& model, int count);

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
