#include "rths/console/server.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <list>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <sodium.h>
#include <spdlog/spdlog.h>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ip/udp.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>

#include "rths/common/telemetry.hpp"
#include "rths/console/hub.hpp"

namespace rths::console {

namespace {

using Clock = std::chrono::steady_clock;
using asio::ip::tcp;
using asio::ip::udp;

constexpr std::size_t kMaxHeadBytes = 8192;
// An event stream's backlog beyond which its client is too slow to follow the test: it is closed
// (the page's EventSource reconnects and starts from the newest telemetry).
constexpr std::size_t kMaxStreamBacklog = 1U << 20U;
constexpr auto kTick = std::chrono::milliseconds(100);  // events go out at most 10 times a second
constexpr auto kStatusEvery = std::chrono::seconds(1);
constexpr auto kHeartbeatEvery = std::chrono::seconds(2);
constexpr auto kStopAnswerWithin = std::chrono::milliseconds(500);

// Every answer says: no script but the console's own files, no frames, no other origins.
constexpr std::string_view kSecurityHeaders =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\n"
    "Cache-Control: no-store\r\n";

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

std::string json_string(std::string_view s) {
  return "\"" + json_escape(s) + "\"";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A Host header a DNS-rebinding page cannot send: an IP literal (the page's origin is then the
// console's own address), localhost, or a name the operator allowed.
bool host_allowed(std::string_view host, const std::vector<std::string>& allowed) {
  std::string name(host);
  asio::error_code ec;
  if (!name.empty() && name.front() == '[') {
    const auto close = name.find(']');
    if (close == std::string::npos) return false;
    asio::ip::make_address_v6(name.substr(1, close - 1), ec);
    return !ec;
  }
  if (const auto colon = name.rfind(':'); colon != std::string::npos) {
    name.resize(colon);
  }
  name = lower(name);
  if (name == "localhost") return true;
  asio::ip::make_address_v4(name, ec);
  if (!ec) return true;
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) { return lower(a) == name; });
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2])) != 0) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

