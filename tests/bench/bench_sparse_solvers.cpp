// The per-step sparse solve against its solver (docs/performance.md, "Sparse solver: Eigen LDL^T
// against CHOLMOD"): x = A^-1 b with KR-alpha's A = M + gamma dt C + beta dt^2 K (rho_inf = 0.5,
// dt = 1/1024 s, 2 % Rayleigh damping at modes 1 and 3), factorised once, for the shear buildings of
// 100, 1000 and 10000 storeys and the plane frames of 2652, 5025 and 9996 DOFs (model_ladder.hpp).
// Solvers: Eigen's SimplicialLDLT solved as Operator<SparseBackend> does it (written out, allocation
// free), by its own solve() and by plain loops over its L; Eigen's SimplicialLLT written out;
// CHOLMOD's simplicial LDL^T and supernodal LL^T through cholmod_solve2 with its workspace kept
// between calls; and Eigen's LDL^T of A in CHOLMOD's ordering, to tell the ordering's share of a
// difference from the solve's. Every solution is checked against the first. Each solve is timed
// alone (steady_clock) in blocks that rotate through the solvers, so that a load from elsewhere on
// the machine falls on all of them alike; allocations per solve are counted (malloc of this program's
// own code and Eigen's through --wrap=malloc, CHOLMOD's through SuiteSparse_config's hooks).
// Run: OMP_NUM_THREADS=1 build/bin/rths_bench_sparse_solvers [--quick]
#include <cholmod.h>

#include <Eigen/SparseCholesky>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/dynamics/matrix_market.hpp"
#include "node_numerical/structure/model_ladder.hpp"
#include "node_numerical/structure/structure.hpp"
#include "support/malloc_counter.hpp"

extern "C" void* __real_malloc(std::size_t size);  // NOLINT(bugprone-reserved-identifier): the linker's name

