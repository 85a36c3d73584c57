#pragma once

#include <array>
#include <cstddef>

namespace rths {

// Polynomials in s, lowest power first, in fixed arrays (no allocation): what the controllers that
// fit a polynomial to their last targets build their weights from (polynomial_extrapolation.hpp,
// frame_inverse_command.hpp). Targets sit at s = 0, -1, ..., -(nodes - 1) in steps, newest first.

// The Lagrange basis polynomial of node j: L_j(s) = prod_{i != j} (s + i) / (i - j), 1 at node j and
// 0 at the others. For nodes <= N.
template <std::size_t N>
std::array<double, N> lagrange_basis(int j, int nodes) {
  std::array<double, N> basis{};
  basis[0] = 1.0;
  int degree = 0;
  for (int i = 0; i < nodes; ++i) {
    if (i == j) continue;
    const double denominator = i - j;
    for (int q = degree + 1; q > 0; --q) basis[q] = (basis[q - 1] + i * basis[q]) / denominator;
    basis[0] = i * basis[0] / denominator;
    ++degree;
  }
  return basis;
}

// The `derivative`-th derivative at s of the polynomial p of degree `degree` (Horner's scheme).
template <std::size_t N>
double polynomial_derivative(const std::array<double, N>& p, int degree, int derivative, double s) {
  double sum = 0.0;
  for (int j = degree; j >= derivative; --j) {
    double factor = 1.0;
    for (int q = 0; q < derivative; ++q) factor *= j - q;
    sum = sum * s + factor * p[static_cast<std::size_t>(j)];
  }
  return sum;
}

}  // namespace rths
