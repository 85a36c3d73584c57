#include "common/core/random.hpp"

#include <cmath>

namespace rths {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}
std::uint64_t rotl(std::uint64_t x, unsigned k) {
  return (x << k) | (x >> (64U - k));
}
}  // namespace

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
  return stream == 0 ? seed : splitmix64(x);
}

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) {
    s = splitmix64(seed);
  }
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17U;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next_u64() >> 11U) * 0x1.0p-53;
}

double Rng::normal() {
  // Only log and sqrt (correctly rounded in practice), no sin/cos: the same numbers everywhere.
  for (;;) {
    const double u = 2.0 * uniform() - 1.0;
    const double v = 2.0 * uniform() - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

double Rng::gamma(double shape) {
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) U^(1/a) (Marsaglia & Tsang 2000, section 6); 1 - U avoids U = 0.
    const double boost = std::pow(1.0 - uniform(), 1.0 / shape);
    return gamma(shape + 1.0) * boost;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = uniform();
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace rths
