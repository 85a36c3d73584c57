#include "console/server/server.hpp"

#include <algorithm>
#include <array>
#include <atomic>
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

#include <linux/sock_diag.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ip/udp.hpp>
#include <asio/steady_timer.hpp>

#include "common/core/address.hpp"
#include "common/records/telemetry.hpp"
#include "console/hub/hub.hpp"
#include "console/server/http.hpp"

namespace rths::console {

namespace {

using asio::ip::tcp;
using asio::ip::udp;

constexpr auto kTick = std::chrono::milliseconds(100);  // events go out at most 10 times a second
constexpr auto kStatusEvery = std::chrono::seconds(1);
constexpr auto kStopAnswerWithin = std::chrono::milliseconds(500);

// "127.0.0.1:8080", "[::1]:8080".
std::string host_port(const asio::ip::address& address, unsigned short port) {
  return address.is_v6() ? fmt::format("[{}]:{}", address.to_string(), port)
                         : fmt::format("{}:{}", address.to_string(), port);
}

// A burst of telemetry (every node of a large test at once) must wait in the socket's buffer, not be
// lost there: the buffer is raised to 4 MiB, or as far as the kernel allows (net.core.rmem_max).
// What it still loses, the kernel counts (SO_MEMINFO's drops).
std::size_t raise_receive_buffer(udp::socket& socket) {
  asio::error_code ec;
  socket.set_option(asio::socket_base::receive_buffer_size(4 << 20), ec);
  asio::socket_base::receive_buffer_size size;
  socket.get_option(size, ec);
  return ec ? 0 : static_cast<std::size_t>(size.value());
}

std::uint64_t kernel_drops(int socket) {
  std::array<std::uint32_t, SK_MEMINFO_VARS> info{};
  socklen_t length = sizeof info;
  if (getsockopt(socket, SOL_SOCKET, SO_MEMINFO, info.data(), &length) != 0 ||
      length < (SK_MEMINFO_DROPS + 1) * sizeof(std::uint32_t)) {
    return 0;
  }
  return info[SK_MEMINFO_DROPS];
}

// The record files of a run folder the replay serves: its CSVs and summaries by the names rths writes.
std::vector<std::string> replay_files(const std::filesystem::path& dir) {
  static const std::regex kRecord(
      R"((numerical|reference|timing|site_[A-Za-z0-9_.-]+)\.csv|(summary|site_[A-Za-z0-9_.-]+)\.json)");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    // A link is not a record, wherever it points (a run folder's site_x.csv -> /etc/hostname).
    if (std::filesystem::is_regular_file(entry.symlink_status()) && std::regex_match(name, kRecord)) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Server final : public ConnectionOwner {
 public:
  Server(const ServerOptions& o, const std::atomic<bool>& stop)
      : options_(o),
        stop_(stop),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address(o.listen_host), o.listen_port)),
        tick_(io_) {
    load_page();
    if (o.replay.empty()) {
      udp_.emplace(io_, udp::endpoint(asio::ip::make_address(o.telemetry_host), o.telemetry_port));
      telemetry_socket().non_blocking(true);
      receive_buffer_ = raise_receive_buffer(telemetry_socket());
      udp_fd_ = telemetry_socket().native_handle();
      if (!o.key) {
        throw std::logic_error("a live console needs its key");
      }
      HubLimits limits;
      limits.max_nodes = o.max_nodes;
      hub_.emplace(*o.key, limits, Clock::now());
    }
  }

  ServerTotals run() {
    const std::string page = host_port(acceptor_.local_endpoint().address(), acceptor_.local_endpoint().port());
    std::printf("serving http://%s/\n", page.c_str());
    const std::string telemetry =
        udp_ ? host_port(telemetry_socket().local_endpoint().address(), telemetry_socket().local_endpoint().port())
             : std::string();
    if (udp_) {
      std::printf("telemetry on %s\n", telemetry.c_str());
    }
    std::fflush(stdout);
    spdlog::info("page at http://{}/{}", page,
                 udp_ ? fmt::format(", telemetry on {} (receive buffer {} KiB)", telemetry, receive_buffer_ / 1024)
                      : ", replaying " + options_.replay.string());
    accept();
    if (udp_) receive();
    schedule_tick();
    io_.run();
    return {hub_ ? hub().accepted() : 0, hub_ ? hub().dropped_total() : 0};
  }

