#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/protocol/secret_key.hpp"
#include "common/transport/link.hpp"

namespace rths {

class Recorder;

// Where a node sends its telemetry, how often, and the console's key that seals it.
struct TelemetryOptions {
  std::string console;             // "HOST:PORT"; empty: no telemetry
  double rate_hz = 50.0;           // 1 to 1000
  std::filesystem::path key_file;  // --console-key: the key file rths-console holds (its --key)
  std::optional<SecretKey> key;    // loaded from key_file by load_telemetry_key()
};

// A node's --console and --telemetry-hz values, checked as the command line reads them: HOST:PORT with
// a port from 1 to 65535 and a host that resolves (asks the resolver: before a run, never in one), and
// a rate from 1 to 1000 Hz. Each throws rths::Expected (command_line.hpp) saying what it takes, which
// the command line turns into one line naming the option and exit code 2.
std::string console_address(const std::string& text);
double telemetry_rate(const std::string& text);

// Checks a node's --console options before anything runs: with --console, --console-key must name
// a key file load_key_file() accepts; loads it into options.key. Throws ConfigError with one line
// naming the option otherwise (exit code 2).
void load_telemetry_key(TelemetryOptions& options);

// The frames between the nodes and rths-console (docs/console.md, "Telemetry"). Each is sealed
// with XChaCha20-Poly1305 under a key derived from the console's key file, one key per direction,
// with its clear header as associated data:
//
//   magic "RTHC" (4) | version 1 (1) | kind (1) | zero (2) | run (16) | sequence (8, LE) | echo (16) |
//   nonce (24) | sealed body | tag (16)
//
// - run: 16 random bytes a publisher draws when it starts, so nothing of an earlier run is this
//   run's; in the console's frames, the run of the publisher they are addressed to.
// - sequence: a publisher's frames count from 1, and the console takes each run's frames only in
//   increasing order: a frame of this run is taken once.
// - echo: in telemetry, the newest challenge the console sent this publisher; the console takes
//   telemetry only when it echoes one of the two newest challenges it made for this run and the
//   address it comes from, so a frame recorded before them (an earlier test, an earlier console) is
//   refused. In a challenge, the challenge itself; in a stop, the challenge the run echoes.
// - In the console's frames, sequence counts up across all the console's frames from the wall clock
//   in µs when it started; a publisher takes them only in increasing order, so a recorded challenge
//   or stop is refused.
namespace telemetry_frame {

constexpr std::size_t kRunBytes = 16;
constexpr std::size_t kChallengeBytes = 16;
constexpr std::size_t kHeaderBytes = 72;
constexpr std::size_t kTagBytes = 16;
using RunId = std::array<unsigned char, kRunBytes>;
using Challenge = std::array<unsigned char, kChallengeBytes>;

enum class Kind : std::uint8_t {
  kTelemetry = 1,  // node -> console: the body is the node's JSON
  kChallenge = 2,  // console -> node: echo carries the challenge to echo from now on
  kStop = 3,       // console -> numerical node: stop the test; the body says who asked
};

struct Header {
  Kind kind = Kind::kTelemetry;
  RunId run{};
  std::uint64_t sequence = 0;
  Challenge echo{};
};

struct Opened {
  Header header;
  std::string body;
};

// The two directions' keys derived from the console's key file (keyed BLAKE2b of a label).
struct Keys {
  SecretKey to_console;
  SecretKey to_node;
};
Keys derive_keys(const SecretKey& console_key);

// A sealed frame (a fresh random nonce each).
std::string seal(const SecretKey& key, const Header& header, std::string_view body);
// The header and body of a frame that authenticates under key; nullopt for anything else.
std::optional<Opened> open(const SecretKey& key, std::string_view frame);
// Whether a datagram has a frame's shape (size, magic, version), before any key is tried.
bool looks_like_frame(std::string_view datagram);

RunId random_run();
std::string hex(std::span<const unsigned char> bytes);

}  // namespace telemetry_frame

// The newest row of a record that a thread other than the step's keeps up to date (the writer that
// drains a real-time loop's row queue): the stream of a node without a Recorder (rths-target).
// set() locks, so never from a real-time thread.
class LatestRow {
 public:
  explicit LatestRow(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void set(std::span<const double> row);
  // The newest row and the rows set so far (0: none yet, out untouched).
  std::uint64_t get(std::vector<double>& out) const;
  [[nodiscard]] const std::vector<std::string>& columns() const { return columns_; }

 private:
  std::vector<std::string> columns_;
  mutable std::mutex mutex_;
  std::vector<double> row_;
  std::uint64_t rows_ = 0;
};

// A JSON string's body (without its quotes): quotes and backslashes escaped, control characters as
// \u00XX. Names and reasons are printable, but a reason may quote a path or a peer's words.
std::string json_escape(std::string_view text);

// A node's life as the console shows it.
enum class NodeState { kHandshake, kRunning, kStopping, kStopped };
const char* node_state_name(NodeState state);

// Publishes a node's telemetry to rths-console: at rate_hz, one sealed frame per stream with the
// newest recorded row (every column, by name), the node's state and figures.
//
// Design (STYLE: the step allocates, locks and waits for nothing):
// - The step already writes every row into its Recorder, which any thread may read up to its
//   published count. The publisher's own thread reads the newest row from there: the step does not
//   know it exists, so a slow, stalled or absent console cannot delay a step.
// - The frames go out through a non-blocking socket; a console that is not there costs a refused
//   send, counted. Figures (lateness, drops) come from callbacks the publisher's thread calls; they
//   read atomics the step writes.
// - Everything is sealed with the console's key (telemetry_frame): the console takes telemetry only
//   from a holder of its key, fresh (echoing its challenge) and once. The console answers a new run
//   with a challenge; until it arrives the console drops this run's frames (one period or so).
// - The console's frames are taken only sealed with its key, addressed to this run, from its
//   address, and with a sequence number higher than any taken before: a challenge or stop recorded on
//   the path and sent again is refused, so old challenges cannot make this run's frames stale.
// - A stop request from the console (a stop frame, echoing a challenge this publisher holds) calls
//   on_stop on the
//   publisher's thread, and the next frame, sent at once, acknowledges it ("stop_ack"): the numerical
//   node sets the same flag as SIGINT. A stop of an earlier run names another run and is refused;
//   nothing of this path moves an actuator.
class TelemetryPublisher {
 public:
  // Streams per publisher (the console bounds a run's sequence numbers by it, and keeps as many).
  static constexpr std::size_t kMaxStreams = 8;
  // A body fits one datagram of at most kMaxDatagramBytes with the frame's header and tag (1312
  // bytes); columns past it are left out. The reason and the experiment's name are cut to
  // kMaxTextBytes each (as JSON text), so that the columns keep most of the room.
  static constexpr std::size_t kMaxBodyBytes = kMaxDatagramBytes - 88;
  static constexpr std::size_t kMaxTextBytes = 200;