std::string query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name && eq != std::string_view::npos) {
      return percent_decoded(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

bool same_secret(const std::string& given, const std::string& token) {
  return given.size() == token.size() && sodium_memcmp(given.data(), token.data(), token.size()) == 0;
}

// The record files of a run folder the replay serves: its CSVs and summaries by the names rths writes.
std::vector<std::string> replay_files(const std::filesystem::path& dir) {
  static const std::regex kRecord(
      R"((numerical|reference|timing|site_[A-Za-z0-9_.-]+)\.csv|(summary|site_[A-Za-z0-9_.-]+)\.json)");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && std::regex_match(name, kRecord)) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

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
std::optional<Request> parse_head(std::string_view head) {
  Request r;
  const auto line_end = head.find("\r\n");
  std::istringstream first(std::string(head.substr(0, line_end)));
  std::string target;
  std::string version;
  if (!(first >> r.method >> target >> version) || !version.starts_with("HTTP/1.") || target.empty() ||
      target.front() != '/') {
    return std::nullopt;
  }
  const auto q = target.find('?');
  r.path = target.substr(0, q);
  r.query = q == std::string::npos ? "" : target.substr(q + 1);
  std::size_t at = line_end + 2;
  while (at < head.size()) {
    const auto end = head.find("\r\n", at);
    const std::string_view line = head.substr(at, end - at);
    at = end == std::string_view::npos ? head.size() : end + 2;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string name = lower(std::string(line.substr(0, colon)));
    std::string value(line.substr(colon + 1));
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    if (r.headers.contains(name)) {
      if (name == "host") return std::nullopt;
      continue;
    }
    r.headers.emplace(std::move(name), std::move(value));
  }
  return r;
}

class Server;

// One HTTP connection: a request, then a response (or an event stream), then closed.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Phase { kReading, kResponding, kStreaming, kClosed };

  Connection(Server& server, tcp::socket socket, std::string client)
      : server_(server),
        socket_(std::move(socket)),
        head_(kMaxHeadBytes),
        timer_(socket_.get_executor()),
        client_(std::move(client)),
        opened_(Clock::now()) {}

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
  void stream(std::string first_events);
  void send_file(const std::filesystem::path& file, std::string_view type);
  // Answers once the check says done or after `within`, polling it.
  void answer_when(std::function<bool()> done, Clock::time_point until, std::function<void()> answer);

 private:
  void on_head(const asio::error_code& ec, std::size_t n);
  void write_then_close();
  void next_chunk();
  void watch_peer();

  Server& server_;
  tcp::socket socket_;
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
  std::unique_ptr<std::ifstream> file_;
  std::array<char, 64> peer_bytes_{};
};

class Server {
 public:
  Server(const ServerOptions& o, const std::atomic<bool>& stop)
      : options_(o),
        stop_(stop),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address(o.listen_host), o.listen_port)),
        tick_(io_) {
    load_page();
    if (o.replay.empty()) {
      udp_.emplace(io_, udp::endpoint(asio::ip::make_address(o.telemetry_host), o.telemetry_port));
      udp_->non_blocking(true);
      if (!o.key) {
        throw std::logic_error("a live console needs its key");
      }
      HubLimits limits;
      limits.max_nodes = o.max_nodes;
      hub_.emplace(*o.key, limits, Clock::now());
    }
  }

  ServerTotals run() {
    std::printf("serving http://%s:%u/\n", options_.listen_host.c_str(), acceptor_.local_endpoint().port());
    if (udp_) {
      std::printf("telemetry on %s:%u\n", options_.telemetry_host.c_str(), udp_->local_endpoint().port());
    }
    std::fflush(stdout);
    spdlog::info("page at http://{}:{}/{}", options_.listen_host, acceptor_.local_endpoint().port(),
                 udp_ ? fmt::format(", telemetry on {}:{}", options_.telemetry_host, udp_->local_endpoint().port())
                      : ", replaying " + options_.replay.string());
    accept();
    if (udp_) receive();
    schedule_tick();
    io_.run();
    return {hub_ ? hub_->accepted() : 0, hub_ ? hub_->dropped_total() : 0};
  }

  void forget(const std::shared_ptr<Connection>& c) { connections_.erase(c->self); }
  [[nodiscard]] const ServerOptions& options() const { return options_; }
  [[nodiscard]] const std::chrono::milliseconds& write_timeout() const { return options_.write_timeout; }
  void handle(const std::shared_ptr<Connection>& c, const Request& r);

 private:
  void load_page();
  void accept();
  void receive();
  void schedule_tick();
  void on_tick();
  void send_udp(const std::string& to, const std::string& frame);
  void broadcast(std::string_view event);
  [[nodiscard]] std::string status_json() const;
  [[nodiscard]] std::size_t streams(const std::string* client) const;
  void stop_request(const std::shared_ptr<Connection>& c);

  struct PageFile {
    std::string type;
    std::string body;
  };

  ServerOptions options_;
  const std::atomic<bool>& stop_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::optional<udp::socket> udp_;
  std::optional<TelemetryHub> hub_;
  asio::steady_timer tick_;
  std::list<std::shared_ptr<Connection>> connections_;
  std::map<std::string, PageFile> page_;
  std::array<char, 65536> datagram_{};
  udp::endpoint sender_;
  std::uint64_t table_version_ = 0;
  Clock::time_point status_sent_;
};

void Connection::start() {
  timer_.expires_after(server_.options().request_timeout);
  timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec && self->phase_ == Phase::kReading) {
      self->close();  // a request's head that never ends (slowloris) holds nothing for longer
    }
  });
  asio::async_read_until(
      socket_, head_, "\r\n\r\n",
      [self = shared_from_this()](const asio::error_code& ec, std::size_t n) { self->on_head(ec, n); });
}

void Connection::close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  asio::error_code ignored;
  timer_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  server_.forget(shared_from_this());
}

void Connection::on_head(const asio::error_code& ec, std::size_t n) {
  if (phase_ != Phase::kReading) return;
  timer_.cancel();
  if (ec == asio::error::not_found) {
    respond(431, "text/plain", "request head over 8 KiB\n");
    return;
  }
  if (ec) {
    close();
    return;
  }
  const std::string_view head(static_cast<const char*>(head_.data().data()), n);
  const auto request = parse_head(head);
  if (!request) {
    respond(400, "text/plain", "not an HTTP/1.x request\n");
    return;
  }
  server_.handle(shared_from_this(), *request);
}

void Connection::respond(int status, std::string_view type, std::string_view body) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kResponding;
  out_ = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n", status,
                     reason_phrase(status), type, body.size(), kSecurityHeaders);
  out_ += body;
  write_then_close();
}

void Connection::write_then_close() {
  timer_.expires_after(server_.write_timeout());
  timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec) self->close();  // a client that does not take its answer
  });
  asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
    if (ec || !self->file_) {
      self->close();
    } else {
      self->next_chunk();
    }
  });
}

void Connection::send_file(const std::filesystem::path& file, std::string_view type) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kResponding;
  auto in = std::make_unique<std::ifstream>(file, std::ios::binary);
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (!*in || ec) {
    respond(404, "text/plain", "no such record in the run folder\n");
    return;
  }
  file_ = std::move(in);
  out_ = fmt::format("HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n", type,
                     size, kSecurityHeaders);
  write_then_close();
}

