// The model-based integrators, explicit in displacement: Chen-Ricles and KR-alpha, each for a model
// held dense or sparse, and the hysteretic springs stepped around them (the step's displacement is
// known before its force, so the springs need no iteration).
#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "node_numerical/integrators/integration.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"

namespace rths {

namespace {

using integration::AlphaParameters;
using integration::check_model;
using integration::check_same_step;
using integration::check_step;
using integration::DenseBackend;
using integration::ExplicitAcceleration;
using integration::Operator;
using integration::SparseBackend;

// Chen and Ricles (2008), "Development of direct integration algorithms for structural dynamics
// using discrete control theory", J. Eng. Mech. 134(8), 676-683:
//   v(i+1) = v(i) + dt alpha a(i),   x(i+1) = x(i) + dt v(i) + dt^2 alpha a(i),
//   alpha = 4 (4 M + 2 dt C + dt^2 K)^-1 M,
// with a(i) from equilibrium under the force of step i, M a = F - C v - K x - M Gamma a_g. The new
// displacement needs only the state at t: the command is known before the force it causes, as a
// hybrid test needs. The interface force is held over the step as with RK4: a(i) is taken again
// at the start of each step with the force this step holds (the measurement of x(i)), and the
// acceleration reported at t + dt is the one in equilibrium under that same force.
template <class B>
class ChenRiclesIntegrator final : public Integrator {
 public:
  ChenRiclesIntegrator(const StructuralModel& model, double dt_s)
      : dt_s_((check_step(dt_s, "Chen-Ricles"), dt_s)),
        acceleration_((check_model(model, "Chen-Ricles"), model), "Chen-Ricles"),
        alpha_(Operator<B>(model.dofs())
                   .times(typename B::Matrix(4.0 * B::mass(model)))
                   .solve(typename B::Matrix(4.0 * B::mass(model) + 2.0 * dt_s * B::damping(model) +
                                             dt_s * dt_s * B::stiffness(model)),
                          "Chen-Ricles", "4M + 2 dt C + dt^2 K")),
        alpha_a_(Eigen::VectorXd::Zero(model.dofs())) {}

  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    acceleration_.start(state, force, ground, t_s, "Chen-Ricles");
  }

  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    check_same_step(dt_s, dt_s_, "Chen-Ricles");
    Eigen::VectorXd& x = state.displacement;
    Eigen::VectorXd& v = state.velocity;
    Eigen::VectorXd& a = state.acceleration;
    acceleration_.set_force(force);
    acceleration_.at(x, v, ground.at(t_s), a);  // a(i) under the force this step holds
    alpha_.set(a, alpha_a_);
    x += dt_s_ * v + (dt_s_ * dt_s_) * alpha_a_;
    v += dt_s_ * alpha_a_;
    acceleration_.at(x, v, ground.at(t_s + dt_s_), a);
  }

 private:
  double dt_s_;
  ExplicitAcceleration<B> acceleration_;
  Operator<B> alpha_;
  Eigen::VectorXd alpha_a_;
};