  // node: "numerical", "site spring", "relay spring", "target spring". Throws std::invalid_argument
  // on a bad address or rate or without a key (the caller's CLI turns it into exit code 2).
  TelemetryPublisher(std::string node, TelemetryOptions options);
  TelemetryPublisher(const TelemetryPublisher&) = delete;
  TelemetryPublisher& operator=(const TelemetryPublisher&) = delete;
  TelemetryPublisher(TelemetryPublisher&&) = delete;
  TelemetryPublisher& operator=(TelemetryPublisher&&) = delete;
  // Sends the last state and stops the thread.
  ~TelemetryPublisher();

  // Before start(): a recorder whose newest row goes out as stream `name` ("numerical", "site"); at
  // most kMaxStreams (std::logic_error beyond).
  void add_stream(std::string name, const Recorder& recorder);
  void add_stream(std::string name, const LatestRow& latest);
  // Before start(): a figure read at every publication (an atomic the step writes, say).
  void add_figure(std::string name, std::function<double()> read);
  // Before start(): an atomic the step stores (relaxed), times scale (1e-3: ns as us).
  template <class T>
  void add_figure(std::string name, const std::atomic<T>& value, double scale = 1.0) {
    add_figure(std::move(name),
               [&value, scale] { return static_cast<double>(value.load(std::memory_order_relaxed)) * scale; });
  }
  // Before start(): the experiment's name (its config's), shown by the console as the test's name.
  void set_experiment(std::string name);
  // Before start(): what a stop request from the console calls (on the publisher's thread).
  void on_stop(std::function<void()> stop);
  void start();

  // From any thread but the step's: the state and, when stopping or stopped, why.
  void set_state(NodeState state, std::string reason = {});

  // Frames handed to the kernel and refused (nobody listens, buffer full).
  [[nodiscard]] std::uint64_t sent() const { return sent_.load(); }
  [[nodiscard]] std::uint64_t send_errors() const { return send_errors_.load(); }
  // Requests from the console's address that did not authenticate, or named another run.
  [[nodiscard]] std::uint64_t refused_requests() const { return refused_requests_.load(); }
  [[nodiscard]] const telemetry_frame::RunId& run() const { return run_; }

  // One stream's JSON body as it would go out now (for tests).
  [[nodiscard]] std::string datagram(std::size_t stream) const;

 private:
  struct Stream {
    std::string name;
    const Recorder* recorder = nullptr;
    const LatestRow* latest = nullptr;
  };
  struct Socket;
  void loop();
  void publish();
  void serve_requests();

  std::string node_;
  TelemetryOptions options_;
  telemetry_frame::Keys keys_;
  telemetry_frame::RunId run_{};
  std::string experiment_;
  std::vector<Stream> streams_;
  std::vector<std::pair<std::string, std::function<double()>>> figures_;
  std::function<void()> on_stop_;
  std::unique_ptr<Socket> socket_;

  mutable std::mutex state_mutex_;
  NodeState state_ = NodeState::kHandshake;
  std::string reason_;
  telemetry_frame::Challenge challenge_{};           // the console's newest, echoed in every frame
  telemetry_frame::Challenge previous_challenge_{};  // the one before: a stop may carry it
  std::uint64_t stop_ack_ = 0;                       // the sequence of the console's stop taken
  std::uint64_t console_sequence_ = 0;               // the highest of the console's frames taken
  std::uint64_t sequence_ = 0;

  std::atomic<std::uint64_t> sent_{0};
  std::atomic<std::uint64_t> send_errors_{0};
  std::atomic<std::uint64_t> refused_requests_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace rths