void Connection::next_chunk() {
  out_.resize(1U << 16U);
  file_->read(out_.data(), static_cast<std::streamsize>(out_.size()));
  out_.resize(static_cast<std::size_t>(file_->gcount()));
  if (out_.empty()) {
    close();
    return;
  }
  write_then_close();
}

void Connection::stream(std::string first_events) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kStreaming;
  timer_.cancel();
  pending_ = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n" +
             std::string(kSecurityHeaders) + "\r\nretry: 1000\n\n" + first_events;
  flush(Clock::now());
  watch_peer();
}

void Connection::watch_peer() {
  socket_.async_read_some(asio::buffer(peer_bytes_),
                          [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                            if (ec) {
                              self->close();  // the page went away
                            } else if (self->phase_ == Phase::kStreaming) {
                              self->watch_peer();
                            }
                          });
}

void Connection::push(std::string_view event) {
  if (phase_ != Phase::kStreaming) return;
  if (pending_.size() + event.size() > kMaxStreamBacklog) {
    spdlog::warn("event stream to {}: its client fell {} KiB behind; closed (the page reconnects)", client_,
                 pending_.size() / 1024);
    close();
    return;
  }
  pending_ += event;
}

void Connection::flush(Clock::time_point now) {
  if (phase_ != Phase::kStreaming) return;
  if (writing_) {
    if (now - write_started_ > server_.write_timeout()) {
      close();  // a client that stopped reading
    }
    return;
  }
  if (pending_.empty()) {
    if (now - last_write_ < kHeartbeatEvery) return;
    pending_ = ": still here\n\n";  // a comment: tells a dead client from a quiet test
  }
  out_.swap(pending_);
  pending_.clear();
  writing_ = true;
  write_started_ = now;
  asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
    self->writing_ = false;
    self->last_write_ = Clock::now();
    if (ec) self->close();
  });
}

void Connection::answer_when(std::function<bool()> done, Clock::time_point until, std::function<void()> answer) {
  phase_ = Phase::kResponding;
  if (done() || Clock::now() >= until) {
    answer();
    return;
  }
  timer_.expires_after(std::chrono::milliseconds(5));
  timer_.async_wait([self = shared_from_this(), done = std::move(done), until,
                     answer = std::move(answer)](const asio::error_code& ec) mutable {
    if (!ec && self->phase_ == Phase::kResponding) {
      self->answer_when(std::move(done), until, std::move(answer));
    }
  });
}

void Server::load_page() {
  const std::filesystem::path uplot = options_.web_dir / "node_modules" / "uplot" / "dist";
  const std::pair<std::string, std::pair<std::filesystem::path, std::string>> files[] = {
      {"/", {options_.web_dir / "index.html", "text/html; charset=utf-8"}},
      {"/console.js", {options_.web_dir / "console.js", "text/javascript; charset=utf-8"}},
      {"/console.css", {options_.web_dir / "console.css", "text/css"}},
      {"/uplot/uPlot.iife.min.js", {uplot / "uPlot.iife.min.js", "text/javascript; charset=utf-8"}},
      {"/uplot/uPlot.min.css", {uplot / "uPlot.min.css", "text/css"}},
  };
  for (const auto& [uri, file] : files) {
    std::ifstream in(file.first, std::ios::binary);
    if (!in) {
      throw std::runtime_error(fmt::format("{} is missing{}", file.first.string(),
                                           uri.starts_with("/uplot") ? ": deploy/setup.sh installs the page's uPlot "
                                                                       "(npm ci in console/web)"
                                                                     : ""));
    }
    std::ostringstream body;
    body << in.rdbuf();
    page_[uri] = {file.second, body.str()};
  }
  page_["/index.html"] = page_["/"];
}

void Server::accept() {
  acceptor_.async_accept([this](const asio::error_code& ec, tcp::socket socket) {
    if (!ec) {
      asio::error_code e;
      const auto peer = socket.remote_endpoint(e);
      if (connections_.size() >= options_.max_connections) {
        // Room for the newcomer (it may be Stop): the oldest connection still sending its request
        // goes, else the oldest that is not an event stream.
        auto victim = std::find_if(connections_.begin(), connections_.end(),
                                   [](const auto& c) { return c->phase() == Connection::Phase::kReading; });
        if (victim == connections_.end()) {
          victim = std::find_if(connections_.begin(), connections_.end(),
                                [](const auto& c) { return c->phase() != Connection::Phase::kStreaming; });
        }
        if (victim != connections_.end()) {
          (*victim)->close();
        }
      }
      if (connections_.size() < options_.max_connections) {
        auto c = std::make_shared<Connection>(*this, std::move(socket), e ? "?" : peer.address().to_string());
        connections_.push_back(c);
        c->self = std::prev(connections_.end());
        c->start();
      }
    } else if (ec == asio::error::no_descriptors) {
      spdlog::warn("web server: out of file descriptors ({} connections)", connections_.size());
    }
    if (acceptor_.is_open()) accept();
  });
}