  void forget(const std::shared_ptr<Connection>& c) override { connections_.erase(c->self); }
  [[nodiscard]] const ServerOptions& options() const override { return options_; }
  void handle(const std::shared_ptr<Connection>& c, const Request& r) override;

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
  void make_room_for_stream(const std::string& client);
  void take_datagram(std::size_t n);
  void stop_request(const std::shared_ptr<Connection>& c);

  struct PageFile {
    std::string type;
    std::string body;
  };

  // The live console's hub and telemetry socket; a replay has neither, and never reaches the code
  // that uses them.
  TelemetryHub& hub() {
    if (!hub_) throw std::logic_error("rths-console: the telemetry hub used in a replay");
    return *hub_;
  }
  [[nodiscard]] const TelemetryHub& hub() const {
    if (!hub_) throw std::logic_error("rths-console: the telemetry hub used in a replay");
    return *hub_;
  }
  udp::socket& telemetry_socket() {
    if (!udp_) throw std::logic_error("rths-console: the telemetry socket used in a replay");
    return *udp_;
  }

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
  std::size_t receive_buffer_ = 0;
  int udp_fd_ = -1;
};

void Server::load_page() {
  const std::filesystem::path uplot = options_.web_dir / "node_modules" / "uplot" / "dist";
  const std::pair<std::string, std::pair<std::filesystem::path, std::string>> files[] = {
      {"/", {options_.web_dir / "index.html", "text/html; charset=utf-8"}},
      {"/charts.js", {options_.web_dir / "charts.js", "text/javascript; charset=utf-8"}},
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
        // Every loopback address is one client: a local user has as many 127.x.y.z as it likes.
        const std::string client = e ? "?" : peer.address().to_string();
        auto c = std::make_shared<Connection>(*this, std::move(socket), is_loopback_host(client) ? "loopback" : client);
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

void Server::take_datagram(std::size_t n) {
  const std::string source = host_port(sender_.address(), sender_.port());
  auto outcome = hub().accept(std::string_view(datagram_.data(), n), source, Clock::now());
  for (const auto& send : outcome.sends) send_udp(send.to, send.frame);
  if (!outcome.dropped) broadcast("data: " + outcome.body + "\n\n");
  if (hub().table_version() != table_version_) {
    table_version_ = hub().table_version();
    broadcast("event: console\ndata: " + status_json() + "\n\n");
  }
}

void Server::receive() {
  telemetry_socket().async_receive_from(
      asio::buffer(datagram_), sender_, [this](const asio::error_code& ec, std::size_t n) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) {
          take_datagram(n);
          // A burst is taken in one go (the socket is non-blocking), up to a bound that lets the
          // page's requests in between.
          asio::error_code again;
          for (int more = 0; more < 256; ++more) {
            const std::size_t m = telemetry_socket().receive_from(asio::buffer(datagram_), sender_, 0, again);
            if (again) break;
            take_datagram(m);
          }
        }
        receive();
      });
}

void Server::send_udp(const std::string& to, const std::string& frame) {
  const auto colon = to.rfind(':');
  asio::error_code ec;
  std::string host = to.substr(0, colon);
  if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
  const udp::endpoint endpoint(asio::ip::make_address(host, ec),
                               static_cast<std::uint16_t>(std::stoul(to.substr(colon + 1))));
  if (!ec) {
    // Non-blocking: a full buffer loses it, as UDP may.
    telemetry_socket().send_to(asio::buffer(frame), endpoint, 0, ec);
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
    if (udp_) telemetry_socket().close();
    while (!connections_.empty()) connections_.front()->close();
    return;
  }
  const auto now = Clock::now();
  if (hub_) {
    for (const auto& s : hub().tick(now)) send_udp(s.to, s.frame);
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

// The page of the operator always gets its stream: a new one closes its client's oldest when that
// client holds --max-streams-per-client, and the oldest of all when --max-streams are open. Loopback
// clients count as one (a local user has as many 127.x.y.z addresses as it likes).
void Server::make_room_for_stream(const std::string& client) {
  const auto oldest = [&](const std::string* of) {
    return std::find_if(connections_.begin(), connections_.end(), [&](const auto& c) {
      return c->phase() == Connection::Phase::kStreaming && (of == nullptr || c->client() == *of);
    });
  };
  if (streams(&client) >= options_.max_streams_per_client) {
    spdlog::info("event stream of {}: its oldest closed for a new one", client);
    (*oldest(&client))->close();
  }
  if (streams(nullptr) >= options_.max_streams) {
    const auto victim = oldest(nullptr);
    spdlog::info("event streams: {} open, the oldest ({}) closed for a new one", options_.max_streams,
                 (*victim)->client());
    (*victim)->close();
  }
}

std::string Server::status_json() const {
  const auto now = Clock::now();
  std::string nodes;
  std::string stops;
  for (const NodeSeen& n : hub().nodes()) {
    nodes += fmt::format(R"({}{{"node":{},"run":"{}","source":"{}","state":{},"datagrams":{},"heard_s_ago":{:.3f}}})",
                         nodes.empty() ? "" : ",", json_string(n.node), n.run, n.source, json_string(n.state),
                         n.datagrams, std::chrono::duration<double>(now - n.last_heard).count());
    if (n.stop_sent != 0) {
      stops += fmt::format(R"({}{{"node":{},"run":"{}","source":"{}","acknowledged":{},"heard_s_ago":{:.3f}}})",
                           stops.empty() ? "" : ",", json_string(n.node), n.run, n.source,
                           n.stop_acked == n.stop_sent ? "true" : "false",
                           std::chrono::duration<double>(now - n.last_heard).count());
    }
  }
  std::string dropped;
  for (std::size_t d = 0; d < kDroppedKinds; ++d) {
    dropped += fmt::format(R"({}"{}":{})", d == 0 ? "" : ",", dropped_name(static_cast<Dropped>(d)),
                           hub().dropped(static_cast<Dropped>(d)));
  }
  return fmt::format(
      R"({{"accepted":{},"dropped":{{{}}},"dropped_total":{},"kernel_dropped":{},"receive_buffer":{},"nodes":[{}],)"
      R"("stops":[{}],"streams":{},"connections":{}}})",
      hub().accepted(), dropped, hub().dropped_total(), kernel_drops(udp_fd_), receive_buffer_, nodes, stops,
      streams(nullptr), connections_.size());
}

void Server::stop_request(const std::shared_ptr<Connection>& c) {
  std::vector<TelemetryHub::StopTarget> targets;
  for (const auto& s : hub().request_stop(Clock::now(), targets)) {
    send_udp(s.to, s.frame);
  }
  for (const auto& t : targets) {
    spdlog::warn("stop requested from the page: sent to {} (run {}) at {}, heard {:.1f} s ago", t.node, t.run, t.source,
                 t.heard_s_ago);
  }
  if (targets.empty()) {
    spdlog::warn("stop requested from the page: no running numerical node heard, nothing to stop");
  }
  c->answer_when(
      [this, targets] {
        return std::all_of(targets.begin(), targets.end(),
                           [this](const auto& t) { return hub().stop_acknowledged(t.run); });
      },
      Clock::now() + kStopAnswerWithin,
      [this, c, targets] {
        std::string sent;
        bool all = !targets.empty();
        for (const auto& t : targets) {
          const bool acked = hub().stop_acknowledged(t.run);
          all = all && acked;
          sent += fmt::format(R"({}{{"node":{},"run":"{}","source":"{}","acknowledged":{},"heard_s_ago":{:.3f}}})",
                              sent.empty() ? "" : ",", json_string(t.node), t.run, t.source, acked ? "true" : "false",
                              t.heard_s_ago);
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
  // The page's own files hold nothing secret and carry no token (index.html loads them by plain
  // paths); everything that reads or acts on the test does.
  if (!options_.token.empty() && !page_.contains(r.path)) {
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
    make_room_for_stream(c->client());
    // The newest telemetry of every run, newest run last, within the backlog a stream may hold.
    const std::vector<std::string> latest = hub().latest();
    std::string first = "event: console\ndata: " + status_json() + "\n\n";
    std::size_t from = latest.size();
    for (std::size_t size = first.size(); from > 0 && size + latest[from - 1].size() + 8 <= kMaxStreamBacklog; --from) {
      size += latest[from - 1].size() + 8;
    }
    for (std::size_t i = from; i < latest.size(); ++i) {
      first += "data: " + latest[i] + "\n\n";
    }
    c->stream(first);
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
