// The console's HTTP/1.1 layer: a request's head, the checks every request passes (Host, token),
// and one connection's life (a response, a file, or an event stream), each bounded in time and
// size. The routes are the server's (server.cpp).
#pragma once

#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <asio/streambuf.hpp>

#include "console/server/server.hpp"

namespace rths::console {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxHeadBytes = 8192;
// An event stream's backlog beyond which its client is too slow to follow the test: it is closed
// (the page's EventSource reconnects and starts from the newest telemetry). The first events of a
// stream (the newest telemetry of every run) are held to it too.
constexpr std::size_t kMaxStreamBacklog = 1U << 20U;

struct Request {
  std::string method;
  std::string path;
  std::string query;
  std::map<std::string, std::string> headers;  // lower-case names
  [[nodiscard]] const std::string* header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? nullptr : &it->second;
  }
};

// The request line and headers; nullopt when they are not HTTP/1.x or a header repeats Host.
std::optional<Request> parse_head(std::string_view head);
// A Host header a DNS-rebinding page cannot send: an IP literal (the page's origin is then the
// console's own address), localhost, or a name the operator allowed.
bool host_allowed(std::string_view host, const std::vector<std::string>& allowed);
// The decoded value of name in a query string ("" when absent).
std::string query_value(std::string_view query, std::string_view name);
// The token compared in constant time.
bool same_secret(const std::string& given, const std::string& token);
std::string json_string(std::string_view s);

class Connection;

// What a connection needs of the server that owns it.
class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  virtual void handle(const std::shared_ptr<Connection>& c, const Request& r) = 0;
  virtual void forget(const std::shared_ptr<Connection>& c) = 0;
  [[nodiscard]] virtual const ServerOptions& options() const = 0;

 protected:
  ConnectionOwner() = default;
  ConnectionOwner(const ConnectionOwner&) = default;
  ConnectionOwner& operator=(const ConnectionOwner&) = default;
  ConnectionOwner(ConnectionOwner&&) = default;
  ConnectionOwner& operator=(ConnectionOwner&&) = default;
};

// One HTTP connection: a request, then a response (or an event stream), then closed.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Phase { kReading, kResponding, kStreaming, kClosed };

  Connection(ConnectionOwner& owner, asio::ip::tcp::socket socket, std::string client);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&&) = delete;
  Connection& operator=(Connection&&) = delete;

  void start();
  void close();
  // An event for the stream (already framed); closes a stream whose client cannot keep up.
  void push(std::string_view event);
  void flush(Clock::time_point now);

  [[nodiscard]] Phase phase() const { return phase_; }
  [[nodiscard]] const std::string& client() const { return client_; }
  [[nodiscard]] Clock::time_point opened() const { return opened_; }
  std::list<std::shared_ptr<Connection>>::iterator self;

  void respond(int status, std::string_view type, std::string_view body);
  void stream(const std::string& first_events);
  // A regular file, never through a symbolic link (O_NOFOLLOW); 404 otherwise.
  void send_file(const std::filesystem::path& file, std::string_view type);
  // Answers once the check says done or after `within`, polling it.
  void answer_when(std::function<bool()> done, Clock::time_point until, std::function<void()> answer);

 private:
  void on_head(const asio::error_code& ec, std::size_t n);
  void write_then_close();
  void next_chunk();
  void watch_peer();

  ConnectionOwner& owner_;
  asio::ip::tcp::socket socket_;
  asio::streambuf head_;
  asio::steady_timer timer_;
  std::string client_;
  Clock::time_point opened_;
  Phase phase_ = Phase::kReading;
  std::string out_;
  std::string pending_;
  bool writing_ = false;
  Clock::time_point write_started_;
  Clock::time_point last_write_;
  int file_ = -1;  // a record being sent
  std::array<char, 64> peer_bytes_{};
};

}  // namespace rths::console
