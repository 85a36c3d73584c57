#include "rths/common/impairment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "rths/common/input_file.hpp"

namespace rths {

namespace {
// Buffers are sized for the delay a packet exceeds with this probability.
constexpr double kTailProbability = 1e-6;
// Standard-normal quantile of 1 - kTailProbability.
constexpr double kNormalTailZ = 4.753424308822899;
}  // namespace

std::vector<double> read_delay_trace(const std::filesystem::path& file) {
  check_input_file(file, "delay trace");  // a regular file within its bound, before a byte is read
  std::ifstream in(file);
  if (!in) {
    throw std::runtime_error(fmt::format("cannot open delay trace {}: {}", file.string(), std::strerror(errno)));
  }
  std::vector<double> delays;
  std::string line;
  std::size_t number = 0;
  constexpr std::string_view kSpace = " \t\r";
  while (read_input_line(in, line, file, number + 1)) {
    ++number;
    std::string_view text(line);
    text = text.substr(0, text.find('#'));
    const auto first = text.find_first_not_of(kSpace);
    if (first == std::string_view::npos) continue;
    text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(value)) {
      throw std::runtime_error(
          fmt::format("{}:{}: \"{}\" is not a delay; expected one one-way delay in seconds per "
                      "line ('#' starts a comment)",
                      file.string(), number, text));
    }
    if (value < 0) {
      throw std::runtime_error(
          fmt::format("{}:{}: delay {} is negative; expected a one-way delay >= 0 s", file.string(), number, value));
    }
    delays.push_back(value);
  }
  if (delays.empty()) {
    throw std::runtime_error(
        fmt::format("{}: has no delays; expected one one-way delay in seconds per line", file.string()));
  }
  return delays;
}

Impairment::Impairment(const config::Impairment& spec, const std::filesystem::path& base_dir)
    : spec_(spec),
      delay_rng_(stream_seed(spec.seed(), 0)),
      loss_rng_(stream_seed(spec.seed(), 1)),
      duplicate_rng_(stream_seed(spec.seed(), 2)),
      copy_delay_rng_(stream_seed(spec.seed(), 3)) {
  switch (spec_.jitter_model_case()) {
    case config::Impairment::kNormal:
      model_ = Model::kNormal;
      break;
    case config::Impairment::kPareto:
      model_ = Model::kPareto;
      break;
    case config::Impairment::kGamma:
      model_ = Model::kGamma;
      break;
    case config::Impairment::kEmpirical: {
      const auto& empirical = spec_.empirical();
      if (empirical.has_trace_path()) {
        const std::filesystem::path path = empirical.trace_path();
        trace_s_ = read_delay_trace(path.is_absolute() || base_dir.empty() ? path : base_dir / path);
        model_ = empirical.order() == config::EmpiricalDelay::REPLAY ? Model::kTraceReplay : Model::kTraceSample;
      } else {
        model_ = Model::kHistogram;
        edges_s_.assign(empirical.bin_edge_s().begin(), empirical.bin_edge_s().end());
        double total = 0;
        for (const double w : empirical.bin_weight()) {
          total += w;
          cumulative_.push_back(total);
        }
        for (auto& c : cumulative_) c /= total;
        if (!cumulative_.empty()) cumulative_.back() = 1.0;  // a uniform draw < 1 always finds a bin
        if (edges_s_.size() != cumulative_.size() + 1 || total <= 0) {
          throw std::runtime_error(
              fmt::format("impairment histogram has {} edges and {} weights summing to {}; "
                          "expected N + 1 edges for N weights, not all 0",
                          edges_s_.size(), cumulative_.size(), total));
        }
      }
      break;
    }
    case config::Impairment::JITTER_MODEL_NOT_SET:
      model_ = Model::kUniform;
      break;
  }
  if (spec_.loss().has_gilbert_elliott()) {
    const auto& ge = spec_.loss().gilbert_elliott();
    const double rate = ge.p_good_to_bad() + ge.p_bad_to_good();
    bad_state_ = rate > 0 && loss_rng_.uniform() < ge.p_good_to_bad() / rate;
  }
  max_delay_s_ = compute_max_delay_s();
}

