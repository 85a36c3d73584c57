#pragma once

#include <complex>
#include <span>
#include <vector>

#include <Eigen/Dense>

// Linear time-invariant SISO models: realisation, exact discretisation, frequency response, roots.
// In common/ because more than one part steps a linear system: the actuator plants of node_physical,
// the config checks of an actuator model, the ground-motion filter, and a state-space prediction model
// in smith_predictor could, without depending on a node.
namespace rths {

// Largest model order (an actuator's, a prediction model's): fixed-capacity Eigen storage, so
// stepping a model never allocates.
inline constexpr int kMaxStates = 8;

using StateMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kMaxStates, kMaxStates>;
using StateVector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxStates, 1>;
using OutputRow = Eigen::Matrix<double, 1, Eigen::Dynamic, Eigen::RowMajor, 1, kMaxStates>;

// Continuous SISO model x' = A x + B u, y = C x + D u.
struct ContinuousStateSpace {
  StateMatrix a;
  StateVector b;
  OutputRow c;
  double d = 0.0;
};

// Discrete SISO model x[k+1] = A x[k] + B u[k], y[k] = C x[k] + D u[k].
struct DiscreteStateSpace {
  StateMatrix a;
  StateVector b;
  OutputRow c;
  double d = 0.0;
};

// Controllable canonical realisation of num(s)/den(s) (coefficients highest power first, proper,
// den's leading coefficient nonzero). Throws std::invalid_argument on an improper or empty model
// or more than kMaxStates states.
ContinuousStateSpace from_transfer_function(std::span<const double> numerator, std::span<const double> denominator);

// Exact zero-order-hold discretisation (matrix exponential of the augmented [A B; 0 0] dt).
DiscreteStateSpace zero_order_hold(const ContinuousStateSpace& model, double dt_s);

// G(j omega) of a continuous model and G(e^{j omega dt}) of a discrete one.
std::complex<double> frequency_response(const ContinuousStateSpace& model, double omega_rad_per_s);
std::complex<double> frequency_response(const DiscreteStateSpace& model, double omega_rad_per_s, double dt_s);

// Roots of a real polynomial (highest power first) and the monic polynomial of given roots.
std::vector<std::complex<double>> polynomial_roots(std::span<const double> coefficients);
std::vector<double> polynomial_from_roots(std::span<const std::complex<double>> roots);

}  // namespace rths