void Server::receive() {
  udp_->async_receive_from(asio::buffer(datagram_), sender_, [this](const asio::error_code& ec, std::size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      const std::string source = sender_.address().to_string() + ":" + std::to_string(sender_.port());
      auto outcome = hub_->accept(std::string_view(datagram_.data(), n), source, Clock::now());
      if (outcome.reply) send_udp(outcome.reply->to, outcome.reply->frame);
      if (!outcome.dropped) broadcast("data: " + outcome.body + "\n\n");
      if (hub_->table_version() != table_version_) {
        table_version_ = hub_->table_version();
        broadcast("event: console\ndata: " + status_json() + "\n\n");
      }
    }
    receive();
  });
}

void Server::send_udp(const std::string& to, const std::string& frame) {
  const auto colon = to.rfind(':');
  asio::error_code ec;
  const udp::endpoint endpoint(asio::ip::make_address(to.substr(0, colon), ec),
                               static_cast<std::uint16_t>(std::stoul(to.substr(colon + 1))));
  if (!ec) {
    udp_->send_to(asio::buffer(frame), endpoint, 0, ec);  // non-blocking: a full buffer loses it, as UDP may
  }
}

void Server::broadcast(std::string_view event) {
  for (auto it = connections_.begin(); it != connections_.end();) {
    const auto c = *it++;  // push may close c, which erases it
    c->push(event);
  }
}

void Server::schedule_tick() {
  tick_.expires_after(kTick);
  tick_.async_wait([this](const asio::error_code& ec) {
    if (!ec) on_tick();
  });
}

void Server::on_tick() {
  if (stop_.load()) {
    acceptor_.close();
    if (udp_) udp_->close();
    while (!connections_.empty()) connections_.front()->close();
    return;
  }
  const auto now = Clock::now();
  if (hub_) {
    for (const auto& s : hub_->tick(now)) send_udp(s.to, s.frame);
    if (now - status_sent_ >= kStatusEvery) {
      status_sent_ = now;
      broadcast("event: console\ndata: " + status_json() + "\n\n");
    }
  }
  for (auto it = connections_.begin(); it != connections_.end();) {
    const auto c = *it++;
    c->flush(now);
  }
  schedule_tick();
}

std::size_t Server::streams(const std::string* client) const {
  return static_cast<std::size_t>(std::count_if(connections_.begin(), connections_.end(), [&](const auto& c) {
    return c->phase() == Connection::Phase::kStreaming && (client == nullptr || c->client() == *client);
  }));
}

std::string Server::status_json() const {
  const auto now = Clock::now();
  std::string nodes;
  std::string stops;
  for (const NodeSeen& n : hub_->nodes()) {
    nodes += fmt::format(R"({}{{"node":{},"run":"{}","source":"{}","state":{},"datagrams":{},"heard_s_ago":{:.3f}}})",
                         nodes.empty() ? "" : ",", json_string(n.node), n.run, n.source, json_string(n.state),
                         n.datagrams, std::chrono::duration<double>(now - n.last_heard).count());
    if (n.stop_sent != 0) {
      stops += fmt::format(R"({}{{"node":{},"run":"{}","source":"{}","acknowledged":{}}})", stops.empty() ? "" : ",",
                           json_string(n.node), n.run, n.source, n.stop_acked == n.stop_sent ? "true" : "false");
    }
  }
  std::string dropped;
  for (std::size_t d = 0; d < kDroppedKinds; ++d) {
    dropped += fmt::format(R"({}"{}":{})", d == 0 ? "" : ",", dropped_name(static_cast<Dropped>(d)),
                           hub_->dropped(static_cast<Dropped>(d)));
  }
  return fmt::format(
      R"({{"accepted":{},"dropped":{{{}}},"dropped_total":{},"nodes":[{}],"stops":[{}],"streams":{},"connections":{}}})",
      hub_->accepted(), dropped, hub_->dropped_total(), nodes, stops, streams(nullptr), connections_.size());
}