// Kolay and Ricles (2014), "Development of a family of unconditionally stable explicit direct
// integration algorithms with controllable numerical energy dissipation", Earthquake Engng Struct.
// Dyn. 43(9), 1361-1380 (KR-alpha):
//   x(i+1) = x(i) + dt v(i) + dt^2 alpha2 a(i),   v(i+1) = v(i) + dt alpha1 a(i),
//   M a~(i+1) + C v(i+1-alpha_f) + K x(i+1-alpha_f) = F(i+1-alpha_f),  a~ = (I - alpha3) a(i+1) + alpha3 a(i),
//   alpha1 = A^-1 M,  alpha2 = (1/2 + gamma) alpha1,  A = M + gamma dt C + beta dt^2 K,
//   alpha3 = A^-1 B,  B = alpha_m M + alpha_f (gamma dt C + beta dt^2 K),
// with the generalised-alpha parameters of rho_inf: on a linear model it has the generalised-alpha
// method's spectral radius and period error, and rho_inf = 1 is Chen-Ricles. As with CR the step's
// displacement needs only the state at t. M (I - alpha3) = M A^-1 E with E = A - B, so
//   a(i+1) = E^-1 (A M^-1 r - B a(i)),  r = F(i+1-alpha_f) - M Gamma a_g - C v(i+1-alpha_f) - K x(i+1-alpha_f).
// The force: a(i) is fixed by the weighted equilibrium once the force of step i (the measurement of
// x(i), held over the step) is known, at the start of step i, with F(i-alpha_f) = (1 - alpha_f) F(i)
// + alpha_f F(i-1) and the ground acceleration weighted alike. The acceleration reported at t + dt
// is the one that equilibrium gives with the force still held; the next step adds
// (1 - alpha_f) E^-1 A M^-1 (F(i+1) - F(i)).
template <class B>
class KrAlphaIntegrator final : public Integrator {
 public:
  KrAlphaIntegrator(const StructuralModel& model, double dt_s, double rho_infinity)
      : dt_s_((check_step(dt_s, "KR-alpha"), dt_s)),
        alpha_(rho_infinity, "KR-alpha"),
        equilibrium_((check_model(model, "KR-alpha"), model), "KR-alpha"),
        alpha1_(Operator<B>(model.dofs()).times(B::mass(model)).solve(a_matrix(model), "KR-alpha", kAName)),
        damping_(Operator<B>(model.dofs()).times(B::damping(model))),
        stiffness_(Operator<B>(model.dofs()).times(B::stiffness(model))),
        mass_ground_(B::mass(model) * model.ground_influence) {
    for (Eigen::VectorXd* v : {&next_a_, &previous_force_, &alpha1_a_, &mixed_x_, &mixed_v_, &old_x_, &old_v_,
                               &residual_vector_, &unit_, &column_, &column_scratch_}) {
      v->setZero(model.dofs());
    }
    on_support_.assign(static_cast<std::size_t>(model.dofs()), -1);
    // E^-1 A M^-1 and E^-1 B: one product each when dense; sparse, the residual's A M^-1 r - B a(i) is
    // formed first and solved with E once.
    if constexpr (kSparse) {
      inner_ = std::make_unique<Operator<B>>(
          Operator<B>(model.dofs()).solve(B::mass(model), "KR-alpha", "the mass matrix").times(a_matrix(model)));
      b_ = std::make_unique<Operator<B>>(Operator<B>(model.dofs()).times(b_matrix(model)));
      e_ = std::make_unique<Operator<B>>(Operator<B>(model.dofs()).solve(e_matrix(model), "KR-alpha", kEName));
    } else {
      residual_ = std::make_unique<Operator<B>>(Operator<B>(model.dofs())
                                                    .solve(B::mass(model), "KR-alpha", "the mass matrix")
                                                    .times(a_matrix(model))
                                                    .solve(e_matrix(model), "KR-alpha", kEName));
      previous_ = std::make_unique<Operator<B>>(
          Operator<B>(model.dofs()).times(b_matrix(model)).solve(e_matrix(model), "KR-alpha", kEName));
    }
  }

