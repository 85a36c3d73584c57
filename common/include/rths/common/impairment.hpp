#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "experiment.pb.h"
#include "rths/common/random.hpp"

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

// The impairment one direction of a link imposes (docs/architecture.md §4, proto `Impairment`): loss (independent
// or Gilbert-Elliott), a delay from a constant, uniform, normal, shifted-Pareto, gamma or empirical
// model, duplication, order kept or not. One implementation shared by the in-memory links and the
// relay. Delays, losses, duplicates and the duplicates' delays each draw from their own stream of
// the seed, so sweeping the loss rate with one seed changes which packets are lost and nothing else.
// The delay stream is consumed exactly as before these models existed: configs with only delay_s and
// jitter_s give bit-identical delays.
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
  // A delay that a packet exceeds with probability <= 1e-6 (s), exact for the bounded models
  // (constant, uniform, empirical). Sizes the in-flight buffers; never used to clip a delay.
  [[nodiscard]] double max_delay_s() const { return max_delay_s_; }
  [[nodiscard]] double duplicate_probability() const { return spec_.duplicate_probability(); }
  [[nodiscard]] const config::Impairment& spec() const { return spec_; }

 private:
  enum class Model : std::uint8_t { kUniform, kNormal, kPareto, kGamma, kHistogram, kTraceSample, kTraceReplay };

  // The variable part of a delay, drawn with `rng` (the trace cursor only for the main stream).
  double draw_delay_s(Rng& rng, bool replay_cursor);
  bool draw_loss();
  [[nodiscard]] double compute_max_delay_s() const;

  config::Impairment spec_;
  Model model_ = Model::kUniform;
  // Histogram: edges and cumulative normalised weights (last = 1); trace: the delays.
  std::vector<double> edges_s_;
  std::vector<double> cumulative_;
  std::vector<double> trace_s_;
  std::size_t replay_next_ = 0;
  bool bad_state_ = false;  // Gilbert-Elliott
  double max_delay_s_ = 0;
  Rng delay_rng_;
  Rng loss_rng_;
  Rng duplicate_rng_;
  Rng copy_delay_rng_;
};

}  // namespace rths
