#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "rths/node_numerical/structure.hpp"

namespace rths {

namespace {

void check_model(const StructuralModel& model, const char* integrator) {
  const Eigen::Index n = model.dofs();
  const auto square = [n](const Eigen::MatrixXd& m) { return m.rows() == n && m.cols() == n; };
  if (n < 1 || !square(model.mass) || !square(model.damping) || !square(model.stiffness) ||
      model.ground_influence.size() != n) {
    throw std::invalid_argument(
        std::string(integrator) + ": structural model has mass " + std::to_string(model.mass.rows()) + "x" +
        std::to_string(model.mass.cols()) + ", damping " + std::to_string(model.damping.rows()) + "x" +
        std::to_string(model.damping.cols()) + ", stiffness " + std::to_string(model.stiffness.rows()) + "x" +
        std::to_string(model.stiffness.cols()) + ", ground influence " + std::to_string(model.ground_influence.size()) +
        "; expected n x n matrices and n entries");
  }
}

void check_state(const StructuralState& state, const Eigen::VectorXd& force, Eigen::Index dofs,
                 const char* integrator) {
  if (state.displacement.size() != dofs || state.velocity.size() != dofs || state.acceleration.size() != dofs ||
      force.size() != dofs) {
    throw std::invalid_argument(
        std::string(integrator) + ": state vectors (" + std::to_string(state.displacement.size()) + ", " +
        std::to_string(state.velocity.size()) + ", " + std::to_string(state.acceleration.size()) + ") and force (" +
        std::to_string(force.size()) + ") must all have " + std::to_string(dofs) +
        " entries, sized before the loop so that step() allocates nothing");
  }
}

// The relative acceleration of an integrator that solves equilibrium for it with M^-1 formed once:
// a = M^-1 (F - C v - K x) - Gamma a_g (seed 002 Eq. 6 solved for x''). set_force() takes the
// force the step holds; at() allocates nothing.
class ExplicitAcceleration {
 public:
  ExplicitAcceleration(const StructuralModel& model, const char* integrator) {
    const Eigen::FullPivLU<Eigen::MatrixXd> mass_lu(model.mass);
    if (!mass_lu.isInvertible()) {
      throw std::invalid_argument(std::string(integrator) +
                                  ": the mass matrix is singular; every DOF needs mass (condense massless DOFs first)");
    }
    mass_inverse_ = mass_lu.inverse();
    mass_inverse_damping_ = mass_inverse_ * model.damping;
    mass_inverse_stiffness_ = mass_inverse_ * model.stiffness;
    ground_influence_ = model.ground_influence;
    mass_inverse_force_.setZero(model.dofs());
  }

  void set_force(const Eigen::VectorXd& force) { mass_inverse_force_.noalias() = mass_inverse_.lazyProduct(force); }
  void at(const Eigen::VectorXd& x, const Eigen::VectorXd& v, double ground_m_per_s2, Eigen::VectorXd& out) const {
    out = mass_inverse_force_ - ground_m_per_s2 * ground_influence_;
    out.noalias() -= mass_inverse_damping_.lazyProduct(v);
    out.noalias() -= mass_inverse_stiffness_.lazyProduct(x);
  }
  [[nodiscard]] Eigen::Index dofs() const { return mass_inverse_.rows(); }

 private:
  Eigen::MatrixXd mass_inverse_;
  Eigen::MatrixXd mass_inverse_damping_;
  Eigen::MatrixXd mass_inverse_stiffness_;
  Eigen::VectorXd ground_influence_;
  Eigen::VectorXd mass_inverse_force_;
};

// Classical RK4 on z = [x; v], z' = [v; M^-1 (F - C v - K x) - Gamma a_g(t)] (seed 002 Eq. 7), F
// held over the step as the numerical node holds the interface force (DESIGN §3 step 3).
class Rk4Integrator final : public Integrator {
 public:
  explicit Rk4Integrator(const StructuralModel& model) : acceleration_((check_model(model, "RK4"), model), "RK4") {
    for (Eigen::VectorXd* v : {&k1x_, &k1v_, &k2x_, &k2v_, &k3x_, &k3v_, &k4x_, &k4v_, &stage_x_, &stage_v_}) {
      v->setZero(model.dofs());
    }
  }

  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    check_state(state, force, acceleration_.dofs(), "RK4");
    acceleration_.set_force(force);
    acceleration_.at(state.displacement, state.velocity, ground.at(t_s), state.acceleration);
  }

  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    acceleration_.set_force(force);
    const double half_dt_s = 0.5 * dt_s;
    const double ground_start = ground.at(t_s);
    const double ground_middle = ground.at(t_s + half_dt_s);
    const double ground_end = ground.at(t_s + dt_s);
    Eigen::VectorXd& x = state.displacement;
    Eigen::VectorXd& v = state.velocity;

