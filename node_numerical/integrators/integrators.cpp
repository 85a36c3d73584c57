// The classical integrators: RK4, Newmark (constant average acceleration) and the generalised-alpha
// method, each for a model held dense or sparse (Newmark dense only). None takes hysteretic springs:
// the integrators explicit in displacement that do are in model_based_integrators.cpp.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiment.pb.h"
#include "node_numerical/integrators/integration.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"

namespace rths {

namespace {

using integration::AlphaParameters;
using integration::check_model;
using integration::check_same_step;
using integration::check_state;
using integration::check_step;
using integration::DenseBackend;
using integration::ExplicitAcceleration;
using integration::Operator;
using integration::SparseBackend;

// Classical RK4 on z = [x; v], z' = [v; M^-1 (F - C v - K x) - Gamma a_g(t)] (seed 002 Eq. 7), F
// held over the step as the numerical node holds the interface force (docs/architecture.md §3 step 3).
template <class B>
class Rk4Integrator final : public Integrator {
 public:
  explicit Rk4Integrator(const StructuralModel& model) : acceleration_((check_model(model, "RK4"), model), "RK4") {
    for (Eigen::VectorXd* v : {&k1x_, &k1v_, &k2x_, &k2v_, &k3x_, &k3v_, &k4x_, &k4v_, &stage_x_, &stage_v_}) {
      v->setZero(model.dofs());
    }
  }
  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    acceleration_.start(state, force, ground, t_s, "RK4");
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
  ExplicitAcceleration<B> acceleration_;
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

  NewmarkIntegrator(const StructuralModel& model, double dt_s)
      : dt_s_((check_model(model, "Newmark"), check_step(dt_s, "Newmark"), dt_s)),
        damping_(model.damping),
        stiffness_(model.stiffness),
        mass_ground_influence_(model.mass * model.ground_influence) {
    const Eigen::Index n = model.dofs();
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
    check_same_step(dt_s, dt_s_, "Newmark");
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

// Chung and Hulbert (1993), the generalised-alpha method (cited at AlphaParameters), implicit: Newmark's
//   x(i+1) = x(i) + dt v(i) + dt^2 ((1/2 - beta) a(i) + beta a(i+1)),  v(i+1) = v(i) + dt ((1 - gamma) a(i) + gamma
//   a(i+1))
// with M a(i+1-alpha_m) + C v(i+1-alpha_f) + K x(i+1-alpha_f) = F(i+1-alpha_f) solved for a(i+1) with
// E = (1 - alpha_m) M + (1 - alpha_f) (gamma dt C + beta dt^2 K) factorised once. Second order,
// unconditionally stable, rho_inf = 1 is the average-acceleration method. Like Newmark it needs the
// force at the step's end: the force held over the step is used there (F(i+1-alpha_f) = F(i)), and the
// ground acceleration is weighted as (1 - alpha_f) a_g(t + dt) + alpha_f a_g(t).
template <class B>
class GeneralizedAlphaIntegrator final : public Integrator {
 public:
  GeneralizedAlphaIntegrator(const StructuralModel& model, double dt_s, double rho_infinity)
      : dt_s_((check_step(dt_s, "generalised-alpha"), dt_s)),
        alpha_(rho_infinity, "generalised-alpha"),
        equilibrium_((check_model(model, "generalised-alpha"), model), "generalised-alpha"),
        solve_(Operator<B>(model.dofs()).solve(effective(model), "generalised-alpha", kEName)),
        mass_(Operator<B>(model.dofs()).times(B::mass(model))),
        damping_(Operator<B>(model.dofs()).times(B::damping(model))),
        stiffness_(Operator<B>(model.dofs()).times(B::stiffness(model))),
        mass_ground_(B::mass(model) * model.ground_influence) {
    for (Eigen::VectorXd* v : {&predicted_x_, &predicted_v_, &new_a_, &rhs_}) {
      v->setZero(model.dofs());
    }
  }

  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    equilibrium_.start(state, force, ground, t_s, "generalised-alpha");
  }

  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    check_same_step(dt_s, dt_s_, "generalised-alpha");
    Eigen::VectorXd& x = state.displacement;
    Eigen::VectorXd& v = state.velocity;
    Eigen::VectorXd& a = state.acceleration;
    const double weight = 1.0 - alpha_.alpha_f;
    // x(i+1-alpha_f) without a(i+1): (1 - alpha_f) x~ + alpha_f x(i), and so for v.
    predicted_x_ = weight * (x + dt_s_ * v + ((0.5 - alpha_.beta) * dt_s_ * dt_s_) * a) + alpha_.alpha_f * x;
    predicted_v_ = weight * (v + ((1.0 - alpha_.gamma) * dt_s_) * a) + alpha_.alpha_f * v;
    const double ground_mixed = weight * ground.at(t_s + dt_s_) + alpha_.alpha_f * ground.at(t_s);
    rhs_ = force - ground_mixed * mass_ground_;
    mass_.add(a, rhs_, -alpha_.alpha_m);
    damping_.add(predicted_v_, rhs_, -1.0);
    stiffness_.add(predicted_x_, rhs_, -1.0);
    solve_.set(rhs_, new_a_);
    x += dt_s_ * v + (dt_s_ * dt_s_) * ((0.5 - alpha_.beta) * a + alpha_.beta * new_a_);
    v += dt_s_ * ((1.0 - alpha_.gamma) * a + alpha_.gamma * new_a_);
    a = new_a_;
  }

