// A linear command -> displacement model of an actuator (config LinearActuator): a transfer function
// or a state space, discretised exactly at the site's rate.
#include "node_physical/actuators/linear_actuator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "common/core/random.hpp"
#include "common/dynamics/eigen_problems.hpp"

namespace rths {
namespace {

// A step length must match the rate a LinearActuator was discretised at to this relative precision.
constexpr double kDtTolerance = 1e-9;

// A perturbed complex pair keeps a damping ratio below this, so it stays a complex pair.
constexpr double kMaxPerturbedDamping = 0.999;

double horner(std::span<const double> coefficients, double s) {
  double value = 0.0;
  for (const double c : coefficients) value = value * s + c;
  return value;
}

// PlantPerturbation on a set of roots (closed under conjugation): each complex pair's natural
// frequency |p| and damping ratio -Re(p)/|p| times their own factor 1 + relative U(-1, 1), each real
// root's magnitude times one. Fixed order of draws from `rng`: the groups in the order of
// polynomial_roots (by magnitude, then imaginary part; a pair is met at its negative-imaginary
// member), a pair drawing its frequency factor and then its damping factor.
std::vector<std::complex<double>> perturb(const std::vector<std::complex<double>>& roots, double relative, Rng& rng) {
  const auto factor = [&] { return 1.0 + relative * (2.0 * rng.uniform() - 1.0); };
  std::vector<std::complex<double>> out;
  out.reserve(roots.size());
  for (const auto& r : roots) {
    if (r.imag() > 0.0) continue;  // the upper member of a pair: made with the lower one
    if (r.imag() == 0.0) {
      out.push_back(r * factor());
      continue;
    }
    const double omega = std::abs(r) * factor();
    const double zeta = std::clamp(-r.real() / std::abs(r) * factor(), -kMaxPerturbedDamping, kMaxPerturbedDamping);
    const std::complex<double> p(-zeta * omega, omega * std::sqrt(1.0 - zeta * zeta));
    out.push_back(p);
    out.push_back(std::conj(p));
  }
  return out;
}

// The guards of the model's arrays: 1 to kMaxStates states, and a, b, c of their sizes.
ContinuousStateSpace from_state_space(const config::StateSpaceModel& ss) {
  const int n = static_cast<int>(ss.states());
  if (n < 1 || n > kMaxStates) {
    throw std::invalid_argument(
        fmt::format("actuator state_space: states is {}, expected 1 to {}", ss.states(), kMaxStates));
  }
  const auto nn = static_cast<std::size_t>(n);
  if (static_cast<std::size_t>(ss.a_size()) != nn * nn || static_cast<std::size_t>(ss.b_size()) != nn ||
      static_cast<std::size_t>(ss.c_size()) != nn) {
    throw std::invalid_argument(
        fmt::format("actuator state_space: a, b, c have {}, {}, {} entries, expected {}, {}, {} for {} states",
                    ss.a_size(), ss.b_size(), ss.c_size(), nn * nn, nn, nn, n));
  }
  ContinuousStateSpace model;
  model.a = StateMatrix::Zero(n, n);
  model.b = StateVector::Zero(n);
  model.c = OutputRow::Zero(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) model.a(i, j) = ss.a(i * n + j);
    model.b(i) = ss.b(i);
    model.c(i) = ss.c(i);
  }
  model.d = ss.d();
  return model;
}

}  // namespace

LinearActuator::LinearActuator(const ContinuousStateSpace& model, double dt_s)
    : continuous_(model), discrete_(zero_order_hold(model, dt_s)), dt_s_(dt_s) {
  output_rate_row_ = continuous_.c * continuous_.a;
  output_rate_input_ = (continuous_.c * continuous_.b)(0);
  reset();
}

InterfaceMotion LinearActuator::step(double command_m, double /*load_force_n*/, double dt_s) {
  if (!(std::abs(dt_s - dt_s_) <= kDtTolerance * dt_s_)) {  // negated: a NaN dt fails it too
    throw std::invalid_argument(
        fmt::format("LinearActuator: stepped with dt {} s, discretised at {} s (the site rate)", dt_s, dt_s_));
  }
  x_ = discrete_.a * x_ + discrete_.b * command_m;
  // The output at the step's end, the command still held (the specimen's timing contract).
  const double displacement = (discrete_.c * x_)(0) + discrete_.d * command_m;
  // With D = 0 the output is continuous and y' = C (A x + B u) exactly at the step's end; a
  // biproper model's output jumps with the command, so it gets a backward difference.
  const double velocity = discrete_.d == 0.0 ? (output_rate_row_ * x_)(0) + output_rate_input_ * command_m
                                             : (displacement - displacement_m_) / dt_s_;
  const double acceleration = (velocity - velocity_m_per_s_) / dt_s_;
  displacement_m_ = displacement;
  velocity_m_per_s_ = velocity;
  return {displacement, velocity, acceleration};
}

void LinearActuator::reset() {
  x_ = StateVector::Zero(continuous_.a.rows());
  displacement_m_ = 0.0;
  velocity_m_per_s_ = 0.0;
}

double LinearActuator::actuator_force_n() const {
  return std::numeric_limits<double>::quiet_NaN();
}

void LinearActuator::report(const ActuatorCounters& counters, const config::ActuatorLimits& limits,
                            const config::SensorNoise& noise, results::PlantReport& out) const {
  report_actuator(*out.mutable_linear(), counters, limits, noise);
}