  // The force's correction (1 - alpha_f) E^-1 A M^-1 (F(i) - F(i-1)) on the DOFs the sites act on,
  // formed once per DOF: a step whose force changes only there then needs no solve for it. Past
  // kMaxFormedDofs DOFs (a spring on every storey of a large model) the columns would cost n words
  // each, and adding many of them a step more than the solve they save: the change is solved.
  void set_force_dofs(std::span<const Eigen::Index> dofs) override {
    on_support_.assign(on_support_.size(), -1);
    if (dofs.size() > kMaxFormedDofs) {
      support_.clear();
      correction_.resize(0, 0);
      return;
    }
    correction_.resize(equilibrium_.dofs(), static_cast<Eigen::Index>(dofs.size()));
    support_.assign(dofs.begin(), dofs.end());
    for (std::size_t j = 0; j < dofs.size(); ++j) {
      unit_.setZero();
      unit_(dofs[j]) = 1.0;
      solve_residual(unit_, column_);
      correction_.col(static_cast<Eigen::Index>(j)) = (1.0 - alpha_.alpha_f) * column_;
      on_support_[static_cast<std::size_t>(dofs[j])] = static_cast<int>(j);
    }
  }

  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    equilibrium_.start(state, force, ground, t_s, "KR-alpha");
    started_ = false;
  }

  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    check_same_step(dt_s, dt_s_, "KR-alpha");
    Eigen::VectorXd& x = state.displacement;
    Eigen::VectorXd& v = state.velocity;
    Eigen::VectorXd& a = state.acceleration;
    const double weight = 1.0 - alpha_.alpha_f;
    if (started_) {
      // a(i) from the weighted equilibrium, now that the force of step i is known.
      previous_force_ = force - previous_force_;
      a = next_a_;
      add_correction(previous_force_, a);
    } else {
      // The first step: the state's own equilibrium under the force it starts with.
      equilibrium_.set_force(force);
      equilibrium_.at(x, v, ground.at(t_s), a);
      started_ = true;
    }
    previous_force_ = force;
    old_x_ = x;
    old_v_ = v;
    alpha1_.set(a, alpha1_a_);
    x += dt_s_ * v + ((0.5 + alpha_.gamma) * dt_s_ * dt_s_) * alpha1_a_;
    v += dt_s_ * alpha1_a_;
    // a(i+1) with the force still held: F(i+1-alpha_f) = F(i).
    const double ground_mixed = weight * ground.at(t_s + dt_s_) + alpha_.alpha_f * ground.at(t_s);
    mixed_x_ = weight * x + alpha_.alpha_f * old_x_;
    mixed_v_ = weight * v + alpha_.alpha_f * old_v_;
    residual_vector_ = force - ground_mixed * mass_ground_;
    damping_.add(mixed_v_, residual_vector_, -1.0);
    stiffness_.add(mixed_x_, residual_vector_, -1.0);
    if constexpr (kSparse) {
      inner_->set(residual_vector_, column_);
      b_->add(a, column_, -1.0);
      e_->set(column_, next_a_);
    } else {
      residual_->set(residual_vector_, next_a_);
      previous_->add(a, next_a_, -1.0);
    }
    a = next_a_;
  }

 private:
  static constexpr bool kSparse = std::is_same_v<B, SparseBackend>;
  static constexpr std::size_t kMaxFormedDofs = 64;
  static constexpr const char* kAName = "M + gamma dt C + beta dt^2 K";

  // out = E^-1 A M^-1 r
  void solve_residual(const Eigen::VectorXd& r, Eigen::VectorXd& out) const {
    if constexpr (kSparse) {
      inner_->set(r, column_scratch_);
      e_->set(column_scratch_, out);
    } else {
      residual_->set(r, out);
    }
  }
  // a += (1 - alpha_f) E^-1 A M^-1 change, from the formed columns when the change is on their DOFs.
  void add_correction(const Eigen::VectorXd& change, Eigen::VectorXd& a) {
    bool on_support = true;
    for (Eigen::Index i = 0; i < change.size() && on_support; ++i) {
      on_support = change(i) == 0.0 || on_support_[static_cast<std::size_t>(i)] >= 0;
    }
    if (on_support) {
      for (std::size_t j = 0; j < support_.size(); ++j) {
        const double f = change(support_[j]);
        if (f != 0.0) a += f * correction_.col(static_cast<Eigen::Index>(j));
      }
      return;
    }
    solve_residual(change, column_);
    a += (1.0 - alpha_.alpha_f) * column_;
  }
  static constexpr const char* kEName = "(1 - alpha_m) M + (1 - alpha_f) (gamma dt C + beta dt^2 K)";
  // (auto: clang 14 wants typename before B::Matrix as a return type, which C++20 and clang-tidy do not.)
  [[nodiscard]] auto a_matrix(const StructuralModel& model) const {
    return typename B::Matrix(B::mass(model) + alpha_.gamma * dt_s_ * B::damping(model) +
                              alpha_.beta * dt_s_ * dt_s_ * B::stiffness(model));
  }
  [[nodiscard]] auto b_matrix(const StructuralModel& model) const {
    return typename B::Matrix(alpha_.alpha_m * B::mass(model) +
                              alpha_.alpha_f * (alpha_.gamma * dt_s_ * B::damping(model) +
                                                alpha_.beta * dt_s_ * dt_s_ * B::stiffness(model)));
  }
  [[nodiscard]] auto e_matrix(const StructuralModel& model) const {
    return typename B::Matrix(a_matrix(model) - b_matrix(model));
  }

  double dt_s_;
  AlphaParameters alpha_;
  ExplicitAcceleration<B> equilibrium_;  // the first step's a(0)
  Operator<B> alpha1_;                   // A^-1 M
  // Built for their backend only (the others stay empty).
  std::unique_ptr<Operator<B>> residual_;  // E^-1 A M^-1 (dense)
  std::unique_ptr<Operator<B>> previous_;  // E^-1 B (dense)
  std::unique_ptr<Operator<B>> inner_;     // A M^-1 (sparse)
  std::unique_ptr<Operator<B>> b_;         // B (sparse)
  std::unique_ptr<Operator<B>> e_;         // E^-1 (sparse)
  Operator<B> damping_;
  Operator<B> stiffness_;
  Eigen::VectorXd mass_ground_;  // M Gamma
  bool started_ = false;
  Eigen::VectorXd next_a_;          // a(i+1) under the held force
  Eigen::VectorXd previous_force_;  // F(i-1), then F(i) - F(i-1)
  Eigen::VectorXd alpha1_a_;
  Eigen::VectorXd mixed_x_;
  Eigen::VectorXd mixed_v_;
  Eigen::VectorXd old_x_;
  Eigen::VectorXd old_v_;
  Eigen::VectorXd residual_vector_;
  Eigen::VectorXd unit_;
  Eigen::VectorXd column_;
  mutable Eigen::VectorXd column_scratch_;
  Eigen::MatrixXd correction_;  // per DOF of support_, (1 - alpha_f) E^-1 A M^-1 e_dof
  std::vector<Eigen::Index> support_;
  std::vector<int> on_support_;  // per DOF: its column in correction_, -1 for none
};

