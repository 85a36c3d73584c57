#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rths::console {

// The value of a top-level string field of a telemetry datagram ("node", "token", "state"); nullopt
// when absent or malformed. Telemetry is rths's own JSON (TelemetryPublisher): no nesting before
// these fields, no escapes in node names, tokens or states.
std::optional<std::string> json_string_field(std::string_view json, std::string_view key);

// What the console knows of one node: where its telemetry comes from, the token its stop requests
// need, its last state and when it was last heard.
struct NodeSeen {
  std::string node;
  std::string source;  // "127.0.0.1:40123"
  std::string token;
  std::string state;
  std::uint64_t datagrams = 0;
  std::chrono::steady_clock::time_point last_heard;
};

// The telemetry of every node of a test, between the UDP thread that receives it and the web
// clients that stream it (each on its own server thread).
//
// Design: a bounded ring of the newest datagrams, numbered; a client asks for those after the
// number it last saw and waits (bounded) for more. A client that fell more than the ring behind
// skips to what is still there, counted; the receiving thread never waits for a client, so a slow
// browser cannot make the console drop telemetry for the others, nor reach the nodes.
class TelemetryHub {
 public:
  explicit TelemetryHub(std::size_t ring = 16384) : ring_(ring) {}

  // One datagram from source; false (and counted) when it is not a node's telemetry.
  bool accept(std::string_view datagram, const std::string& source);

  struct Batch {
    std::vector<std::string> datagrams;
    std::uint64_t next = 0;     // ask for datagrams from this number next time
    std::uint64_t skipped = 0;  // older than the ring: lost to this client
  };
  // The datagrams numbered from `from` on, waiting up to `wait` for the first when there are none.
  Batch after(std::uint64_t from, std::chrono::milliseconds wait);
  // The newest datagram of each node and stream: what a client that just connected draws first.
  [[nodiscard]] std::vector<std::string> latest() const;
  // The number the next datagram will get.
  [[nodiscard]] std::uint64_t next() const;

  [[nodiscard]] std::vector<NodeSeen> nodes() const;
  [[nodiscard]] std::uint64_t accepted() const;
  [[nodiscard]] std::uint64_t rejected() const;

 private:
  std::size_t ring_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::string> recent_;
  std::uint64_t first_ = 0;                    // number of recent_.front()
  std::map<std::string, std::string> latest_;  // by "node/stream"
  std::map<std::string, NodeSeen> nodes_;
  std::uint64_t accepted_ = 0;
  std::uint64_t rejected_ = 0;
};

}  // namespace rths::console
