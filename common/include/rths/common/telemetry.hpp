#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace rths {

class Recorder;

// Where a node sends its telemetry and how often (rths-console listens there).
struct TelemetryOptions {
  std::string console;  // "HOST:PORT"; empty: no telemetry
  double rate_hz = 50.0;
};

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

// Publishes a node's telemetry to rths-console: at rate_hz, one JSON datagram per stream with the
// newest recorded row (every column, by name), the node's state and figures.
//
// Design (STYLE: the step allocates, locks and waits for nothing):
// - The step already writes every row into its Recorder, which any thread may read up to its
//   published count. The publisher's own thread reads the newest row from there: the step does not
//   know it exists, so a slow, stalled or absent console cannot delay a step.
// - The datagrams go out through a non-blocking socket; a console that is not there costs a refused
//   send, counted. Figures (lateness, drops) come from callbacks the publisher's thread calls; they
//   read atomics the step writes.
// - A stop request from the console (a datagram {"stop":"<token>"} from the console's address,
//   carrying the token this publisher sent in every datagram) calls on_stop on the publisher's
//   thread: the numerical node sets the same flag as SIGINT. The token is 128 random bits fresh per
//   run, sent only to the console: a sender who never saw the telemetry cannot stop the test, and
//   one who did can only stop it, the safe direction; nothing of this path moves an actuator.
class TelemetryPublisher {
 public:
  // node: "numerical", "site spring", "relay spring", "target spring". Throws std::invalid_argument
  // on a bad address or rate (the caller's CLI turns it into exit code 2).
  TelemetryPublisher(std::string node, TelemetryOptions options);
  TelemetryPublisher(const TelemetryPublisher&) = delete;
  TelemetryPublisher& operator=(const TelemetryPublisher&) = delete;
  TelemetryPublisher(TelemetryPublisher&&) = delete;
  TelemetryPublisher& operator=(TelemetryPublisher&&) = delete;
  // Sends the last state and stops the thread.
  ~TelemetryPublisher();

  // Before start(): a recorder whose newest row goes out as stream `name` ("numerical", "site").
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
  // Before start(): what a stop request from the console calls (on the publisher's thread).
  void on_stop(std::function<void()> stop);
  void start();

  // From any thread but the step's: the state and, when stopping or stopped, why.
  void set_state(NodeState state, std::string reason = {});

  // Datagrams handed to the kernel and refused (nobody listens, buffer full).
  [[nodiscard]] std::uint64_t sent() const { return sent_.load(); }
  [[nodiscard]] std::uint64_t send_errors() const { return send_errors_.load(); }
  [[nodiscard]] const std::string& token() const { return token_; }

  // One stream's datagram as it would go out now (for tests).
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
  std::string token_;
  std::vector<Stream> streams_;
  std::vector<std::pair<std::string, std::function<double()>>> figures_;
  std::function<void()> on_stop_;
  std::unique_ptr<Socket> socket_;

  mutable std::mutex state_mutex_;
  NodeState state_ = NodeState::kHandshake;
  std::string reason_;

  std::atomic<std::uint64_t> sent_{0};
  std::atomic<std::uint64_t> send_errors_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace rths