// The model's hysteretic springs around an integrator explicit in displacement (Chen-Ricles,
// KR-alpha): the model's stiffness holds each spring's largest tangent k (its initial stiffness but for
// a Bouc-Wen law that unloads stiffer), so the step adds only the force beyond that line, f(u) - k u
// (zero until the spring first yields), to the force it holds,
// from the displacement the step starts from. That displacement is final (the integrator computed it
// from the state before), so each spring's history moves to it once: no iteration, no trial state.
class SpringIntegrator final : public Integrator {
 public:
  SpringIntegrator(const StructuralModel& model, std::unique_ptr<Integrator> inner)
      : inner_(std::move(inner)), springs_(model.springs), force_(Eigen::VectorXd::Zero(model.dofs())) {
    laws_.reserve(springs_.size());
    for (const SpringElement& spring : springs_) {
      const Eigen::Index n = model.dofs();
      if (spring.dof_i < 0 || spring.dof_i >= n || spring.dof_j < -1 || spring.dof_j >= n ||
          spring.dof_i == spring.dof_j) {
        throw std::invalid_argument("spring \"" + spring.name + "\": DOFs " + std::to_string(spring.dof_i) + " and " +
                                    std::to_string(spring.dof_j) + " (from 0; -1 the ground) of a " +
                                    std::to_string(n) + "-DOF model; expected two distinct DOFs within it");
      }
      laws_.emplace_back(spring.law);
      spring_dofs_.push_back(spring.dof_i);
      if (spring.dof_j >= 0) spring_dofs_.push_back(spring.dof_j);
    }
  }

  // The sites' DOFs and the springs': the force changes on both (without this call the inner
  // integrator prepares for none, and steps alike).
  void set_force_dofs(std::span<const Eigen::Index> dofs) override {
    std::vector<Eigen::Index> all(spring_dofs_);
    all.insert(all.end(), dofs.begin(), dofs.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    inner_->set_force_dofs(all);
  }
  void initialise(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground,
                  double t_s) override {
    for (HystereticLaw& law : laws_) law.reset();
    add_springs(state.displacement, force);
    inner_->initialise(state, force_, ground, t_s);
  }
  void step(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
            double dt_s) override {
    add_springs(state.displacement, force);
    inner_->step(state, force_, ground, t_s, dt_s);
  }
  [[nodiscard]] std::span<const HystereticLaw> springs() const override { return laws_; }

 private:
  void add_springs(const Eigen::VectorXd& x, const Eigen::VectorXd& force) {
    if (x.size() != force_.size() || force.size() != force_.size()) {
      throw std::invalid_argument("springs: displacement (" + std::to_string(x.size()) + ") and force (" +
                                  std::to_string(force.size()) + ") must have the model's " +
                                  std::to_string(force_.size()) + " entries");
    }
    force_ = force;
    for (std::size_t s = 0; s < springs_.size(); ++s) {
      const SpringElement& spring = springs_[s];
      HystereticLaw& law = laws_[s];
      const double u = x(spring.dof_i) - (spring.dof_j >= 0 ? x(spring.dof_j) : 0.0);
      const double beyond = law.deform(u) - law.largest_tangent_n_per_m() * u;
      force_(spring.dof_i) -= beyond;
      if (spring.dof_j >= 0) force_(spring.dof_j) += beyond;
    }
  }

  std::unique_ptr<Integrator> inner_;
  std::vector<SpringElement> springs_;
  std::vector<HystereticLaw> laws_;
  std::vector<Eigen::Index> spring_dofs_;  // with repeats: set_force_dofs sorts them with the sites'
  Eigen::VectorXd force_;                  // the held force plus the springs' force beyond their initial stiffness
};

std::unique_ptr<Integrator> with_springs(const StructuralModel& model, std::unique_ptr<Integrator> integrator) {
  if (model.springs.empty()) return integrator;
  return std::make_unique<SpringIntegrator>(model, std::move(integrator));
}

}  // namespace

std::unique_ptr<Integrator> make_chen_ricles(const StructuralModel& model, double dt_s) {
  if (model.is_sparse()) return with_springs(model, std::make_unique<ChenRiclesIntegrator<SparseBackend>>(model, dt_s));
  return with_springs(model, std::make_unique<ChenRiclesIntegrator<DenseBackend>>(model, dt_s));
}

std::unique_ptr<Integrator> make_kr_alpha(const StructuralModel& model, double dt_s, double rho_infinity) {
  if (model.is_sparse()) {
    return with_springs(model, std::make_unique<KrAlphaIntegrator<SparseBackend>>(model, dt_s, rho_infinity));
  }
  return with_springs(model, std::make_unique<KrAlphaIntegrator<DenseBackend>>(model, dt_s, rho_infinity));
}

}  // namespace rths
