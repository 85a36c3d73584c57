#include <Eigen/SparseCholesky>
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rths/node_numerical/structure.hpp"

namespace rths {

namespace {

void check_model(const StructuralModel& model, const char* integrator) {
  const Eigen::Index n = model.dofs();
  if (model.is_sparse()) {
    const auto square = [n](const Eigen::SparseMatrix<double>& m) { return m.rows() == n && m.cols() == n; };
    if (n < 1 || !square(model.sparse_mass) || !square(model.sparse_damping) || !square(model.sparse_stiffness) ||
        model.ground_influence.size() != n) {
      throw std::invalid_argument(
          std::string(integrator) + ": sparse structural model has mass " + std::to_string(model.sparse_mass.rows()) +
          " rows, damping " + std::to_string(model.sparse_damping.rows()) + ", stiffness " +
          std::to_string(model.sparse_stiffness.rows()) + ", ground influence " +
          std::to_string(model.ground_influence.size()) + "; expected n x n matrices and n entries");
    }
    return;
  }
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

void check_step(double dt_s, const char* integrator) {
  if (!(dt_s > 0.0) || !std::isfinite(dt_s)) {
    throw std::invalid_argument(std::string(integrator) + ": time step is " + std::to_string(dt_s) +
                                " s, expected a finite value > 0");
  }
}

void check_same_step(double dt_s, double built_for_s, const char* integrator) {
  if (!(std::abs(dt_s - built_for_s) <= 1e-9 * built_for_s)) {  // negated: a NaN dt fails it too
    // Its matrices were formed for one step; a different dt would be silently wrong.
    throw std::invalid_argument(std::string(integrator) + ": step called with dt = " + std::to_string(dt_s) +
                                " s, but its matrices were built for dt = " + std::to_string(built_for_s) + " s");
  }
}

// How an integrator holds the model's matrices. Dense: Eigen::MatrixXd, and every chain of products
// and solves an integrator applies is formed once into one matrix (a product per use). Sparse:
// Eigen::SparseMatrix, and a chain is applied link by link, each solve with a sparse LDL^T
// factorised once (the matrices are symmetric), so that a step costs sparse products and
// triangular solves, never a dense n x n product.
struct DenseBackend {
  using Matrix = Eigen::MatrixXd;
  static const Matrix& mass(const StructuralModel& m) { return m.mass; }
  static const Matrix& damping(const StructuralModel& m) { return m.damping; }
  static const Matrix& stiffness(const StructuralModel& m) { return m.stiffness; }
};
struct SparseBackend {
  using Matrix = Eigen::SparseMatrix<double>;
  using Factor = Eigen::SimplicialLDLT<Matrix>;
  static const Matrix& mass(const StructuralModel& m) { return m.sparse_mass; }
  static const Matrix& damping(const StructuralModel& m) { return m.sparse_damping; }
  static const Matrix& stiffness(const StructuralModel& m) { return m.sparse_stiffness; }
};

// A linear map built as a chain of products and solves, applied to a vector without allocating:
// Operator<B>(n).times(M).solve(D, ...) is D^-1 M. Dense chains are one matrix; sparse ones keep
// their links and two scratch vectors.
template <class B>
class Operator;

template <>
class Operator<DenseBackend> {
 public:
  explicit Operator(Eigen::Index n) : matrix_(Eigen::MatrixXd::Identity(n, n)) {}
  Operator& times(const Eigen::MatrixXd& m) {
    matrix_ = (m * matrix_).eval();
    return *this;
  }
  Operator& solve(const Eigen::MatrixXd& m, const char* integrator, const std::string& what) {
    const Eigen::FullPivLU<Eigen::MatrixXd> lu(m);
    if (!lu.isInvertible()) throw std::invalid_argument(std::string(integrator) + ": " + what + " is singular");
    matrix_ = lu.solve(matrix_);
    return *this;
  }
  // y = s op x, y += s op x; y must not be x.
  void set(const Eigen::VectorXd& x, Eigen::VectorXd& y, double s = 1.0) const {
    y.noalias() = s * matrix_.lazyProduct(x);
  }
  void add(const Eigen::VectorXd& x, Eigen::VectorXd& y, double s = 1.0) const {
    y.noalias() += s * matrix_.lazyProduct(x);
  }

 private:
  Eigen::MatrixXd matrix_;
};

template <>
class Operator<SparseBackend> {
 public:
  explicit Operator(Eigen::Index n) : first_(Eigen::VectorXd::Zero(n)), second_(Eigen::VectorXd::Zero(n)) {}
  Operator& times(const Eigen::SparseMatrix<double>& m) {
    links_.push_back(Link{m, nullptr, {}});
    return *this;
  }
  Operator& solve(const Eigen::SparseMatrix<double>& m, const char* integrator, const std::string& what) {
    const auto singular = [&] { return std::invalid_argument(std::string(integrator) + ": " + what + " is singular"); };
    // A diagonal matrix (a lumped mass) is solved by its reciprocals, not factorised.
    const Eigen::VectorXd diagonal = m.diagonal();
    if ((Eigen::SparseMatrix<double>(m) - Eigen::SparseMatrix<double>(diagonal.asDiagonal())).norm() == 0.0) {
      if (!(diagonal.cwiseAbs().minCoeff() > 1e-13 * diagonal.cwiseAbs().maxCoeff())) throw singular();
      links_.push_back(Link{{}, nullptr, diagonal.cwiseInverse()});
      return *this;
    }
    auto factor = std::make_shared<SparseBackend::Factor>(m);
    const bool ok = factor->info() == Eigen::Success && factor->vectorD().allFinite() &&
                    factor->vectorD().cwiseAbs().minCoeff() > 1e-13 * factor->vectorD().cwiseAbs().maxCoeff();
    if (!ok) throw singular();
    const Eigen::VectorXd pivots_inverse = factor->vectorD().cwiseInverse();
    links_.push_back(Link{{}, std::move(factor), pivots_inverse});
    return *this;
  }
  void set(const Eigen::VectorXd& x, Eigen::VectorXd& y, double s = 1.0) const { y = s * run(x); }
  void add(const Eigen::VectorXd& x, Eigen::VectorXd& y, double s = 1.0) const { y += s * run(x); }

 private:
  struct Link {
    Eigen::SparseMatrix<double> product;                  // multiply by this, or
    std::shared_ptr<const SparseBackend::Factor> factor;  // solve with this (reciprocals: of its D), or
    Eigen::VectorXd reciprocals;                          // with the diagonal matrix of these
  };
  const Eigen::VectorXd& run(const Eigen::VectorXd& x) const {
    first_ = x;
    for (const Link& link : links_) {
      if (link.factor) {
        // P^T L D L^T P y = first_, written out: Eigen's own solve permutes its result in place, which
        // allocates a mask on every call; here each permutation goes from one vector to the other.
        const SparseBackend::Factor& f = *link.factor;
        second_ = f.permutationP() * first_;
        f.matrixL().solveInPlace(second_);
        second_.array() *= link.reciprocals.array();  // D^-1 (vectorD() returns a copy)
        f.matrixU().solveInPlace(second_);
        first_ = f.permutationPinv() * second_;
        continue;
      }
      if (link.reciprocals.size() > 0) {  // a diagonal matrix
        second_ = link.reciprocals.cwiseProduct(first_);
      } else {
        second_.noalias() = link.product * first_;
      }
      first_.swap(second_);
    }
    return first_;
  }
  std::vector<Link> links_;
  mutable Eigen::VectorXd first_;
  mutable Eigen::VectorXd second_;
};

// The relative acceleration of an integrator that solves equilibrium for it:
// a = M^-1 (F - C v - K x) - Gamma a_g (seed 002 Eq. 6 solved for x''). Dense: M^-1, M^-1 C and
// M^-1 K formed once, three products. Sparse: the residual F - C v - K x formed by two sparse
// products and solved with M once. set_force() takes the force the step holds; at() allocates nothing.
template <class B>
class ExplicitAcceleration {
 public:
  static constexpr bool kSparse = std::is_same_v<B, SparseBackend>;

  ExplicitAcceleration(const StructuralModel& model, const char* integrator)
      : mass_inverse_(Operator<B>(model.dofs())
                          .solve(B::mass(model), integrator,
                                 "the mass matrix (every DOF needs mass: condense massless "
                                 "DOFs first)")),
        damping_term_(term(model, B::damping(model), integrator)),
        stiffness_term_(term(model, B::stiffness(model), integrator)),
        ground_influence_(model.ground_influence),
        force_(Eigen::VectorXd::Zero(model.dofs())),
        residual_(Eigen::VectorXd::Zero(model.dofs())) {}

  void set_force(const Eigen::VectorXd& force) {
    if constexpr (kSparse) {
      force_ = force;
    } else {
      mass_inverse_.set(force, force_);  // M^-1 F
    }
  }
  void at(const Eigen::VectorXd& x, const Eigen::VectorXd& v, double ground_m_per_s2, Eigen::VectorXd& out) const {
    if constexpr (kSparse) {
      residual_ = force_;
      damping_term_.add(v, residual_, -1.0);
      stiffness_term_.add(x, residual_, -1.0);
      mass_inverse_.set(residual_, out);
      out -= ground_m_per_s2 * ground_influence_;
    } else {
      out = force_ - ground_m_per_s2 * ground_influence_;
      damping_term_.add(v, out, -1.0);
      stiffness_term_.add(x, out, -1.0);
    }
  }
  [[nodiscard]] Eigen::Index dofs() const { return ground_influence_.size(); }
  // An integrator's initialise(): the state's own acceleration, in equilibrium under the force at t.
  void start(StructuralState& state, const Eigen::VectorXd& force, const GroundMotion& ground, double t_s,
             const char* integrator) {
    check_state(state, force, dofs(), integrator);
    set_force(force);
    at(state.displacement, state.velocity, ground.at(t_s), state.acceleration);
  }

 private:
  // C or K, times M^-1 when dense (sparse: at() solves with M once, for their sum).
  template <typename Matrix>
  static Operator<B> term(const StructuralModel& model, const Matrix& matrix, const char* integrator) {
    Operator<B> op(model.dofs());
    op.times(matrix);
    if constexpr (!kSparse) op.solve(B::mass(model), integrator, "the mass matrix");
    return op;
  }

  Operator<B> mass_inverse_;
  Operator<B> damping_term_;    // M^-1 C (dense), C (sparse)
  Operator<B> stiffness_term_;  // M^-1 K (dense), K (sparse)
  Eigen::VectorXd ground_influence_;
  Eigen::VectorXd force_;  // M^-1 F (dense), F (sparse)
  mutable Eigen::VectorXd residual_;
};

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

// The generalised-alpha parameters of Chung and Hulbert (1993), "A time integration algorithm for
// structural dynamics with improved numerical dissipation: the generalized-alpha method", J. Appl.
// Mech. 60(2), 371-375, Eq. 25 and 17-19, from the high-frequency spectral radius rho_inf in [0, 1]:
// alpha_m = (2 rho - 1) / (rho + 1), alpha_f = rho / (rho + 1), gamma = 1/2 - alpha_m + alpha_f,
// beta = (1 - alpha_m + alpha_f)^2 / 4. alpha_m and alpha_f weigh the state at the step's start
// (x(i+1-alpha) = (1 - alpha) x(i+1) + alpha x(i)). Kolay and Ricles (2014) use the same four.
struct AlphaParameters {
  double alpha_m;
  double alpha_f;
  double gamma;
  double beta;

  AlphaParameters(double rho_infinity, const char* integrator) {
    if (!(rho_infinity >= 0.0 && rho_infinity <= 1.0)) {  // negated: NaN fails it too
      throw std::invalid_argument(std::string(integrator) + ": rho_infinity is " + std::to_string(rho_infinity) +
                                  ", expected a value from 0 (the most numerical damping) to 1 (none)");
    }
    alpha_m = (2.0 * rho_infinity - 1.0) / (rho_infinity + 1.0);
    alpha_f = rho_infinity / (rho_infinity + 1.0);
    gamma = 0.5 - alpha_m + alpha_f;
    beta = 0.25 * (1.0 - alpha_m + alpha_f) * (1.0 - alpha_m + alpha_f);
  }
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

// An integrator that is not explicit in displacement cannot take the springs' force without iterating.
void refuse_springs(const StructuralModel& model, const char* integrator) {
  if (model.springs.empty()) return;
  throw std::invalid_argument(std::string(integrator) +
                              ": the model has hysteretic springs, whose force needs the step's displacement before "
                              "its equilibrium; expected integrator CHEN_RICLES or KR_ALPHA (explicit in "
                              "displacement, no iteration)");
}

std::unique_ptr<Integrator> with_springs(const StructuralModel& model, std::unique_ptr<Integrator> integrator) {
  if (model.springs.empty()) return integrator;
  return std::make_unique<SpringIntegrator>(model, std::move(integrator));
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

std::unique_ptr<Integrator> make_generalized_alpha(const StructuralModel& model, double dt_s, double rho_infinity) {
  refuse_springs(model, "generalised-alpha");
  if (model.is_sparse()) return std::make_unique<GeneralizedAlphaIntegrator<SparseBackend>>(model, dt_s, rho_infinity);
  return std::make_unique<GeneralizedAlphaIntegrator<DenseBackend>>(model, dt_s, rho_infinity);
}

}  // namespace rths