    k1x_ = v;
    acceleration_.at(x, v, ground_start, k1v_);
    stage_x_ = x + half_dt_s * k1x_;
    stage_v_ = v + half_dt_s * k1v_;
    k2x_ = stage_v_;
    acceleration_.at(stage_x_, stage_v_, ground_middle, k2v_);
    stage_x_ = x + half_dt_s * k2x_;
    stage_v_ = v + half_dt_s * k2v_;
    k3x_ = stage_v_;
    acceleration_.at(stage_x_, stage_v_, ground_middle, k3v_);
    stage_x_ = x + dt_s * k3x_;
    stage_v_ = v + dt_s * k3v_;
    k4x_ = stage_v_;
    acceleration_.at(stage_x_, stage_v_, ground_end, k4v_);

    const double sixth_dt_s = dt_s / 6.0;
    x += sixth_dt_s * (k1x_ + 2.0 * k2x_ + 2.0 * k3x_ + k4x_);
    v += sixth_dt_s * (k1v_ + 2.0 * k2v_ + 2.0 * k3v_ + k4v_);
    // The relative acceleration at t + dt under the same held F, what the next command reports.
    acceleration_.at(x, v, ground_end, state.acceleration);
  }

 private:
  ExplicitAcceleration acceleration_;
  // Stage slopes of x and v, and the stage state.
  Eigen::VectorXd k1x_;
  Eigen::VectorXd k1v_;
  Eigen::VectorXd k2x_;
  Eigen::VectorXd k2v_;
  Eigen::VectorXd k3x_;
  Eigen::VectorXd k3v_;
  Eigen::VectorXd k4x_;
  Eigen::VectorXd k4v_;
  Eigen::VectorXd stage_x_;
  Eigen::VectorXd stage_v_;
};

// Newmark constant average acceleration, beta = 1/4, gamma = 1/2 (seed 000: "alpha = 0.25 and
// delta = 0.5"), in the predictor-corrector (acceleration) form: algebraically the same scheme as
// the displacement form of seed 000's fcn_newmark_beta_const, but it never forms
// a0 (U1 - U0) = 4 (U1 - U0) / dt^2, which cancels digits at dt = 1/1024.
class NewmarkIntegrator final : public Integrator {
 public:
  static constexpr double kBeta = 0.25;
  static constexpr double kGamma = 0.5;

