#include "rths/console/hub.hpp"

#include <algorithm>

namespace rths::console {

std::optional<std::string> json_string_field(std::string_view json, std::string_view key) {
  std::string pattern;
  pattern.reserve(key.size() + 4);
  pattern.append("\"").append(key).append("\":\"");
  const std::size_t at = json.find(pattern);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const std::size_t begin = at + pattern.size();
  const std::size_t end = json.find('"', begin);
  if (end == std::string_view::npos || json.substr(begin, end - begin).find('\\') != std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(json.substr(begin, end - begin));
}

bool TelemetryHub::accept(std::string_view datagram, const std::string& source) {
  const auto node = json_string_field(datagram, "node");
  const auto token = json_string_field(datagram, "token");
  const auto state = json_string_field(datagram, "state");
  const std::scoped_lock lock(mutex_);
  if (datagram.empty() || datagram.front() != '{' || datagram.back() != '}' || !node || !token || !state) {
    ++rejected_;
    return false;
  }
  const std::string stream = json_string_field(datagram, "stream").value_or("");
  latest_[*node + "/" + stream] = std::string(datagram);
  NodeSeen& seen = nodes_[*node];
  seen.node = *node;
  seen.source = source;
  seen.token = *token;
  seen.state = *state;
  ++seen.datagrams;
  seen.last_heard = std::chrono::steady_clock::now();
  recent_.emplace_back(datagram);
  if (recent_.size() > ring_) {
    recent_.pop_front();
    ++first_;
  }
  ++accepted_;
  arrived_.notify_all();
  return true;
}

TelemetryHub::Batch TelemetryHub::after(std::uint64_t from, std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  arrived_.wait_for(lock, wait, [&] { return first_ + recent_.size() > from; });
  Batch batch;
  const std::uint64_t end = first_ + recent_.size();
  if (from < first_) {
    batch.skipped = first_ - from;
    from = first_;
  }
  for (std::uint64_t n = from; n < end; ++n) {
    batch.datagrams.push_back(recent_[n - first_]);
  }
  batch.next = std::max(from, end);
  return batch;
}

std::vector<std::string> TelemetryHub::latest() const {
  const std::scoped_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(latest_.size());
  for (const auto& [key, datagram] : latest_) {
    out.push_back(datagram);
  }
  return out;
}

std::uint64_t TelemetryHub::next() const {
  const std::scoped_lock lock(mutex_);
  return first_ + recent_.size();
}

std::vector<NodeSeen> TelemetryHub::nodes() const {
  const std::scoped_lock lock(mutex_);
  std::vector<NodeSeen> out;
  out.reserve(nodes_.size());
  for (const auto& [name, seen] : nodes_) {
    out.push_back(seen);
  }
  return out;
}

std::uint64_t TelemetryHub::accepted() const {
  const std::scoped_lock lock(mutex_);
  return accepted_;
}

std::uint64_t TelemetryHub::rejected() const {
  const std::scoped_lock lock(mutex_);
  return rejected_;
}

}  // namespace rths::console
