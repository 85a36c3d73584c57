#include "common/transport/impairment.hpp"

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

#include "common/core/component_registry.hpp"
#include "common/core/input_file.hpp"

namespace rths {

namespace {

// jitter_s's uniform jitter, the delay model when the config names none.
class UniformJitter final : public JitterModel {
 public:
  explicit UniformJitter(double jitter_s) : jitter_s_(jitter_s) {}
  double draw_s(double delay_s, Rng& rng, bool /*main*/) override {
    // The expression and draw count of the original uniform model: existing configs replay exactly.
    if (jitter_s_ > 0.0) return std::max(delay_s + jitter_s_ * (2.0 * rng.uniform() - 1.0), 0.0);
    return std::max(delay_s, 0.0);
  }
  [[nodiscard]] double max_delay_s(double delay_s) const override { return delay_s + jitter_s_; }

 private:
  double jitter_s_;
};

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
  // The models the config names, from the registry (common/impairments/); jitter_s's uniform jitter
  // when it names no delay model, no loss when it names no loss model.
  const ComponentContext context{.base_dir = base_dir};
  jitter_ = ComponentFactories<JitterModel>::make_member(spec_, "jitter_model", context);
  if (jitter_ == nullptr) jitter_ = std::make_unique<UniformJitter>(spec_.jitter_s());
  if (spec_.has_loss()) loss_ = ComponentFactories<LossModel>::make_member(spec_.loss(), "model", context);
  if (loss_ != nullptr) loss_->start(loss_rng_);
  max_delay_s_ = jitter_->max_delay_s(spec_.delay_s());
}

PacketFate Impairment::next_packet() {
  // Every stream advances for every packet, lost or not: sweeping one of loss, delay or duplication
  // with a fixed seed leaves the other two decisions of each packet as they were.
  PacketFate fate;
  const bool lost = loss_ != nullptr && loss_->lost(loss_rng_);
  fate.delay_s[0] = jitter_->draw_s(spec_.delay_s(), delay_rng_, true);
  const double p = spec_.duplicate_probability();
  if (p > 0 && duplicate_rng_.uniform() < p) {
    fate.copies = 2;
    fate.delay_s[1] = jitter_->draw_s(spec_.delay_s(), copy_delay_rng_, false);
  }
  if (lost) fate.copies = 0;
  return fate;
}

double Impairment::next_delay_s() {
  return jitter_->draw_s(spec_.delay_s(), delay_rng_, true);
}

}  // namespace rths
