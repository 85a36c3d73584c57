#pragma once

#include <array>
#include <cstdint>

namespace rths {

// Reproducible 64-bit generator (splitmix64-seeded xoshiro256**): the same seed gives the same
// numbers on every platform and standard library (packet delays and losses, sensor noise, actuator
// perturbations, synthetic ground motions), so a run and a study row can be repeated exactly.
// The distributions below are written out on top of it for the same reason: std::normal_distribution
// and friends are implementation-defined and differ between standard libraries.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next_u64();
  // Uniform in [0, 1).
  double uniform();
  // Standard normal (Marsaglia polar method; the second value of each pair is discarded, so the
  // stream holds no hidden state beyond the generator's).
  double normal();
  // Gamma(shape, 1), shape > 0 (Marsaglia & Tsang 2000; shape < 1 boosted by U^(1/shape)).
  double gamma(double shape);

 private:
  std::array<std::uint64_t, 4> s_{};
};

// The seed of stream `stream` of one seed: 0 is the seed itself, the others splitmix64-scrambled,
// so that the streams of one seed (a link's delays, losses, duplicates) are independent.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace rths
