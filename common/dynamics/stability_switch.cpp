// The stability switch criterion of seed 004 (docs/stability.md), with the digest's errata applied:
// the crossing phase by atan2 in [0, 2 pi) (Eqs. 26-27), the normalised Eq. 27b, the squared form of
// Eq. 28; and the neutral-equation guard that the paper leaves out.
#include "common/dynamics/stability_switch.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

namespace rths::stability {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kTwoPi = 2.0 * std::numbers::pi;
// A root u = phi^2 of Eq. 25 below this is the spurious u = 0 of gamma = 0.5 (no oscillation).
constexpr double kSmallestRoot = 1e-12;
// Where |a2| is this small Eq. 25 is linear in u.
constexpr double kLinear = 1e-14;
// Bisection steps of gamma_boundary: 2^-60 of the interval, below double precision.
constexpr int kBisections = 60;

// The real roots of a2 u^2 + a1 u + a0 = 0 (the stable form of the quadratic formula).
std::vector<double> real_roots(const Quartic& q) {
  if (std::abs(q.a2) < kLinear) {
    if (q.a1 == 0.0) return {};
    return {-q.a0 / q.a1};
  }
  const double disc = q.a1 * q.a1 - 4.0 * q.a2 * q.a0;
  if (disc < 0.0) return {};
  const double root = std::sqrt(disc);
  const double half = -0.5 * (q.a1 + std::copysign(root, q.a1));
  if (half == 0.0) return {0.0};
  return {half / q.a2, q.a0 / half};
}

}  // namespace

Quartic critical_frequency_equation(const Partition& p) {
  const double z2 = p.zeta * p.zeta;
  return Quartic{1.0 - 2.0 * p.alpha, 4.0 * (1.0 - 2.0 * p.beta) * z2 - 2.0 * (1.0 - p.alpha - p.gamma),
                 1.0 - 2.0 * p.gamma};
}

double characteristic_residual(const Partition& p, double phi, double omega) {
  using C = std::complex<double>;
  const C s(0.0, phi);
  const C numerical = p.alpha * s * s + 2.0 * p.beta * p.zeta * s + p.gamma;
  const C physical = (1.0 - p.alpha) * s * s + 2.0 * (1.0 - p.beta) * p.zeta * s + (1.0 - p.gamma);
  return std::abs(numerical + physical * std::exp(-s * omega));
}

Stability analyse(const Partition& p, double omega_max) {
  Stability out;
  // Neutral: |1 - alpha| > |alpha|. (alpha = 0.5 exactly is marginal, left to the crossings.)
  if (p.alpha < 0.5) {
    out.neutral_unstable = true;
    out.omega_cr = 0.0;
    out.tau_cr_s = 0.0;
  }
  const Quartic q = critical_frequency_equation(p);
  for (const double u : real_roots(q)) {
    if (!(u > kSmallestRoot)) continue;
    const double phi = std::sqrt(u);
    // The two parts at s = j phi: Gamma_n = -c - j d, Gamma_p = a + j b; -Gamma_n / Gamma_p =
    // e^{-j theta} gives sin theta = (b c - a d) / (a^2 + b^2), cos theta = (a c + b d) / (a^2 + b^2).
    const double a = (1.0 - p.gamma) - (1.0 - p.alpha) * u;
    const double b = 2.0 * (1.0 - p.beta) * p.zeta * phi;
    const double c = p.alpha * u - p.gamma;
    const double d = -2.0 * p.beta * p.zeta * phi;
    if (a == 0.0 && b == 0.0) continue;  // no delayed force at this frequency: nothing to turn
    double theta = std::atan2(b * c - a * d, a * c + b * d);
    if (theta < 0.0) theta += kTwoPi;
    // dG/du of G = |Gamma_p|^2 - |Gamma_n|^2: negative where |Gamma_n| overtakes |Gamma_p| as phi
    // grows, which is where the roots cross into the right half-plane with growing delay.
    const bool destabilising = 2.0 * q.a2 * u + q.a1 < 0.0;
    out.crossings.push_back(Crossing{phi, theta, destabilising});
  }
  std::sort(out.crossings.begin(), out.crossings.end(),
            [](const Crossing& x, const Crossing& y) { return x.phi < y.phi; });
  // The first switch is always listed, however far beyond omega_max it lies (a small delayed part
  // switches late): it is the critical delay.
  double first = kInfinity;
  for (const Crossing& c : out.crossings) first = std::min(first, c.theta_rad / c.phi);
  const double last = std::isfinite(first) ? std::max(omega_max, first) : omega_max;
  for (const Crossing& c : out.crossings) {
    for (int n = 0;; ++n) {
      const double omega = (c.theta_rad + kTwoPi * n) / c.phi;
      if (omega > last) break;
      out.switches.push_back(Switch{omega, c.destabilising});
    }
  }
  std::sort(out.switches.begin(), out.switches.end(),
            [](const Switch& x, const Switch& y) { return x.omega < y.omega; });
  if (out.neutral_unstable) {
    return out;
  }
  out.delay_independent = out.crossings.empty();
  // Walk the switches with the count of right-half-plane roots, 0 at no delay (the reference is
  // stable): +2 at a destabilising switch, -2 at a stabilising one.
  out.omega_cr = kInfinity;
  int unstable_roots = 0;
  double window_start = 0.0;
  for (const Switch& s : out.switches) {
    if (s.destabilising && unstable_roots == 0) {
      out.stable.push_back(StableWindow{window_start, s.omega});
      out.omega_cr = std::min(out.omega_cr, s.omega);
    }
    const int before = unstable_roots;
    unstable_roots = std::max(0, unstable_roots + (s.destabilising ? 2 : -2));
    if (before > 0 && unstable_roots == 0) {
      window_start = s.omega;
    }
  }
  if (unstable_roots == 0) {
    // Stable beyond the last switch considered: to omega_max, or for ever without any crossing.
    out.stable.push_back(StableWindow{window_start, out.crossings.empty() ? kInfinity : last});
  }
  out.tau_cr_s = out.omega_cr / p.omega_n_rad_per_s;
  return out;
}

