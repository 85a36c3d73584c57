#include "common/dynamics/linear_system.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>

#include <unsupported/Eigen/MatrixFunctions>

#include "common/dynamics/eigen_problems.hpp"

namespace rths {

namespace {

// The coefficients without leading zeros (a padded numerator such as [0, 0, k] is common).
std::span<const double> strip_leading_zeros(std::span<const double> coefficients) {
  std::size_t first = 0;
  while (first < coefficients.size() && coefficients[first] == 0.0) ++first;
  return coefficients.subspan(first);
}

void require_finite(std::span<const double> coefficients, const char* what) {
  for (const double c : coefficients) {
    if (!std::isfinite(c)) throw std::invalid_argument(fmt::format("{}: coefficient {} is not finite", what, c));
  }
}

// Diagonal similarity D^-1 M D with powers of two (Parlett & Reinsch 1969, as LAPACK's gebal without
// the permutations): exact in floating point, and it evens out the row and column norms of a
// companion matrix whose entries span ten decades (seed 004 Eq. 7: 1 .. 2.382e9). On that model it
// takes the ZOH step response's error against the continuous one from 9e-10 to 1e-13. Returns the
// diagonal of D.
Eigen::VectorXd balance(Eigen::MatrixXd& m) {
  const Eigen::Index n = m.rows();
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(n);
  constexpr double kRadix = 2.0;
  bool converged = false;
  while (!converged) {
    converged = true;
    for (Eigen::Index i = 0; i < n; ++i) {
      double column = 0.0;
      double row = 0.0;
      for (Eigen::Index j = 0; j < n; ++j) {
        if (j == i) continue;
        column += std::abs(m(j, i));
        row += std::abs(m(i, j));
      }
      if (column == 0.0 || row == 0.0) continue;
      const double total = column + row;
      double f = 1.0;
      double c = column;
      while (c < row / kRadix) {
        f *= kRadix;
        c *= kRadix * kRadix;
      }
      while (c > row * kRadix) {
        f /= kRadix;
        c /= kRadix * kRadix;
      }
      if ((c + row) / f < 0.95 * total) {  // c is now column f^2: (c + row) / f is the new sum
        converged = false;
        scale(i) *= f;
        m.row(i) /= f;
        m.col(i) *= f;
      }
    }
  }
  return scale;
}

// p(z) and p'(z) by Horner's rule (coefficients highest power first).
void evaluate(std::span<const double> coefficients, std::complex<double> z, std::complex<double>& value,
              std::complex<double>& derivative) {
  value = 0.0;
  derivative = 0.0;
  for (const double c : coefficients) {
    derivative = derivative * z + value;
    value = value * z + c;
  }
}

}  // namespace

ContinuousStateSpace from_transfer_function(std::span<const double> numerator, std::span<const double> denominator) {
  require_finite(numerator, "transfer function numerator");
  require_finite(denominator, "transfer function denominator");
  const std::span<const double> num = strip_leading_zeros(numerator);
  if (denominator.empty() || denominator[0] == 0.0) {
    throw std::invalid_argument("transfer function: the denominator is empty or its leading coefficient is 0");
  }
  if (num.empty()) throw std::invalid_argument("transfer function: the numerator is empty or all zero");
  const auto n = static_cast<Eigen::Index>(denominator.size()) - 1;
  if (num.size() > denominator.size()) {
    throw std::invalid_argument(fmt::format(
        "transfer function is improper: numerator degree {} exceeds denominator degree {}", num.size() - 1, n));
  }
  if (n > kMaxStates) {
    throw std::invalid_argument(
        fmt::format("transfer function has {} states, at most {} are supported", n, kMaxStates));
  }
  // Controllable canonical form of num/den normalised by den[0]: A's first row holds -a1..-an,
  // ones below the diagonal, B = e1; the numerator padded to n + 1 entries b0..bn gives
  // D = b0 and C = [b1 - a1 b0, ..., bn - an b0] (the biproper part taken out first).
  const double lead = denominator[0];
  Eigen::VectorXd a(n + 1);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(n + 1);
  for (Eigen::Index i = 0; i <= n; ++i) a(i) = denominator[static_cast<std::size_t>(i)] / lead;
  const auto offset = static_cast<Eigen::Index>(denominator.size() - num.size());
  for (std::size_t i = 0; i < num.size(); ++i) b(offset + static_cast<Eigen::Index>(i)) = num[i] / lead;

  ContinuousStateSpace model;
  model.a = StateMatrix::Zero(n, n);
  model.b = StateVector::Zero(n);
  model.c = OutputRow::Zero(n);
  model.d = b(0);
  for (Eigen::Index i = 0; i < n; ++i) {
    model.a(0, i) = -a(i + 1);
    if (i + 1 < n) model.a(i + 1, i) = 1.0;
    model.c(i) = b(i + 1) - a(i + 1) * b(0);
  }
  if (n > 0) model.b(0) = 1.0;
  return model;
}

DiscreteStateSpace zero_order_hold(const ContinuousStateSpace& model, double dt_s) {
  if (!(dt_s > 0.0) || !std::isfinite(dt_s)) {
    throw std::invalid_argument(fmt::format("zero_order_hold: dt_s must be positive, got {}", dt_s));
  }
  const Eigen::Index n = model.a.rows();
  // exp([A B; 0 0] dt) = [Ad Bd; 0 1] (Van Loan 1978): Bd = int_0^dt e^{A s} ds B exactly.
  Eigen::MatrixXd augmented = Eigen::MatrixXd::Zero(n + 1, n + 1);
  augmented.topLeftCorner(n, n) = model.a * dt_s;
  augmented.topRightCorner(n, 1) = model.b * dt_s;
  const Eigen::VectorXd scale = balance(augmented);
  const Eigen::MatrixXd balanced_exp = augmented.exp();
  // exp(D^-1 M D) = D^-1 exp(M) D, so exp(M) = D exp(balanced) D^-1.
  const Eigen::MatrixXd exp = scale.asDiagonal() * balanced_exp * scale.cwiseInverse().asDiagonal();

  DiscreteStateSpace discrete;
  discrete.a = exp.topLeftCorner(n, n);
  discrete.b = exp.topRightCorner(n, 1);
  discrete.c = model.c;
  discrete.d = model.d;
  return discrete;
}

std::complex<double> frequency_response(const ContinuousStateSpace& model, double omega_rad_per_s) {
  const Eigen::Index n = model.a.rows();
  if (n == 0) return model.d;
  const std::complex<double> s(0.0, omega_rad_per_s);
  const Eigen::MatrixXcd resolvent = s * Eigen::MatrixXcd::Identity(n, n) - model.a.cast<std::complex<double>>();
  const Eigen::VectorXcd x = resolvent.fullPivLu().solve(model.b.cast<std::complex<double>>());
  return (model.c.cast<std::complex<double>>() * x)(0) + model.d;
}

std::complex<double> frequency_response(const DiscreteStateSpace& model, double omega_rad_per_s, double dt_s) {
  const Eigen::Index n = model.a.rows();
  if (n == 0) return model.d;
  const std::complex<double> z = std::polar(1.0, omega_rad_per_s * dt_s);
  const Eigen::MatrixXcd resolvent = z * Eigen::MatrixXcd::Identity(n, n) - model.a.cast<std::complex<double>>();
  const Eigen::VectorXcd x = resolvent.fullPivLu().solve(model.b.cast<std::complex<double>>());
  return (model.c.cast<std::complex<double>>() * x)(0) + model.d;
}

std::vector<std::complex<double>> polynomial_roots(std::span<const double> coefficients) {
  require_finite(coefficients, "polynomial");
  const std::span<const double> p = strip_leading_zeros(coefficients);
  if (p.empty()) throw std::invalid_argument("polynomial_roots: the polynomial is zero");
  const auto n = static_cast<Eigen::Index>(p.size()) - 1;
  std::vector<std::complex<double>> roots;
  if (n == 0) return roots;
  // Eigenvalues of the (balanced) companion matrix, then Newton steps on the polynomial itself,
  // kept only while they reduce |p(z)|: the eigenvalues are backward stable for the companion
  // matrix, the polishing makes them accurate for the polynomial as given.
  Eigen::MatrixXd companion = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    companion(0, i) = -p[static_cast<std::size_t>(i) + 1] / p[0];
    if (i + 1 < n) companion(i + 1, i) = 1.0;
  }
  balance(companion);
  bool converged = false;
  const Eigen::VectorXcd eigenvalues = general_eigenvalues(companion, &converged);
  if (!converged) throw std::invalid_argument("polynomial_roots: the eigenvalues did not converge");
  roots.reserve(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) {
    std::complex<double> z = eigenvalues(i);
    std::complex<double> value;
    std::complex<double> derivative;
    evaluate(p, z, value, derivative);
    for (int iteration = 0; iteration < 4 && std::abs(value) > 0.0 && std::abs(derivative) > 0.0; ++iteration) {
      const std::complex<double> next = z - value / derivative;
      std::complex<double> next_value;
      std::complex<double> next_derivative;
      evaluate(p, next, next_value, next_derivative);
      if (!(std::abs(next_value) < std::abs(value))) break;
      z = next;
      value = next_value;
      derivative = next_derivative;
    }
    roots.push_back(z);
  }
  // A fixed order (by magnitude, then imaginary part) so callers can rely on it.
  std::sort(roots.begin(), roots.end(), [](const std::complex<double>& l, const std::complex<double>& r) {
    const double ml = std::abs(l);
    const double mr = std::abs(r);
    if (ml != mr) return ml < mr;
    return l.imag() < r.imag();
  });
  return roots;
}

std::vector<double> polynomial_from_roots(std::span<const std::complex<double>> roots) {
  // (s - r1)(s - r2)... in complex arithmetic; for roots closed under conjugation the imaginary
  // parts cancel to rounding and the real parts are the coefficients.
  std::vector<std::complex<double>> product{1.0};
  product.reserve(roots.size() + 1);
  for (const std::complex<double>& r : roots) {
    product.emplace_back(0.0);
    for (std::size_t i = product.size() - 1; i > 0; --i) product[i] -= r * product[i - 1];
  }
  std::vector<double> coefficients(product.size());
  std::transform(product.begin(), product.end(), coefficients.begin(),
                 [](const std::complex<double>& c) { return c.real(); });
  return coefficients;
}

}  // namespace rths