  NewmarkIntegrator(const StructuralModel& model, double dt_s) : dt_s_(dt_s) {
    check_model(model, "Newmark");
    if (!(dt_s > 0.0) || !std::isfinite(dt_s)) {
      throw std::invalid_argument("Newmark: time step is " + std::to_string(dt_s) + " s, expected a finite value > 0");
    }
    const Eigen::Index n = model.dofs();
    damping_ = model.damping;
    stiffness_ = model.stiffness;
    mass_ground_influence_ = model.mass * model.ground_influence;
    // Massless DOFs (zero rows and columns of M) follow the others statically; the effective matrix
    // below stays invertible when stiffness holds them. Only the start needs M itself.
    massless_ = massless_dofs(model.mass);
    for (Eigen::Index i = 0; i < n; ++i) {
      if (!std::binary_search(massless_.begin(), massless_.end(), i)) inertial_.push_back(i);
    }
    if (inertial_.empty()) throw std::invalid_argument("Newmark: the mass matrix is zero");
    const Eigen::MatrixXd inertial_mass = model.mass(inertial_, inertial_);
    const Eigen::FullPivLU<Eigen::MatrixXd> mass_check(inertial_mass);
    if (!mass_check.isInvertible()) {
      throw std::invalid_argument("Newmark: the mass matrix is singular on the DOFs with mass");
    }
    mass_lu_.compute(inertial_mass);
    if (!massless_.empty()) {
      massless_stiffness_lu_.compute(model.stiffness(massless_, massless_));
      massless_coupling_ = model.stiffness(massless_, inertial_);
    }
    // Equilibrium at t + dt solved for a(t+dt): (M + gamma dt C + beta dt^2 K) a = R - C v~ - K x~.
    const Eigen::MatrixXd effective_mass =
        model.mass + kGamma * dt_s * model.damping + kBeta * dt_s * dt_s * model.stiffness;
    const Eigen::FullPivLU<Eigen::MatrixXd> effective_check(effective_mass);
    if (!effective_check.isInvertible()) {
      throw std::invalid_argument("Newmark: the effective matrix M + dt/2 C + dt^2/4 K is singular");
    }
    effective_lu_.compute(effective_mass);
    for (Eigen::VectorXd* v : {&predicted_x_, &predicted_v_, &rhs_, &new_acceleration_}) {
      v->setZero(n);
    }
  }

  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    check_state(state, force, stiffness_.rows(), "Newmark");
    residual(state.displacement, state.velocity, force, ground.at(t_s));
    if (massless_.empty()) {
      state.acceleration = mass_lu_.solve(rhs_);
      return;
    }
    // The DOFs with mass from their own rows; the massless ones follow them statically,
    // a_o = -Koo^-1 Kot a_t (their rows hold no inertia, and at rest both are 0).
    const Eigen::VectorXd inertial_acceleration = mass_lu_.solve(Eigen::VectorXd(rhs_(inertial_)));
    state.acceleration.setZero(rhs_.size());
    state.acceleration(inertial_) = inertial_acceleration;
    state.acceleration(massless_) = -massless_stiffness_lu_.solve(massless_coupling_ * inertial_acceleration);
  }

  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    if (!(std::abs(dt_s - dt_s_) <= 1e-9 * dt_s_)) {  // negated: a NaN dt fails it too
      // The effective matrix was factorised for one step; a different dt would be silently wrong.
      throw std::invalid_argument("Newmark: step called with dt = " + std::to_string(dt_s) +
                                  " s, but the integrator was built for dt = " + std::to_string(dt_s_) + " s");
    }
    Eigen::VectorXd& x = state.displacement;
    Eigen::VectorXd& v = state.velocity;
    Eigen::VectorXd& a = state.acceleration;
    predicted_x_ = x + dt_s_ * v + ((0.5 - kBeta) * dt_s_ * dt_s_) * a;
    predicted_v_ = v + ((1.0 - kGamma) * dt_s_) * a;
    residual(predicted_x_, predicted_v_, force, ground.at(t_s + dt_s_));
    new_acceleration_ = effective_lu_.solve(rhs_);
    x = predicted_x_ + (kBeta * dt_s_ * dt_s_) * new_acceleration_;
    v = predicted_v_ + (kGamma * dt_s_) * new_acceleration_;
    a = new_acceleration_;
  }

 private:
  // F - M Gamma a_g - C v - K x into rhs_ (seed 002 Eq. 6 with the inertia term moved left).
  void residual(const Eigen::VectorXd& x, const Eigen::VectorXd& v, const Eigen::VectorXd& force,
                double ground_m_per_s2) {
    rhs_ = force - ground_m_per_s2 * mass_ground_influence_;
    rhs_.noalias() -= damping_.lazyProduct(v);
    rhs_.noalias() -= stiffness_.lazyProduct(x);
  }

  double dt_s_;
  Eigen::MatrixXd damping_;
  Eigen::MatrixXd stiffness_;
  Eigen::VectorXd mass_ground_influence_;
  Eigen::PartialPivLU<Eigen::MatrixXd> mass_lu_;
  Eigen::PartialPivLU<Eigen::MatrixXd> effective_lu_;
  std::vector<Eigen::Index> massless_;                          // DOFs without mass, ascending
  std::vector<Eigen::Index> inertial_;                          // the others
  Eigen::PartialPivLU<Eigen::MatrixXd> massless_stiffness_lu_;  // Koo
  Eigen::MatrixXd massless_coupling_;                           // Kot
  Eigen::VectorXd predicted_x_;
  Eigen::VectorXd predicted_v_;
  Eigen::VectorXd rhs_;
  Eigen::VectorXd new_acceleration_;
};