std::optional<GammaBand> delay_independent_gamma_band(double alpha, double beta, double zeta) {
  // (gamma - alpha)^2 + B (gamma - alpha) + C < 0 with B = 4 p, C = -4 p (1 - 2 alpha - p).
  const double p = (1.0 - 2.0 * beta) * zeta * zeta;
  const double b = 4.0 * p;
  const double c = -4.0 * p * (1.0 - 2.0 * alpha - p);
  const double disc = b * b - 4.0 * c;
  if (!(disc > 0.0)) return std::nullopt;
  const double root = std::sqrt(disc);
  return GammaBand{alpha + 0.5 * (-b - root), alpha + 0.5 * (-b + root)};
}

double zero_order_hold_delay_s(double sample_rate_hz) {
  return 0.5 / sample_rate_hz;
}

double allowable_transfer_delay_s(double tau_cr_s, double tau_comm_s, double sample_rate_hz) {
  return tau_cr_s - tau_comm_s - zero_order_hold_delay_s(sample_rate_hz);
}

double minimum_sample_rate_hz(double tau_cr_s, double tau_comm_s, double tau_ts_s) {
  const double room = tau_cr_s - tau_comm_s - tau_ts_s;
  return room > 0.0 ? 0.5 / room : kInfinity;
}

std::optional<double> gamma_boundary(double alpha, double beta, double zeta, double omega) {
  const auto omega_cr = [&](double gamma) { return analyse(Partition{alpha, beta, gamma, zeta, 1.0}).omega_cr; };
  double low = 0.0;
  double high = std::nextafter(alpha, 0.0);
  if (!(high > low) || omega_cr(low) >= omega || omega_cr(high) < omega) return std::nullopt;
  for (int i = 0; i < kBisections; ++i) {
    const double mid = 0.5 * (low + high);
    (omega_cr(mid) < omega ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

Partition smith_loop_partition(const Partition& reference, const ModelError& error) {
  Partition loop = reference;
  loop.alpha = reference.alpha + (1.0 + error.mass) * (1.0 - reference.alpha);
  loop.beta = reference.beta + (1.0 + error.damping) * (1.0 - reference.beta);
  loop.gamma = reference.gamma + (1.0 + error.stiffness) * (1.0 - reference.gamma);
  return loop;
}

std::optional<std::string> partition_problem(const Partition& p) {
  for (const auto& [value, name, what] : {std::tuple{p.alpha, "alpha", "the numerical share of the mass"},
                                          std::tuple{p.beta, "beta", "the numerical share of the damping"},
                                          std::tuple{p.gamma, "gamma", "the numerical share of the stiffness"}}) {
    if (!(value >= 0.0 && value <= 1.0)) {
      return fmt::format("{}: is {}, expected {} from 0 to 1", name, value, what);
    }
  }
  if (!(p.zeta > 0.0 && std::isfinite(p.zeta))) {
    return fmt::format(
        "zeta: is {}, expected the reference structure's damping ratio above 0 (seed 004's "
        "criterion needs damping: undamped, every delay destabilises)",
        p.zeta);
  }
  if (!(p.omega_n_rad_per_s > 0.0 && std::isfinite(p.omega_n_rad_per_s))) {
    return fmt::format("omega_n: is {}, expected the reference structure's natural frequency above 0 rad/s",
                       p.omega_n_rad_per_s);
  }
  return std::nullopt;
}

}  // namespace rths::stability