void Server::stop_request(const std::shared_ptr<Connection>& c) {
  std::vector<TelemetryHub::StopTarget> targets;
  for (const auto& s : hub_->request_stop(Clock::now(), targets)) {
    send_udp(s.to, s.frame);
  }
  for (const auto& t : targets) {
    spdlog::warn("stop requested from the page: sent to {} (run {}) at {}", t.node, t.run, t.source);
  }
  if (targets.empty()) {
    spdlog::warn("stop requested from the page: no running numerical node heard, nothing to stop");
  }
  c->answer_when(
      [this, targets] {
        return std::all_of(targets.begin(), targets.end(),
                           [this](const auto& t) { return hub_->stop_acknowledged(t.run); });
      },
      Clock::now() + kStopAnswerWithin,
      [this, c, targets] {
        std::string sent;
        bool all = !targets.empty();
        for (const auto& t : targets) {
          const bool acked = hub_->stop_acknowledged(t.run);
          all = all && acked;
          sent += fmt::format(R"({}{{"node":{},"run":"{}","source":"{}","acknowledged":{}}})", sent.empty() ? "" : ",",
                              json_string(t.node), t.run, t.source, acked ? "true" : "false");
        }
        c->respond(200, "application/json", fmt::format(R"({{"sent_to":[{}],"acknowledged":{}}})", sent, all));
      });
}

void Server::handle(const std::shared_ptr<Connection>& c, const Request& r) {
  const std::string* host = r.header("host");
  if (host == nullptr) {
    c->respond(400, "text/plain", "a request needs its Host header\n");
    return;
  }
  if (!host_allowed(*host, options_.allow_hosts)) {
    c->respond(403, "text/plain",
               "this console answers only to an IP address, localhost, or a name given with --allow-host\n");
    return;
  }
  if (!options_.token.empty()) {
    const std::string* header = r.header("x-rths-token");
    if (!same_secret(query_value(r.query, "token"), options_.token) &&
        (header == nullptr || !same_secret(*header, options_.token))) {
      c->respond(403, "text/plain", "this console needs its token: open it as /?token=TOKEN\n");
      return;
    }
  }
  const bool live = options_.replay.empty();
  if (r.path == "/api/stop" && live) {
    if (r.method != "POST") {
      c->respond(405, "text/plain", "POST to stop the test\n");
      return;
    }
    // A header a cross-site form or a no-cors fetch cannot send, and no other origin: another
    // site's page open in the operator's browser cannot stop the test through this console.
    const std::string* intent = r.header("x-rths-request");
    const std::string* origin = r.header("origin");
    if (intent == nullptr || *intent != "stop" || (origin != nullptr && *origin != "http://" + *host)) {
      c->respond(403, "text/plain", "a stop request carries the header X-Rths-Request: stop, from this page\n");
      return;
    }
    stop_request(c);
    return;
  }
  if (r.method != "GET") {
    c->respond(405, "text/plain", "GET only here\n");
    return;
  }
  if (const auto file = page_.find(r.path); file != page_.end()) {
    c->respond(200, file->second.type, file->second.body);
  } else if (r.path == "/api/mode") {
    std::string body = R"({"mode":"live"})";
    if (!live) {
      std::string files;
      for (const auto& f : replay_files(options_.replay)) {
        files += (files.empty() ? "" : ",") + json_string(f);
      }
      body = fmt::format(R"({{"mode":"replay","run":{},"files":[{}]}})",
                         json_string(options_.replay.filename().string()), files);
    }
    c->respond(200, "application/json", body);
  } else if (r.path == "/api/status" && live) {
    c->respond(200, "application/json", status_json());
  } else if (r.path == "/api/events" && live) {
    if (streams(nullptr) >= options_.max_streams || streams(&c->client()) >= options_.max_streams_per_client) {
      c->respond(429, "text/plain", "too many event streams open: close a tab of this console\n");
      return;
    }
    std::string first = "event: console\ndata: " + status_json() + "\n\n";
    for (const auto& body : hub_->latest()) {
      first += "data: " + body + "\n\n";
    }
    c->stream(std::move(first));
  } else if (r.path.starts_with("/run/") && !live) {
    const std::string name = r.path.substr(5);
    const auto files = replay_files(options_.replay);
    if (std::find(files.begin(), files.end(), name) == files.end()) {
      c->respond(404, "text/plain", "no such record in the run folder\n");
      return;
    }
    c->send_file(options_.replay / name, name.ends_with(".json") ? "application/json" : "text/csv");
  } else {
    c->respond(404, "text/plain", "not found\n");
  }
}

}  // namespace

ServerTotals serve_console(const ServerOptions& options, const std::atomic<bool>& stop) {
  Server server(options, stop);
  return server.run();
}

}  // namespace rths::console
