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

#include "common/protocol/secret_key.hpp"
#include "common/records/telemetry.hpp"
#include "console/hub/json_text.hpp"

namespace rths::console {

// How much the hub keeps, how often it renews its challenge, and how fast it admits new runs.
struct HubLimits {
  std::size_t max_nodes = 64;  // runs in the node table; the least recently heard goes first
  std::size_t retired = 4096;  // runs that left the table, remembered to refuse their replays
  std::chrono::seconds challenge_every{10};
  std::chrono::milliseconds rechallenge_after{200};  // at most one challenge per run and source this often
  std::chrono::seconds live_for{5};                  // a node silent this long is no longer live
  std::chrono::seconds stop_reach_for{60};           // a numerical run silent this long still gets a stop
  std::chrono::seconds stop_resend_for{3};           // an unacknowledged stop is sent again until then
  // Runs admitted into the table: new_runs_per_s on average, new_runs_burst at once (every node of a
  // large test starting together). At that rate the `retired` runs remembered cover far more than
  // two challenge periods, so a run is never forgotten while its frames could still be fresh.
  double new_runs_per_s = 32.0;
  std::size_t new_runs_burst = 256;
  std::size_t max_body = TelemetryPublisher::kMaxBodyBytes;  // a node's JSON body: one datagram's
};

// A publisher sends at most 1000 frames a second per stream and at most kMaxStreams streams: a run's
// sequence number cannot rise faster (twice that, and kSequenceSlack, as sessions bound theirs).
constexpr double kMaxFramesPerSecond = 1000.0 * TelemetryPublisher::kMaxStreams;
constexpr std::uint64_t kSequenceSlack = 256;

// Why a datagram was not taken.
enum class Dropped : std::uint8_t {
  kMalformed,        // not a frame (wrong size or magic), or a kind a node does not send
  kUnauthenticated,  // does not open under the console's key
  kUnchallenged,     // authentic but echoes neither of the two newest challenges made for its run and
                     // source (a new run's first frames, or a recording of an earlier test):
                     // answered with a challenge
  kReplayed,         // this run's sequence number was taken already (a replay, or reordered)
  kBadBody,          // authentic but not one JSON object of printable text (strict JSON: no duplicate
                     // key, no NaN or Infinity) of at most max_body bytes with "node" and "state"
  kForeign,          // a run's frame from another address than the one its first taken frame came from
  kTooFarAhead,      // a sequence number beyond what the run can have sent since its last taken frame
  kNewRunLimit,      // a new run beyond the rate the hub admits new runs at (new_runs_per_s)
};
constexpr std::size_t kDroppedKinds = 8;
const char* dropped_name(Dropped d);

// What the console knows of one run of one node (a publisher, from its start to its end).
struct NodeSeen {
  std::string node;    // "numerical", "site purdue"
  std::string run;     // the publisher's run, hex
  std::string source;  // "127.0.0.1:40123": where its first taken frame came from; the run is held to it
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
// console's key, fresh (echoing one of the console's two newest challenges for that run and source),
// from the address the run's first taken frame came from, and once each (a run's sequence numbers
// increasing, and not beyond what it can have sent); the rest is dropped and counted. It decides
// where the test's stop request goes: only to a numerical node whose telemetry authenticated, at the
// address its run is held to.
//
// The challenge of a run is a keyed hash of the run and its source under a secret the hub renews
// every challenge period: a key holder cannot learn another run's challenge by starting a run of its
// own, and a copy of a node's frame sent from another address does not verify.
//
// Bounded: at most max_nodes runs in the table (the least recently heard is retired first), new runs
// admitted at most new_runs_per_s, and `retired` runs remembered after they left it, each with its
// highest sequence number and source, so that a replay of a retired run's frame is still refused.
// A run is forgotten only once the challenge was renewed twice since it left (its frames are then
// stale); should runs leave faster, the hub renews at most once a second and sends the live runs
// their new challenge at once. When a new numerical node appears, the nodes of the finished test
// (stopped, or silent) are retired.
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
    std::vector<Send> sends;         // challenges to send: to this frame's source, or to every live run
  };
  Outcome accept(std::string_view datagram, const std::string& source, Time now);

  // Renews the challenge when it is due and sends it to every live run; the unacknowledged stops
  // again (until stop_resend_for).
  std::vector<Send> tick(Time now);

  // The stop request to every numerical run that is not stopped and was heard within
  // stop_reach_for (a node that went silent may still be running): the frames to send, each to the
  // address its run is held to, and what they were sent to in targets.
  struct StopTarget {
    std::string node;
    std::string run;
    std::string source;
    double heard_s_ago = 0.0;
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
  // Challenge renewals, and how many of them were forced by runs leaving faster than two periods.
  [[nodiscard]] std::uint64_t renewals() const { return renewals_; }
  [[nodiscard]] std::uint64_t forced_renewals() const { return forced_renewals_; }
  // Changes whenever a run joins or leaves the table (the page's node list follows it).
  [[nodiscard]] std::uint64_t table_version() const { return table_version_; }

 private:
  using Secret = std::array<unsigned char, 32>;
  struct Retired {
    telemetry_frame::RunId run;
    std::uint64_t sequence;
    std::string source;
    std::uint64_t epoch;  // renewals_ when it left
    Time at;
  };
  void renew_challenge(Time now);
  void challenge_live_runs(Time now, std::vector<Send>& sends);
  void retire(std::list<NodeSeen>::iterator it, Time now, std::vector<Send>& sends);
  bool admit(Time now);
  [[nodiscard]] static telemetry_frame::Challenge challenge_for(const Secret& secret, const telemetry_frame::RunId& run,
                                                                const std::string& source);
  std::optional<Send> challenge(const telemetry_frame::RunId& run, const std::string& source, Time now);
  std::string sealed(telemetry_frame::Kind kind, const telemetry_frame::RunId& run,
                     const telemetry_frame::Challenge& echo, std::string_view body);

  telemetry_frame::Keys keys_;
  HubLimits limits_;
  Secret current_{};
  Secret previous_{};
  Time renewed_at_;
  Time forced_at_;
  std::uint64_t renewals_ = 0;
  std::uint64_t forced_renewals_ = 0;
  double admissions_ = 0.0;  // the new-run budget, up to new_runs_burst
  Time admitted_at_;
  // The console's own frames count up from the wall clock in µs when it started, so that a console
  // started again mid-test sends higher numbers than the one before (publishers refuse lower ones).
  std::uint64_t sequence_ = 0;
  std::list<NodeSeen> nodes_;  // most recently heard last
  std::map<telemetry_frame::RunId, std::list<NodeSeen>::iterator> by_run_;
  std::deque<Retired> retired_;
  std::map<telemetry_frame::RunId, const Retired*> retired_by_run_;
  // The last challenge per (run, source) slot: bounded, whatever a flood brings.
  std::array<std::pair<telemetry_frame::Challenge, Time>, 1024> challenged_{};
  std::uint64_t accepted_ = 0;
  std::array<std::uint64_t, kDroppedKinds> dropped_{};
  std::uint64_t table_version_ = 0;
};

}  // namespace rths::console