ContinuousStateSpace continuous_model(const config::LinearActuator& linear) {
  if (linear.has_state_space()) return from_state_space(linear.state_space());
  const std::vector<double> num(linear.numerator().begin(), linear.numerator().end());
  const std::vector<double> den(linear.denominator().begin(), linear.denominator().end());
  // from_transfer_function guards properness, the state count and a numerator not all zero.
  ContinuousStateSpace nominal = from_transfer_function(num, den);
  if (!linear.has_perturbation() || linear.perturbation().relative() == 0.0) return nominal;

  const double relative = linear.perturbation().relative();
  Rng rng(linear.perturbation().seed());
  // Denominator roots first, then the numerator's.
  const std::vector<std::complex<double>> perturbed_poles = perturb(polynomial_roots(den), relative, rng);
  const std::vector<std::complex<double>> zeros = polynomial_roots(num);
  const std::vector<std::complex<double>> perturbed_zeros = perturb(zeros, relative, rng);

  std::vector<double> new_den = polynomial_from_roots(perturbed_poles);  // monic
  std::vector<double> new_num = polynomial_from_roots(perturbed_zeros);  // monic
  // Keep the static gain num(0)/den(0); a zero at the origin has none, so then the leading
  // coefficients' ratio is kept instead.
  const double num0 = horner(num, 0.0);
  const double new_num0 = new_num.back();
  double scale = *std::find_if(num.begin(), num.end(), [](double c) { return c != 0.0; }) / den[0];
  if (num0 != 0.0 && new_num0 != 0.0) scale = num0 / horner(den, 0.0) * new_den.back() / new_num0;
  for (double& c : new_num) c *= scale;
  return from_transfer_function(new_num, new_den);
}

namespace {

// The first of `roots` not in the open left half-plane: what makes an actuator model unstable.
template <class Roots>
std::optional<std::complex<double>> first_unstable(const Roots& roots) {
  for (const std::complex<double> root : roots) {
    if (!(root.real() < 0)) return root;
  }
  return std::nullopt;
}

// A transfer function (proper, of order 1 to kMaxStates, stable) or a state space (stable), exactly
// one; a perturbation only of a transfer function, below 1.
void validate(const config::LinearActuator& linear, const ComponentContext& /*context*/, const Checker& check) {
  const bool tf = linear.numerator_size() > 0 || linear.denominator_size() > 0;
  check.require(tf != linear.has_state_space(), "",
                tf ? "has both a transfer function and state_space; expected one of them"
                   : "has no model; expected numerator: [...] denominator: [...] (s, highest power first) or "
                     "state_space { ... }");
  if (linear.has_state_space()) {
    const auto& ss = linear.state_space();
    const auto n = static_cast<int>(ss.states());
    check.require(n >= 1 && n <= kMaxStates, "state_space.states",
                  fmt::format("is {}, expected 1..{} states", n, kMaxStates));
    bool sized = check.expect(ss.a_size() == n * n, "state_space.a",
                              fmt::format("has {} entries, expected states x states = {}", ss.a_size(), n * n));
    sized =
        check.expect(ss.b_size() == n, "state_space.b", fmt::format("has {} entries, expected {}", ss.b_size(), n)) &&
        sized;
    sized =
        check.expect(ss.c_size() == n, "state_space.c", fmt::format("has {} entries, expected {}", ss.c_size(), n)) &&
        sized;
    check.expect(!linear.has_perturbation(), "perturbation",
                 "is given with a state space; expected a transfer function to perturb");
    if (!sized) return;
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::MatrixXd a = Eigen::Map<const RowMajor>(ss.a().data(), n, n);
    if (const auto pole = first_unstable(general_eigenvalues(a))) {
      check.expect(false, "state_space.a",
                   fmt::format("has an eigenvalue {}{:+}j with real part >= 0; expected a stable actuator model",
                               pole->real(), pole->imag()));
    }
    return;
  }
  const int nd = linear.denominator_size();
  const int nn = linear.numerator_size();
  check.require(nd >= 2 && nd <= kMaxStates + 1, "denominator",
                fmt::format("has {} coefficients, expected 2..{} (order 1..{}, highest power first)", nd,
                            kMaxStates + 1, kMaxStates));
  const bool leading =
      check.expect(linear.denominator(0) != 0, "denominator[0]", "is 0; expected a nonzero leading coefficient");
  const bool proper = check.expect(
      nn >= 1 && nn <= nd, "numerator",
      fmt::format("has {} coefficients for a denominator of {}; expected a proper model (1..{})", nn, nd, nd));
  check.expect(!proper || std::ranges::any_of(linear.numerator(), [](double c) { return c != 0.0; }), "numerator",
               "has only zeros; expected a model whose output follows its command");
  if (leading) {
    const std::span<const double> den(linear.denominator().data(), static_cast<std::size_t>(nd));
    if (const auto pole = first_unstable(polynomial_roots(den))) {
      check.expect(false, "denominator",
                   fmt::format("has a root {}{:+}j with real part >= 0; expected a stable actuator model", pole->real(),
                               pole->imag()));
    }
  }
  if (linear.has_perturbation()) {
    const double r = linear.perturbation().relative();
    check.expect(linear.perturbation().has_relative() && r >= 0 && r < 1, "perturbation.relative",
                 fmt::format("is {}, expected a relative perturbation in [0, 1)", r));
  }
}

std::unique_ptr<ActuatorDynamics> make(const config::LinearActuator& linear, const ComponentContext& context) {
  return std::make_unique<LinearActuator>(continuous_model(linear), 1.0 / context.rate_hz);
}

std::string sketch(const config::LinearActuator& /*linear*/) {
  return "numerator: [...] denominator: [...]";
}

[[maybe_unused]] const bool kLinearActuatorRegistered =
    register_component<config::LinearActuator, ActuatorDynamics>(validate, make) &&
    register_fact<ConfigSketch, config::LinearActuator>(sketch);

}  // namespace
}  // namespace rths
