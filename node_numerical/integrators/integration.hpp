#pragma once

// What the integrators share (integrators.cpp: RK4, Newmark, generalised-alpha;
// model_based_integrators.cpp: Chen-Ricles, KR-alpha and the hysteretic springs around them): the
// checks of their arguments, the two forms a model is held in, the chains of products and solves
// they apply, the acceleration of an integrator that solves equilibrium for it, and the
// generalised-alpha parameters. Internal to node_numerical/.
#include <Eigen/SparseCholesky>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"

namespace rths::integration {

inline void check_model(const StructuralModel& model, const char* integrator) {
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

inline void check_state(const StructuralState& state, const Eigen::VectorXd& force, Eigen::Index dofs,
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

inline void check_step(double dt_s, const char* integrator) {
  if (!(dt_s > 0.0) || !std::isfinite(dt_s)) {
    throw std::invalid_argument(std::string(integrator) + ": time step is " + std::to_string(dt_s) +
                                " s, expected a finite value > 0");
  }
}

inline void check_same_step(double dt_s, double built_for_s, const char* integrator) {
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

}  // namespace rths::integration
