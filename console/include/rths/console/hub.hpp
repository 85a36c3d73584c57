#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rths/common/secret_key.hpp"
#include "rths/common/telemetry.hpp"

namespace rths::console {

// The value of a top-level string field of a JSON object ("node", "state"), unescaped; nullopt when
// absent, not a string, or the text is not an object this scanner can walk.
std::optional<std::string> json_string_field(std::string_view json, std::string_view key);
// The value of a top-level number field; nullopt when absent or not a number.
std::optional<double> json_number_field(std::string_view json, std::string_view key);

// How much the hub keeps, and how often it renews its challenge.
struct HubLimits {
  std::size_t max_nodes = 64;  // runs in the node table; the least recently heard goes first
  std::size_t retired = 4096;  // runs that left the table, remembered to refuse their replays
  std::chrono::seconds challenge_every{10};
  std::chrono::milliseconds rechallenge_after{200};  // at most one challenge per run this often
  std::chrono::seconds live_for{5};                  // a node silent this long is no longer live
  std::chrono::seconds stop_resend_for{3};           // an unacknowledged stop is sent again until then
};

// Why a datagram was not taken.
enum class Dropped : std::uint8_t {
  kMalformed,        // not a frame (wrong size or magic), or a kind a node does not send
  kUnauthenticated,  // does not open under the console's key
  kUnchallenged,     // authentic but echoes none of the two newest challenges (a new run's first
                     // frames, or a recording of an earlier test): answered with a challenge
  kReplayed,         // this run's sequence number was taken already (a replay, or reordered)
  kBadBody,          // authentic but not one JSON object of printable text with "node" and "state"
};
constexpr std::size_t kDroppedKinds = 5;
const char* dropped_name(Dropped d);

// What the console knows of one run of one node (a publisher, from its start to its end).
struct NodeSeen {
  std::string node;    // "numerical", "site purdue"
  std::string run;     // the publisher's run, hex
  std::string source;  // "127.0.0.1:40123": where its authenticated frames come from
  std::string state;
  std::uint64_t datagrams = 0;
  std::uint64_t sequence = 0;  // the highest taken
  std::chrono::steady_clock::time_point first_heard;
  std::chrono::steady_clock::time_point last_heard;
  std::map<std::string, std::string> latest;  // the newest body of each stream
  // The stop request: the sequence of the console's stop sent to this run (0: none), and the one
  // the run acknowledged.
  std::uint64_t stop_sent = 0;
  std::uint64_t stop_acked = 0;
  std::chrono::steady_clock::time_point stop_sent_at;
  telemetry_frame::RunId run_id{};
  telemetry_frame::Challenge echo{};  // the challenge this run echoes
};

// The telemetry of every node of a test as rths-console takes it: only frames sealed with the
// console's key, fresh (echoing one of the console's two newest challenges) and once each (a run's
// sequence numbers increasing); the rest is dropped and counted. It decides where the test's stop
// request goes: only to a numerical node whose telemetry authenticated, at the address that
// telemetry came from.
//
// Bounded: at most max_nodes runs in the table (the least recently heard is retired first) and
// `retired` runs remembered after they left it, each with its highest sequence number, so that a
// replay of a retired run's frame is still refused. A frame is fresh for at most two challenge
// periods; should runs be retired faster than that, the hub renews its challenge twice at once, so
// that no frame echoing an older one is taken. When a new numerical node appears, the nodes of the
// finished test (stopped, or silent) are retired.
//
// No locks and no sockets: the console's one thread calls it, and the tests call it directly.
class TelemetryHub {
 public:
  using Clock = std::chrono::steady_clock;
  using Time = Clock::time_point;

  TelemetryHub(const SecretKey& console_key, HubLimits limits, Time now);

  // A frame to send: to "host:port", the bytes.
  struct Send {
    std::string to;
    std::string frame;
  };
  struct Outcome {
    std::optional<Dropped> dropped;  // nullopt: taken
    std::string body;                // taken: the node's JSON
    std::optional<Send> reply;       // a challenge to send back
  };
  Outcome accept(std::string_view datagram, const std::string& source, Time now);

  // Renews the challenge when it is due and sends it to every live run; the unacknowledged stops
  // again (until stop_resend_for).
  std::vector<Send> tick(Time now);

  // The stop request to every live numerical node (heard within live_for and not stopped): the
  // frames to send, and what they were sent to in targets.
  struct StopTarget {
    std::string node;
    std::string run;
    std::string source;
  };
  std::vector<Send> request_stop(Time now, std::vector<StopTarget>& targets);
  // Whether the run (hex) acknowledged the stop sent to it.
  [[nodiscard]] bool stop_acknowledged(const std::string& run) const;

  [[nodiscard]] const std::list<NodeSeen>& nodes() const { return nodes_; }
  // The newest body of every run and stream, oldest run first: what a page that just connected draws.
  [[nodiscard]] std::vector<std::string> latest() const;
  [[nodiscard]] std::uint64_t accepted() const { return accepted_; }
  [[nodiscard]] std::uint64_t dropped(Dropped d) const { return dropped_[static_cast<std::size_t>(d)]; }
  [[nodiscard]] std::uint64_t dropped_total() const;
  [[nodiscard]] std::size_t retired_runs() const { return retired_.size(); }
  // Changes whenever a run joins or leaves the table (the page's node list follows it).
  [[nodiscard]] std::uint64_t table_version() const { return table_version_; }

 private:
  struct Retired {
    telemetry_frame::RunId run;
    std::uint64_t sequence;
    Time at;
  };
  void renew_challenge(Time now);
  void retire(std::list<NodeSeen>::iterator it, Time now);
  std::optional<Send> challenge(const telemetry_frame::RunId& run, const std::string& source, Time now);
  std::string sealed(telemetry_frame::Kind kind, const telemetry_frame::RunId& run,
                     const telemetry_frame::Challenge& echo, std::string_view body);

  telemetry_frame::Keys keys_;
  HubLimits limits_;
  telemetry_frame::Challenge current_{};
  telemetry_frame::Challenge previous_{};
  Time renewed_at_;
  std::uint64_t sequence_ = 0;  // of the console's own frames
  std::list<NodeSeen> nodes_;   // most recently heard last
  std::map<telemetry_frame::RunId, std::list<NodeSeen>::iterator> by_run_;
  std::deque<Retired> retired_;
  std::map<telemetry_frame::RunId, std::uint64_t> retired_sequence_;
  // The last challenge per run slot (a hash of the run): bounded, whatever a flood brings.
  std::array<std::pair<telemetry_frame::RunId, Time>, 1024> challenged_{};
  std::uint64_t accepted_ = 0;
  std::array<std::uint64_t, kDroppedKinds> dropped_{};
  std::uint64_t table_version_ = 0;
};

}  // namespace rths::console
