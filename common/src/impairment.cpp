#include "rths/common/impairment.hpp"

#include <algorithm>

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

Impairment::Impairment(const config::Impairment& spec) : spec_(spec), rng_(spec.seed()) {}

double Impairment::next_delay_s() {
  double delay = spec_.delay_s();
  if (spec_.jitter_s() > 0.0) {
    delay += spec_.jitter_s() * (2.0 * rng_.uniform() - 1.0);
  }
  return std::max(delay, 0.0);
}

}  // namespace rths