namespace {

// CHOLMOD allocates through SuiteSparse_config's hooks. Its malloc goes through the hook below to
// malloc, which --wrap=malloc counts; calloc and realloc are counted here.
std::uint64_t g_cholmod_allocations = 0;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
void* counting_malloc(std::size_t size) {
  ++g_cholmod_allocations;
  return __real_malloc(size);
}
void* counting_calloc(std::size_t count, std::size_t size) {
  ++g_cholmod_allocations;
  return std::calloc(count, size);  // NOLINT(cppcoreguidelines-no-malloc): CHOLMOD frees with free
}
void* counting_realloc(void* p, std::size_t size) {
  ++g_cholmod_allocations;
  return std::realloc(p, size);  // NOLINT(cppcoreguidelines-no-malloc): CHOLMOD frees with free
}
std::uint64_t allocations() {
  return rths::test::mallocs_on_this_thread() + g_cholmod_allocations;
}

using SparseMatrix = Eigen::SparseMatrix<double>;
using Clock = std::chrono::steady_clock;

constexpr double kDt = 1.0 / 1024.0;

struct Model {
  std::string name;
  SparseMatrix a;
};

// KR-alpha's A (model_based_integrators.cpp, KrAlphaIntegrator::a_matrix) at rho_inf = 0.5.
Model model_of(const std::string& name, const rths::GeneratedModel& generated) {
  const double rho = 0.5;
  const double alpha_m = (2.0 * rho - 1.0) / (rho + 1.0);
  const double alpha_f = rho / (rho + 1.0);
  const double gamma = 0.5 - alpha_m + alpha_f;
  const double beta = 0.25 * (1.0 - alpha_m + alpha_f) * (1.0 - alpha_m + alpha_f);
  const SparseMatrix mass = rths::to_sparse_matrix(generated.mass);
  const SparseMatrix stiffness = rths::to_sparse_matrix(generated.stiffness);
  const SparseMatrix damping = rths::rayleigh_damping(mass, stiffness, 1, 0.02, 3, 0.02);
  SparseMatrix a = mass + gamma * kDt * damping + beta * kDt * kDt * stiffness;
  a.makeCompressed();
  return {name, a};
}

// One solver: factorise() once, then solve(b, x) per step.
struct Solver {
  std::string name;
  double factor_ms = 0.0;
  long factor_nonzeros = 0;
  std::string ordering;
  std::function<void(const Eigen::VectorXd&, Eigen::VectorXd&)> solve;
  std::vector<double> samples_us;
  std::uint64_t allocations = 0;
  std::uint64_t solves = 0;
  Eigen::VectorXd x;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Eigen's LDL^T (rths's factor) and LL^T, and what their solves need kept between steps; and the
// LDL^T of A permuted beforehand as CHOLMOD orders it (its own ordering: none).
struct EigenFactors {
  Eigen::SimplicialLDLT<SparseMatrix> ldlt;
  Eigen::VectorXd pivots_inverse;
  Eigen::VectorXi permutation;  // P x: (P x)(permutation(i)) = x(i)
  Eigen::SimplicialLLT<SparseMatrix> llt;
  Eigen::SimplicialLDLT<SparseMatrix, Eigen::Lower, Eigen::NaturalOrdering<int>> reordered;
  Eigen::VectorXd reordered_pivots_inverse;
  Eigen::VectorXi cholmod_permutation;
  Eigen::VectorXd first, second;
};

// x = P^T L^-T D^-1 L^-1 P b by plain loops over L's compressed columns (strictly lower, rows
// ascending, the unit diagonal implied): a solve without Eigen's sparse triangular solver and
// permutation products. y: scratch of b's size.
void solve_by_columns(const SparseMatrix& l, const Eigen::VectorXi& permutation, const Eigen::VectorXd& pivots_inverse,
                      const Eigen::VectorXd& b, Eigen::VectorXd& y, Eigen::VectorXd& x) {
  const int* column_start = l.outerIndexPtr();
  const int* row = l.innerIndexPtr();
  const double* value = l.valuePtr();
  const auto size = static_cast<int>(b.size());
  for (int i = 0; i < size; ++i) y[permutation[i]] = b[i];
  for (int j = 0; j < size; ++j) {  // L y = y, column by column
    const double yj = y[j];
    for (int p = column_start[j]; p < column_start[j + 1]; ++p) y[row[p]] -= value[p] * yj;
  }
  for (int j = 0; j < size; ++j) y[j] *= pivots_inverse[j];
  for (int j = size - 1; j >= 0; --j) {  // L^T y = y, a column of L a row of L^T
    double yj = y[j];
    for (int p = column_start[j]; p < column_start[j + 1]; ++p) yj -= value[p] * y[row[p]];
    y[j] = yj;
  }
  for (int i = 0; i < size; ++i) x[i] = y[permutation[i]];
}

// CHOLMOD's factor and the dense vectors cholmod_solve2 reuses: B filled per step, X its result,
// Y and E its workspace (allocated by the first call, kept by every later one).
struct CholmodFactor {
  cholmod_common common{};
  cholmod_sparse* a = nullptr;
  cholmod_factor* factor = nullptr;
  cholmod_dense* b = nullptr;
  cholmod_dense* x = nullptr;
  cholmod_dense* y = nullptr;
  cholmod_dense* e = nullptr;
  CholmodFactor() { cholmod_start(&common); }
  CholmodFactor(const CholmodFactor&) = delete;
  CholmodFactor& operator=(const CholmodFactor&) = delete;
  CholmodFactor(CholmodFactor&&) = delete;
  CholmodFactor& operator=(CholmodFactor&&) = delete;
  ~CholmodFactor() {
    cholmod_free_dense(&e, &common);
    cholmod_free_dense(&y, &common);
    cholmod_free_dense(&x, &common);
    cholmod_free_dense(&b, &common);
    cholmod_free_factor(&factor, &common);
    cholmod_free_sparse(&a, &common);
    cholmod_finish(&common);
  }
};

// A's lower triangle as a CHOLMOD symmetric matrix (stype -1).
cholmod_sparse* to_cholmod(const SparseMatrix& a, cholmod_common* common) {
  const SparseMatrix lower = a.triangularView<Eigen::Lower>();
  cholmod_sparse* out =
      cholmod_allocate_sparse(lower.rows(), lower.cols(), lower.nonZeros(), 1, 1, -1, CHOLMOD_REAL, common);
  if (out == nullptr) throw std::runtime_error("cholmod_allocate_sparse failed");
  std::copy_n(lower.outerIndexPtr(), lower.cols() + 1, static_cast<int*>(out->p));
  std::copy_n(lower.innerIndexPtr(), lower.nonZeros(), static_cast<int*>(out->i));
  std::copy_n(lower.valuePtr(), lower.nonZeros(), static_cast<double*>(out->x));
  return out;
}

std::string ordering_name(int ordering) {
  switch (ordering) {
    case CHOLMOD_NATURAL:
      return "natural";
    case CHOLMOD_AMD:
      return "AMD";
    case CHOLMOD_METIS:
      return "METIS";
    case CHOLMOD_NESDIS:
      return "NESDIS";
    case CHOLMOD_COLAMD:
      return "COLAMD";
    default:
      return "ordering " + std::to_string(ordering);
  }
}

void cholmod_setup(CholmodFactor& f, const SparseMatrix& a, int supernodal, Solver& solver) {
  cholmod_common* c = &f.common;
  c->supernodal = supernodal;
  f.a = to_cholmod(a, c);
  const auto start = Clock::now();
  f.factor = cholmod_analyze(f.a, c);
  if (f.factor == nullptr || cholmod_factorize(f.a, f.factor, c) == 0 || c->status != CHOLMOD_OK) {
    throw std::runtime_error(solver.name + ": factorisation failed, status " + std::to_string(c->status));
  }
  solver.factor_ms = ms_since(start);
  solver.factor_nonzeros = static_cast<long>(c->lnz);
  solver.ordering = ordering_name(c->method[c->selected].ordering);
  const auto n = static_cast<std::size_t>(a.rows());
  f.b = cholmod_zeros(n, 1, CHOLMOD_REAL, c);
  f.x = cholmod_zeros(n, 1, CHOLMOD_REAL, c);
  solver.solve = [&f, n](const Eigen::VectorXd& b, Eigen::VectorXd& x) {
    std::memcpy(f.b->x, b.data(), n * sizeof(double));
    const cholmod_dense* x_before = f.x;
    if (cholmod_solve2(CHOLMOD_A, f.factor, f.b, nullptr, &f.x, nullptr, &f.y, &f.e, &f.common) == 0 ||
        f.x != x_before) {
      throw std::runtime_error("cholmod_solve2 failed or replaced its result");
    }
    std::memcpy(x.data(), f.x->x, n * sizeof(double));
  };
}

double percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(samples.size() - 1));
  return samples[at];
}