 private:
  static constexpr const char* kEName = "(1 - alpha_m) M + (1 - alpha_f) (gamma dt C + beta dt^2 K)";
  [[nodiscard]] auto effective(const StructuralModel& model) const {
    return typename B::Matrix((1.0 - alpha_.alpha_m) * B::mass(model) +
                              (1.0 - alpha_.alpha_f) * (alpha_.gamma * dt_s_ * B::damping(model) +
                                                        alpha_.beta * dt_s_ * dt_s_ * B::stiffness(model)));
  }

  double dt_s_;
  AlphaParameters alpha_;
  ExplicitAcceleration<B> equilibrium_;  // a(0)
  Operator<B> solve_;                    // E^-1
  Operator<B> mass_;
  Operator<B> damping_;
  Operator<B> stiffness_;
  Eigen::VectorXd mass_ground_;  // M Gamma
  Eigen::VectorXd predicted_x_;
  Eigen::VectorXd predicted_v_;
  Eigen::VectorXd new_a_;
  Eigen::VectorXd rhs_;
};

// An integrator that is not explicit in displacement cannot take the springs' force without iterating.
void refuse_springs(const StructuralModel& model, const char* integrator) {
  if (model.springs.empty()) return;
  throw std::invalid_argument(std::string(integrator) +
                              ": the model has hysteretic springs, whose force needs the step's displacement before "
                              "its equilibrium; expected integrator CHEN_RICLES or KR_ALPHA (explicit in "
                              "displacement, no iteration)");
}

}  // namespace

std::unique_ptr<Integrator> make_rk4(const StructuralModel& model) {
  refuse_springs(model, "RK4");
  if (model.is_sparse()) return std::make_unique<Rk4Integrator<SparseBackend>>(model);
  return std::make_unique<Rk4Integrator<DenseBackend>>(model);
}

std::unique_ptr<Integrator> make_newmark(const StructuralModel& model, double dt_s) {
  refuse_springs(model, "Newmark");
  if (model.is_sparse()) {
    throw std::invalid_argument(
        "Newmark: the model is held sparse, and Newmark steps dense models only; expected integrator: "
        "GENERALIZED_ALPHA with rho_infinity 1 (the same average-acceleration method) or another");
  }
  return std::make_unique<NewmarkIntegrator>(model, dt_s);
}

std::unique_ptr<Integrator> make_generalized_alpha(const StructuralModel& model, double dt_s, double rho_infinity) {
  refuse_springs(model, "generalised-alpha");
  if (model.is_sparse()) return std::make_unique<GeneralizedAlphaIntegrator<SparseBackend>>(model, dt_s, rho_infinity);
  return std::make_unique<GeneralizedAlphaIntegrator<DenseBackend>>(model, dt_s, rho_infinity);
}

std::unique_ptr<Integrator> make_integrator(const config::Experiment& cfg, const StructuralModel& model) {
  if (cfg.integrator() == config::CHEN_RICLES) {
    return make_chen_ricles(model, 1.0 / cfg.rate_hz());
  }
  if (cfg.integrator() == config::KR_ALPHA) {
    return make_kr_alpha(model, 1.0 / cfg.rate_hz(), cfg.rho_infinity());
  }
  if (cfg.integrator() == config::GENERALIZED_ALPHA) {
    return make_generalized_alpha(model, 1.0 / cfg.rate_hz(), cfg.rho_infinity());
  }
  if (cfg.integrator() == config::NEWMARK_AVERAGE_ACCELERATION) {
    return make_newmark(model, 1.0 / cfg.rate_hz());
  }
  return make_rk4(model);
}

}  // namespace rths
