#include "node_numerical/engine/status_line.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

namespace rths {

void LiveFigures::add_round_trip(std::int64_t round_trip_ns) {
  const std::size_t n = round_trip_count.load(std::memory_order_relaxed);
  round_trips[n % round_trips.size()].store(round_trip_ns, std::memory_order_relaxed);
  // Release: a reader that sees the new count also sees the slot written before it.
  round_trip_count.store(n + 1, std::memory_order_release);
}

StatusLine::StatusLine(const LiveFigures& live, std::int64_t steps, double rate_hz, std::FILE* out,
                       std::chrono::milliseconds period)
    : live_(live), steps_(steps), rate_hz_(rate_hz), out_(out), period_(period) {
  if (out_ != nullptr) {
    thread_ = std::thread([this] { loop(); });
  }
}

StatusLine::~StatusLine() {
  done_.store(true);
  if (thread_.joinable()) {
    thread_.join();
    std::fputs("\n", out_);
  }
}

double LiveFigures::round_trip_p50_ms() const {
  const std::size_t n = std::min(round_trip_count.load(std::memory_order_acquire), round_trips.size());
  std::vector<std::int64_t> rtts;
  rtts.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    rtts.push_back(round_trips[i].load(std::memory_order_relaxed));
  }
  if (rtts.empty()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::nth_element(rtts.begin(), rtts.begin() + static_cast<std::ptrdiff_t>(rtts.size() / 2), rtts.end());
  return static_cast<double>(rtts[rtts.size() / 2]) / 1e6;
}

std::string StatusLine::text(const LiveFigures& live, std::int64_t steps, double rate_hz) {
  const double p50 = live.round_trip_p50_ms();
  const std::string rtt = std::isnan(p50) ? std::string("-") : fmt::format("{:.3f} ms", p50);
  return fmt::format("{:7.2f} / {:.2f} s  late ticks {}  round trip p50 {}  drops {}   ",
                     static_cast<double>(live.steps_done.load()) / rate_hz, static_cast<double>(steps - 1) / rate_hz,
                     live.late_ticks.load(), rtt, live.drops.load());
}

void StatusLine::loop() {
  while (!done_.load()) {
    print();
    std::this_thread::sleep_for(period_);
  }
  print();
}

void StatusLine::print() const {
  std::fprintf(out_, "\r%s", text(live_, steps_, rate_hz_).c_str());
  std::fflush(out_);
}

}  // namespace rths
