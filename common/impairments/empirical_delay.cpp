// Measured delays (config EmpiricalDelay): a histogram sampled bin by weight and uniformly inside
// its bin, or a trace file of one-way delays, sampled or replayed in file order.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/core/component_registry.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

class HistogramDelay final : public JitterModel {
 public:
  // The one guard beside the rules below: N + 1 edges for N >= 1 weights, what the draws index.
  explicit HistogramDelay(const config::EmpiricalDelay& empirical)
      : edges_s_(empirical.bin_edge_s().begin(), empirical.bin_edge_s().end()) {
    const auto weights = static_cast<std::size_t>(empirical.bin_weight_size());
    if (weights == 0 || edges_s_.size() != weights + 1) {
      throw std::runtime_error(
          fmt::format("impairment histogram has {} edges and {} weights; expected N + 1 edges for N >= 1 weights",
                      edges_s_.size(), weights));
    }
    // Cumulative normalised weights, the last 1: a uniform draw < 1 always finds a bin.
    double total = 0;
    for (const double w : empirical.bin_weight()) {
      total += w;
      cumulative_.push_back(total);
    }
    for (auto& c : cumulative_) c /= total;
    cumulative_.back() = 1.0;
  }
  double draw_s(double delay_s, Rng& rng, bool /*main*/) override {
    const auto bin = static_cast<std::size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), rng.uniform()) -
                                              cumulative_.begin());
    const std::size_t i = std::min(bin, cumulative_.size() - 1);
    return delay_s + edges_s_[i] + (edges_s_[i + 1] - edges_s_[i]) * rng.uniform();
  }
  [[nodiscard]] double max_delay_s(double delay_s) const override { return delay_s + edges_s_.back(); }

 private:
  std::vector<double> edges_s_;
  std::vector<double> cumulative_;
};

class TraceDelay final : public JitterModel {
 public:
  // read_delay_trace refuses a trace without delays.
  TraceDelay(std::vector<double> trace_s, bool replay) : trace_s_(std::move(trace_s)), replay_(replay) {}
  double draw_s(double delay_s, Rng& rng, bool main) override {
    if (replay_ && main) {
      const double value = trace_s_[next_];
      next_ = next_ + 1 == trace_s_.size() ? 0 : next_ + 1;
      return delay_s + value;
    }
    // A duplicate's copy of a replayed trace is sampled from it too.
    const auto n = trace_s_.size();
    const auto i = std::min(n - 1, static_cast<std::size_t>(rng.uniform() * static_cast<double>(n)));
    return delay_s + trace_s_[i];
  }
  [[nodiscard]] double max_delay_s(double delay_s) const override {
    return delay_s + *std::max_element(trace_s_.begin(), trace_s_.end());
  }

 private:
  std::vector<double> trace_s_;
  bool replay_;
  std::size_t next_ = 0;
};

// Every number is finite by the time a component's rules run: the config validator checks them all first.
void validate(const config::EmpiricalDelay& empirical, const ComponentContext& /*context*/, const Checker& check) {
  const int edges = empirical.bin_edge_s_size();
  const int weights = empirical.bin_weight_size();
  const bool histogram = edges > 0 || weights > 0;
  const bool trace = empirical.has_trace_path();
  if (!check.expect(
          histogram || trace, "",
          "has no delays; expected a histogram (bin_edge_s: [...] bin_weight: [...]) or trace_path: \"...\"")) {
    return;
  }
  if (trace) {
    check.expect(!histogram, "trace_path",
                 "is given with a histogram; expected either bin_edge_s/bin_weight or trace_path, not both");
    check.expect(!empirical.trace_path().empty(), "trace_path",
                 "is empty; expected a file of one-way delays in seconds, one per line (a relative path starts from "
                 "the config file's folder)");
    return;
  }
  check.expect(empirical.order() == config::EmpiricalDelay::SAMPLE, "order",
               "is REPLAY, but a histogram has no order; expected SAMPLE, or a trace_path to replay");
  check.expect(edges >= 2, "bin_edge_s", fmt::format("has {} entries, expected at least 2 bin edges (s)", edges));
  check.expect(
      weights == edges - 1, "bin_weight",
      fmt::format("has {} entries for {} bin edges; expected one weight per bin ({})", weights, edges, edges - 1));
  if (edges >= 1) {
    check.at("bin_edge_s", 0)
        .expect(empirical.bin_edge_s(0) >= 0, "",
                fmt::format("is {}, expected a delay >= 0 s", empirical.bin_edge_s(0)));
  }
  for (int i = 1; i < edges; ++i) {
    check.at("bin_edge_s", i)
        .expect(empirical.bin_edge_s(i) > empirical.bin_edge_s(i - 1), "",
                fmt::format("is {}, not above the previous edge {}; expected increasing bin edges",
                            empirical.bin_edge_s(i), empirical.bin_edge_s(i - 1)));
  }
  double total = 0;
  bool signs_ok = true;
  for (int i = 0; i < weights; ++i) {
    signs_ok = check.at("bin_weight", i)
                   .expect(empirical.bin_weight(i) >= 0, "",
                           fmt::format("is {}, expected a weight >= 0", empirical.bin_weight(i))) &&
               signs_ok;
    total += empirical.bin_weight(i);
  }
  if (weights > 0 && signs_ok) {
    check.expect(total > 0, "bin_weight", "are all 0; expected at least one bin with a positive weight");
  }
}

// A relative trace_path starts from the config file's folder (context.base_dir).
std::unique_ptr<JitterModel> make(const config::EmpiricalDelay& empirical, const ComponentContext& context) {
  if (!empirical.has_trace_path()) return std::make_unique<HistogramDelay>(empirical);
  const std::filesystem::path path = empirical.trace_path();
  return std::make_unique<TraceDelay>(
      read_delay_trace(path.is_absolute() || context.base_dir.empty() ? path : context.base_dir / path),
      empirical.order() == config::EmpiricalDelay::REPLAY);
}

[[maybe_unused]] const bool kEmpiricalDelayRegistered =
    register_component<config::EmpiricalDelay, JitterModel>(validate, make);

}  // namespace
}  // namespace rths
