#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "common/core/random.hpp"
#include "experiment.pb.h"

namespace rths {

// What the link does to one packet: `copies` is 0 (lost), 1, or 2 (duplicated); copy i arrives
// delay_s[i] after it was sent.
struct PacketFate {
  int copies = 1;
  std::array<double, 2> delay_s{};
  [[nodiscard]] bool lost() const { return copies == 0; }
};

// One measured one-way delay per line in seconds ('#' comments, blank lines skipped). Throws
// std::runtime_error naming the file and line of anything else, or a trace without delays.
std::vector<double> read_delay_trace(const std::filesystem::path& file);

// A delay that a packet exceeds with at most this probability: what a delay model's max_delay_s
// returns, and what the links' buffers are sized for.
constexpr double kDelayTailProbability = 1e-6;

// A packet delay distribution (config Impairment's jitter_model; jitter_s's uniform jitter when it
// names none): one registered component per member of the oneof (common/impairments/,
// docs/architecture.md §9), built with the Impairment and drawn from for every packet.
class JitterModel {
 public:
  JitterModel() = default;
  JitterModel(const JitterModel&) = delete;
  JitterModel& operator=(const JitterModel&) = delete;
  JitterModel(JitterModel&&) = delete;
  JitterModel& operator=(JitterModel&&) = delete;
  virtual ~JitterModel() = default;

  // The delay (s) of a packet whose constant part is delay_s, drawn with `rng`; `main` is false for
  // a duplicate's copy (a replayed trace steps through its values with the packets themselves only).
  // Allocation-free.
  virtual double draw_s(double delay_s, Rng& rng, bool main) = 0;
  // A delay that a packet exceeds with probability <= kDelayTailProbability (s), exact for the
  // bounded models. Sizes the in-flight buffers; never used to clip a delay.
  [[nodiscard]] virtual double max_delay_s(double delay_s) const = 0;
};

// How packets are lost (config Loss's model): one registered component per member of the oneof
// (common/impairments/), stepped once per packet with the loss stream.
class LossModel {
 public:
  LossModel() = default;
  LossModel(const LossModel&) = delete;
  LossModel& operator=(const LossModel&) = delete;
  LossModel(LossModel&&) = delete;
  LossModel& operator=(LossModel&&) = delete;
  virtual ~LossModel() = default;

  // Once, before the first packet (a Markov chain draws its first state).
  virtual void start(Rng& /*rng*/) {}
  // Whether the next packet is lost; allocation-free.
  virtual bool lost(Rng& rng) = 0;
};

// The impairment one direction of a link imposes (docs/architecture.md §4, proto `Impairment`): loss (independent
// or Gilbert-Elliott), a delay from a constant, uniform, normal, shifted-Pareto, gamma or empirical
// model, duplication, order kept or not. One implementation shared by the in-memory links and the
// relay. Delays, losses, duplicates and the duplicates' delays each draw from their own stream of
// the seed, so sweeping the loss rate with one seed changes which packets are lost and nothing else.
// The delay stream is consumed exactly as before these models existed: configs with only delay_s and
// jitter_s give bit-identical delays. The delay and loss models are the registered components the
// config names, built here once (the registry is not asked again per packet). Movable, not copyable.
class Impairment {
 public:
  Impairment() : Impairment(config::Impairment{}) {}
  // A trace_path that is relative resolves against the working directory.
  explicit Impairment(const config::Impairment& spec) : Impairment(spec, {}) {}
  // A relative trace_path resolves against base_dir (the config file's folder). Throws
  // std::runtime_error for a trace that cannot be read.
  Impairment(const config::Impairment& spec, const std::filesystem::path& base_dir);

  // The fate of the next packet sent: lost, or delivered once, or duplicated (the copy with a delay
  // of its own). Allocation-free. Each call is one packet and advances every stream, lost packets
  // included: a REPLAY trace's value i belongs to packet i.
  PacketFate next_packet();
  // Delay of the next packet (s), never negative; the delay part of next_packet() alone.
  double next_delay_s();

  [[nodiscard]] bool preserves_order() const { return !spec_.allow_reorder(); }
  // A delay that a packet exceeds with probability <= kDelayTailProbability (s), exact for the bounded
  // models (constant, uniform, empirical). Sizes the in-flight buffers; never used to clip a delay.
  [[nodiscard]] double max_delay_s() const { return max_delay_s_; }
  [[nodiscard]] double duplicate_probability() const { return spec_.duplicate_probability(); }
  [[nodiscard]] const config::Impairment& spec() const { return spec_; }

 private:
  config::Impairment spec_;
  std::unique_ptr<JitterModel> jitter_;
  std::unique_ptr<LossModel> loss_;  // nullptr: no loss
  double max_delay_s_ = 0;
  Rng delay_rng_;
  Rng loss_rng_;
  Rng duplicate_rng_;
  Rng copy_delay_rng_;
};

}  // namespace rths