double Impairment::draw_delay_s(Rng& rng, bool replay_cursor) {
  const double base = spec_.delay_s();
  switch (model_) {
    case Model::kUniform:
      // The expression and draw count of the original uniform model: existing configs replay exactly.
      if (spec_.jitter_s() > 0.0) return std::max(base + spec_.jitter_s() * (2.0 * rng.uniform() - 1.0), 0.0);
      return std::max(base, 0.0);
    case Model::kNormal:
      return std::max(base + spec_.normal().sd_s() * rng.normal(), 0.0);
    case Model::kPareto: {
      // Inverse CDF of the Lomax distribution; 1 - U is in (0, 1].
      const auto& p = spec_.pareto();
      return base + p.scale_s() * (std::pow(1.0 - rng.uniform(), -1.0 / p.shape()) - 1.0);
    }
    case Model::kGamma:
      return base + spec_.gamma().scale_s() * rng.gamma(spec_.gamma().shape());
    case Model::kHistogram: {
      const auto bin = static_cast<std::size_t>(
          std::upper_bound(cumulative_.begin(), cumulative_.end(), rng.uniform()) - cumulative_.begin());
      const std::size_t i = std::min(bin, cumulative_.size() - 1);
      return base + edges_s_[i] + (edges_s_[i + 1] - edges_s_[i]) * rng.uniform();
    }
    case Model::kTraceReplay:
      if (replay_cursor) {
        const double value = trace_s_[replay_next_];
        replay_next_ = replay_next_ + 1 == trace_s_.size() ? 0 : replay_next_ + 1;
        return base + value;
      }
      [[fallthrough]];  // a duplicate's copy: sampled from the trace
    case Model::kTraceSample: {
      const auto n = trace_s_.size();
      const auto i = std::min(n - 1, static_cast<std::size_t>(rng.uniform() * static_cast<double>(n)));
      return base + trace_s_[i];
    }
  }
  return base;
}

bool Impairment::draw_loss() {
  if (!spec_.has_loss()) return false;
  const auto& loss = spec_.loss();
  if (loss.has_gilbert_elliott()) {
    // Lost with the probability of the current state, then one step of the chain.
    const auto& ge = loss.gilbert_elliott();
    const bool lost = loss_rng_.uniform() < (bad_state_ ? ge.loss_in_bad() : ge.loss_in_good());
    const double u = loss_rng_.uniform();
    bad_state_ = bad_state_ ? u >= ge.p_bad_to_good() : u < ge.p_good_to_bad();
    return lost;
  }
  return loss.probability() > 0 && loss_rng_.uniform() < loss.probability();
}

PacketFate Impairment::next_packet() {
  // Every stream advances for every packet, lost or not: sweeping one of loss, delay or duplication
  // with a fixed seed leaves the other two decisions of each packet as they were.
  PacketFate fate;
  const bool lost = draw_loss();
  fate.delay_s[0] = draw_delay_s(delay_rng_, true);
  const double p = spec_.duplicate_probability();
  if (p > 0 && duplicate_rng_.uniform() < p) {
    fate.copies = 2;
    fate.delay_s[1] = draw_delay_s(copy_delay_rng_, false);
  }
  if (lost) fate.copies = 0;
  return fate;
}

double Impairment::next_delay_s() {
  return draw_delay_s(delay_rng_, true);
}

double Impairment::compute_max_delay_s() const {
  const double base = spec_.delay_s();
  switch (model_) {
    case Model::kUniform:
      return base + spec_.jitter_s();
    case Model::kNormal:
      return base + kNormalTailZ * spec_.normal().sd_s();
    case Model::kPareto:
      // P(excess > x) = (scale / (scale + x))^shape = kTailProbability.
      return base + spec_.pareto().scale_s() * (std::pow(kTailProbability, -1.0 / spec_.pareto().shape()) - 1.0);
    case Model::kGamma: {
      // Chernoff bound P(X >= y) <= exp(-(y - k) + k ln(y / k)) of X ~ Gamma(k, 1), solved for y > k.
      const double k = spec_.gamma().shape();
      const double target = -std::log(kTailProbability);
      const auto exponent = [k](double y) { return y - k - k * std::log(y / k); };
      double lo = k;
      double hi = k + 1.0;
      while (exponent(hi) < target) hi *= 2.0;
      for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (exponent(mid) < target ? lo : hi) = mid;
      }
      return base + spec_.gamma().scale_s() * hi;
    }
    case Model::kHistogram:
      return base + edges_s_.back();
    case Model::kTraceSample:
    case Model::kTraceReplay:
      return base + *std::max_element(trace_s_.begin(), trace_s_.end());
  }
  return base;
}

}  // namespace rths