// Chen and Ricles (2008), "Development of direct integration algorithms for structural dynamics
// using discrete control theory", J. Eng. Mech. 134(8), 676-683:
//   v(i+1) = v(i) + dt alpha a(i),   x(i+1) = x(i) + dt v(i) + dt^2 alpha a(i),
//   alpha = 4 (4 M + 2 dt C + dt^2 K)^-1 M,
// with a(i) from equilibrium under the force of step i, M a = F - C v - K x - M Gamma a_g. The new
// displacement needs only the state at t: the command is known before the force it causes, as a
// hybrid test needs. The interface force is held over the step as with RK4: a(i) is taken again
// at the start of each step with the force this step holds (the measurement of x(i)), and the
// acceleration reported at t + dt is the one in equilibrium under that same force.
class ChenRiclesIntegrator final : public Integrator {
 public:
  ChenRiclesIntegrator(const StructuralModel& model, double dt_s)
      : dt_s_(dt_s), acceleration_((check_model(model, "Chen-Ricles"), model), "Chen-Ricles") {
    if (!(dt_s > 0.0) || !std::isfinite(dt_s)) {
      throw std::invalid_argument("Chen-Ricles: time step is " + std::to_string(dt_s) +
                                  " s, expected a finite value > 0");
    }
    const Eigen::MatrixXd denominator = 4.0 * model.mass + 2.0 * dt_s * model.damping + dt_s * dt_s * model.stiffness;
    const Eigen::FullPivLU<Eigen::MatrixXd> denominator_lu(denominator);
    if (!denominator_lu.isInvertible()) {
      throw std::invalid_argument("Chen-Ricles: 4M + 2 dt C + dt^2 K is singular");
    }
    alpha_ = 4.0 * denominator_lu.solve(model.mass);
    alpha_a_.setZero(model.dofs());
  }

  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    check_state(state, force, acceleration_.dofs(), "Chen-Ricles");
    acceleration_.set_force(force);
    acceleration_.at(state.displacement, state.velocity, ground.at(t_s), state.acceleration);
  }

  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    if (!(std::abs(dt_s - dt_s_) <= 1e-9 * dt_s_)) {  // negated: a NaN dt fails it too
      throw std::invalid_argument("Chen-Ricles: step called with dt = " + std::to_string(dt_s) +
                                  " s, but its alpha was built for dt = " + std::to_string(dt_s_) + " s");
    }
    Eigen::VectorXd& x = state.displacement;
    Eigen::VectorXd& v = state.velocity;
    Eigen::VectorXd& a = state.acceleration;
    acceleration_.set_force(force);
    acceleration_.at(x, v, ground.at(t_s), a);  // a(i) under the force this step holds
    alpha_a_.noalias() = alpha_.lazyProduct(a);
    x += dt_s_ * v + (dt_s_ * dt_s_) * alpha_a_;
    v += dt_s_ * alpha_a_;
    acceleration_.at(x, v, ground.at(t_s + dt_s_), a);
  }

 private:
  double dt_s_;
  ExplicitAcceleration acceleration_;
  Eigen::MatrixXd alpha_;
  Eigen::VectorXd alpha_a_;
};

}  // namespace

std::unique_ptr<Integrator> make_rk4(const StructuralModel& model) {
  return std::make_unique<Rk4Integrator>(model);
}

std::unique_ptr<Integrator> make_newmark(const StructuralModel& model, double dt_s) {
  return std::make_unique<NewmarkIntegrator>(model, dt_s);
}

std::unique_ptr<Integrator> make_chen_ricles(const StructuralModel& model, double dt_s) {
  return std::make_unique<ChenRiclesIntegrator>(model, dt_s);
}

}  // namespace rths