void run(const Model& model, int rounds, int block) {
  const SparseMatrix& a = model.a;
  const Eigen::Index n = a.rows();
  EigenFactors ef;
  CholmodFactor simplicial;
  CholmodFactor supernodal;
  std::vector<Solver> solvers(8);

  // (a) rths's solve: Operator<SparseBackend>::run, integration.hpp.
  solvers[0].name = "Eigen LDLT, written out";
  auto start = Clock::now();
  ef.ldlt.compute(a);
  solvers[0].factor_ms = ms_since(start);
  if (ef.ldlt.info() != Eigen::Success) throw std::runtime_error(model.name + ": Eigen LDLT failed");
  ef.pivots_inverse = ef.ldlt.vectorD().cwiseInverse();
  ef.first = Eigen::VectorXd::Zero(n);
  ef.second = Eigen::VectorXd::Zero(n);
  solvers[0].factor_nonzeros = static_cast<long>(ef.ldlt.matrixL().nestedExpression().nonZeros());
  solvers[0].ordering = "AMD";
  solvers[0].solve = [&ef](const Eigen::VectorXd& b, Eigen::VectorXd& x) {
    ef.first = b;
    ef.second = ef.ldlt.permutationP() * ef.first;
    ef.ldlt.matrixL().solveInPlace(ef.second);
    ef.second.array() *= ef.pivots_inverse.array();
    ef.ldlt.matrixU().solveInPlace(ef.second);
    x = ef.ldlt.permutationPinv() * ef.second;
  };

  // (b) Eigen's own solve on the same factor.
  solvers[1].name = "Eigen LDLT, solve()";
  solvers[1].factor_ms = solvers[0].factor_ms;
  solvers[1].factor_nonzeros = solvers[0].factor_nonzeros;
  solvers[1].ordering = "AMD";
  solvers[1].solve = [&ef](const Eigen::VectorXd& b, Eigen::VectorXd& x) { x = ef.ldlt.solve(b); };

  // The same factor solved by solve_by_columns.
  solvers[2].name = "Eigen LDLT, CSC loops";
  solvers[2].factor_ms = solvers[0].factor_ms;
  solvers[2].factor_nonzeros = solvers[0].factor_nonzeros;
  solvers[2].ordering = "AMD";
  ef.permutation = ef.ldlt.permutationP().indices();
  if (!ef.ldlt.matrixL().nestedExpression().isCompressed()) throw std::runtime_error("Eigen's L not compressed");
  solvers[2].solve = [&ef](const Eigen::VectorXd& b, Eigen::VectorXd& x) {
    solve_by_columns(ef.ldlt.matrixL().nestedExpression(), ef.permutation, ef.pivots_inverse, b, ef.second, x);
  };

  // (d) Eigen's LL^T, written out the same way (no D).
  solvers[3].name = "Eigen LLT, written out";
  start = Clock::now();
  ef.llt.compute(a);
  solvers[3].factor_ms = ms_since(start);
  if (ef.llt.info() != Eigen::Success) throw std::runtime_error(model.name + ": Eigen LLT failed");
  solvers[3].factor_nonzeros = static_cast<long>(ef.llt.matrixL().nestedExpression().nonZeros());
  solvers[3].ordering = "AMD";
  solvers[3].solve = [&ef](const Eigen::VectorXd& b, Eigen::VectorXd& x) {
    ef.first = b;
    ef.second = ef.llt.permutationP() * ef.first;
    ef.llt.matrixL().solveInPlace(ef.second);
    ef.llt.matrixU().solveInPlace(ef.second);
    x = ef.llt.permutationPinv() * ef.second;
  };

  // (c) CHOLMOD, its default orderings (AMD, METIS when AMD fills much).
  solvers[4].name = "CHOLMOD simplicial LDLT";
  cholmod_setup(simplicial, a, CHOLMOD_SIMPLICIAL, solvers[4]);
  solvers[5].name = "CHOLMOD supernodal LLT";
  cholmod_setup(supernodal, a, CHOLMOD_SUPERNODAL, solvers[5]);

  // Eigen's LDL^T of A ordered as CHOLMOD's simplicial factor is (Perm: its row k is A's row
  // Perm[k]), solved by columns: whether CHOLMOD's lead is its ordering (postordered by its
  // elimination tree) or its solve.
  solvers[6].name = "Eigen LDLT, CHOLMOD's ordering, CSC loops";
  {
    const int* order = static_cast<const int*>(simplicial.factor->Perm);
    ef.cholmod_permutation.resize(n);
    for (int k = 0; k < static_cast<int>(n); ++k) ef.cholmod_permutation[order[k]] = k;
    Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> p(ef.cholmod_permutation);
    SparseMatrix reordered_a;
    reordered_a = a.selfadjointView<Eigen::Lower>().twistedBy(p);
    start = Clock::now();
    ef.reordered.compute(reordered_a);
    solvers[6].factor_ms = ms_since(start);
  }
  if (ef.reordered.info() != Eigen::Success) throw std::runtime_error(model.name + ": Eigen LDLT reordered failed");
  ef.reordered_pivots_inverse = ef.reordered.vectorD().cwiseInverse();
  solvers[6].factor_nonzeros = static_cast<long>(ef.reordered.matrixL().nestedExpression().nonZeros());
  solvers[6].ordering = solvers[4].ordering + " (CHOLMOD)";
  solvers[6].solve = [&ef](const Eigen::VectorXd& b, Eigen::VectorXd& x) {
    solve_by_columns(ef.reordered.matrixL().nestedExpression(), ef.cholmod_permutation, ef.reordered_pivots_inverse, b,
                     ef.second, x);
  };
  // And by Eigen's triangular solves, written out as rths does.
  solvers[7].name = "Eigen LDLT, CHOLMOD's ordering, written out";
  solvers[7].factor_ms = solvers[6].factor_ms;
  solvers[7].factor_nonzeros = solvers[6].factor_nonzeros;
  solvers[7].ordering = solvers[6].ordering;
  solvers[7].solve =
      [&ef, p = Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int>(ef.cholmod_permutation),
       p_inverse = Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int>(
           Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int>(ef.cholmod_permutation).inverse())](
          const Eigen::VectorXd& b, Eigen::VectorXd& x) {
        ef.second = p * b;
        ef.reordered.matrixL().solveInPlace(ef.second);
        ef.second.array() *= ef.reordered_pivots_inverse.array();
        ef.reordered.matrixU().solveInPlace(ef.second);
        x = p_inverse * ef.second;
      };

  // A right-hand side like a step's: smooth over the DOFs, its first entry changing every step.
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) b(i) = std::sin(0.37 * static_cast<double>(i)) + 1.0;
  for (Solver& s : solvers) {
    s.x = Eigen::VectorXd::Zero(n);
    s.samples_us.reserve(static_cast<std::size_t>(rounds) * static_cast<std::size_t>(block));
  }

  // The solutions agree: each against Eigen's LDL^T, and its residual.
  solvers[0].solve(b, solvers[0].x);
  const Eigen::VectorXd reference = solvers[0].x;
  for (Solver& s : solvers) {
    s.solve(b, s.x);
    const double difference = (s.x - reference).norm() / reference.norm();
    const double residual = (a * s.x - b).norm() / b.norm();
    if (!(difference <= 1e-10) || !(residual <= 1e-10)) {
      throw std::runtime_error(model.name + ", " + s.name + ": differs from Eigen's LDLT by " +
                               std::to_string(difference) + ", residual " + std::to_string(residual));
    }
  }

  long step = 0;
  for (int r = -1; r < rounds; ++r) {  // round -1: warm-up, not kept
    for (Solver& s : solvers) {
      const std::uint64_t allocated = allocations();
      for (int k = 0; k < block; ++k, ++step) {
        b(0) = 1.0 + std::sin(0.01 * static_cast<double>(step));
        const auto t0 = Clock::now();
        s.solve(b, s.x);
        const auto t1 = Clock::now();
        if (r >= 0) s.samples_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      if (r >= 0) {
        s.allocations += allocations() - allocated;
        s.solves += static_cast<std::uint64_t>(block);
      }
    }
  }

  for (const Solver& s : solvers) {
    std::printf("| %s | %ld | %ld | %s | %s | %ld | %.2f | %.2f | %.2f | %.2f |\n", model.name.c_str(),
                static_cast<long>(n), static_cast<long>(a.nonZeros()), s.name.c_str(), s.ordering.c_str(),
                s.factor_nonzeros, s.factor_ms, percentile(s.samples_us, 0.5), percentile(s.samples_us, 0.99),
                static_cast<double>(s.allocations) / static_cast<double>(s.solves));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  SuiteSparse_config.malloc_func = counting_malloc;
  SuiteSparse_config.calloc_func = counting_calloc;
  SuiteSparse_config.realloc_func = counting_realloc;
  // 10 rounds of 250 solves per solver (2500), after a round of warm-up; --quick: 2 of 50.
  const int rounds = quick ? 2 : 10;
  const int block = quick ? 50 : 250;
  std::printf(
      "| model | DOFs | nnz(A) | solver | ordering | nnz(L) | factor ms | solve p50 us | solve p99 us "
      "| allocations per solve |\n|---|---|---|---|---|---|---|---|---|---|\n");
  try {
    for (const std::uint32_t storeys : {100U, 1000U, 10000U}) {
      run(model_of("shear building " + std::to_string(storeys), rths::shear_building(storeys)), rounds, block);
    }
    const std::array<std::pair<std::uint32_t, std::uint32_t>, 3> frames{{{16, 52}, {24, 67}, {33, 98}}};
    for (const auto& [bays, storeys] : frames) {
      run(model_of("frame " + std::to_string(bays) + " x " + std::to_string(storeys), rths::plane_frame(bays, storeys)),
          rounds, block);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rths_bench_sparse_solvers: %s\n", e.what());
    return 1;
  }
  return 0;
}
