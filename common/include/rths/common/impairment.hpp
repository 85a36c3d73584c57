#pragma once

#include <cstdint>

#include "experiment.pb.h"

namespace rths {

// Reproducible 64-bit generator (splitmix64-seeded xoshiro256**): the same seed gives the same
// packet delays on every platform and standard library, so a study row can be re-run exactly.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next_u64();
  // Uniform in [0, 1).
  double uniform();

 private:
  std::uint64_t s_[4]{};
};

// The delay one direction of a link imposes on each packet (DESIGN §4; impairment models of the
// study issue extend this class). Shared by the in-memory links and, later, the relay.
class Impairment {
 public:
  Impairment() : Impairment(config::Impairment{}) {}
  explicit Impairment(const config::Impairment& spec);

  // Delay of the next packet (s), never negative.
  double next_delay_s();
  [[nodiscard]] bool preserves_order() const { return !spec_.allow_reorder(); }
  // Upper bound of any delay this model produces (s): sizes the in-flight buffers.
  [[nodiscard]] double max_delay_s() const { return spec_.delay_s() + spec_.jitter_s(); }

 private:
  config::Impairment spec_;
  Rng rng_;
};

}  // namespace rths
