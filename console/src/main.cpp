// rths-console: the operator's view of a running test, and of a finished one. Collects the
// telemetry of every node (UDP, TelemetryPublisher) and serves one web page that draws it live,
// with the test's stop button; or serves a run folder's records for replay.
#include <civetweb.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/io_context.hpp>

#include "rths/common/address.hpp"
#include "rths/common/command_line.hpp"
#include "rths/common/config.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/common/telemetry.hpp"
#include "rths/common/udp_link.hpp"
#include "rths/console/hub.hpp"

namespace {

// The shortest --token: 16 characters, about 64 bits even of hexadecimal digits.
constexpr std::size_t kMinTokenChars = 16;

struct Options {
  std::string listen = "127.0.0.1:8080";
  std::string telemetry = "127.0.0.1:47300";
  std::string token;
  std::filesystem::path web_dir;
  std::filesystem::path replay;
  bool quiet = false;
};

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-console", "the operator's console of an rths test (a web page)");
  cli.command("", "",
              "Collect the telemetry of every node of a test (rths-numerical and rths-physical with\n"
              "--console at --telemetry's address) and serve a page at --listen that draws it live per\n"
              "site: target against measured displacement, force, tracking error, the Smith model error,\n"
              "the network and the loop timing, each node's state, and a Stop button that stops the test\n"
              "as SIGINT at the numerical node does. With --replay RUN_DIR the page scrubs through a\n"
              "finished run folder instead.");
  cli.text("listen", "HOST:PORT", o.listen,
           "Where the page is served. Default 127.0.0.1:8080; any address but loopback needs --token.");
  cli.text("telemetry", "HOST:PORT", o.telemetry,
           "Where the nodes' telemetry arrives (their --console). Default 127.0.0.1:47300; port 0 picks\n"
           "a free one (printed).");
  cli.option(
      "token", "TOKEN",
      [&o](const std::string& v) {
        if (v.size() < kMinTokenChars) {
          throw rths::Expected(fmt::format("a secret of at least {} characters", kMinTokenChars));
        }
        o.token = v;
      },
      "A secret of 16 characters or more that every request must carry (?token=TOKEN in the\n"
      "page's address); required when --listen is not a loopback address.");
  cli.path("web", "DIR", o.web_dir,
           "The page's files and uPlot (node_modules/uplot). Default: ../share/rths/console from\n"
           "this program's folder when installed, else the source tree's console/web.");
  cli.path("replay", "RUN_DIR", o.replay, "Serve this finished run folder for replay instead of live telemetry.");
  cli.flag("quiet", o.quiet, "Print only errors.").alias("-q");
  cli.epilogue(R"(Prints "serving http://HOST:PORT/" and "telemetry on HOST:PORT" once both listen, then runs until
SIGINT or SIGTERM. Exit codes: 0 stopped by a signal; 1 failure (a port taken, uPlot missing:
deploy/setup.sh installs it); 2 bad command line (a short token, a page folder without the page, a
reachable page without a token, a replay folder that is not there).
)");
  return cli;
}

// The console's state shared by the HTTP server's threads and the UDP thread.
class Console {
 public:
  Console(Options o, const rths::HostPort& telemetry)
      : options_(std::move(o)), link_(io_, telemetry.host, telemetry.port) {}

  [[nodiscard]] std::uint16_t telemetry_port() const { return link_.local_port(); }

  // The UDP thread: receives telemetry into the hub and sends the stop requests the page asks for.
  void receive(const std::atomic<bool>& stop) {
    std::array<std::byte, 65536> rx{};
    while (!stop.load()) {
      link_.wait_readable(50'000'000);
      for (std::size_t n = 0; (n = link_.receive(rx)) != 0;) {
        const std::string_view datagram(
            reinterpret_cast<const char*>(rx.data()),  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
            n);
        hub_.accept(datagram, link_.last_source_description());
      }
      serve_stop();
    }
    running_.store(false);
  }

  // From a server thread: asks the UDP thread to send every numerical node its stop request; the
  // nodes it went to (empty when none had been heard).
  std::vector<std::string> request_stop() {
    std::unique_lock lock(stop_mutex_);
    stop_pending_ = true;
    stop_done_.wait_for(lock, std::chrono::seconds(2), [&] { return !stop_pending_; });
    return stop_sent_to_;
  }

  [[nodiscard]] rths::console::TelemetryHub& hub() { return hub_; }
  [[nodiscard]] const Options& options() const { return options_; }
  [[nodiscard]] bool running() const { return running_.load(); }

 private:
  void serve_stop() {
    const std::scoped_lock lock(stop_mutex_);
    if (!stop_pending_) {
      return;
    }
    stop_sent_to_.clear();
    for (const auto& node : hub_.nodes()) {
      if (node.node != "numerical") {
        continue;  // the numerical node stops the sites, as on SIGINT
      }
      const rths::HostPort to = rths::parse_host_port(node.source);
      link_.set_peer(to.host, to.port);
      const std::string request = fmt::format(R"({{"stop":"{}"}})", node.token);
      for (int copy = 0; copy < 3; ++copy) {  // a lost datagram must not leave the test running
        link_.send(std::as_bytes(std::span(request.data(), request.size())));
      }
      stop_sent_to_.push_back(fmt::format("{} at {}", node.node, node.source));
      spdlog::warn("stop requested from the page: sent to {} at {}", node.node, node.source);
    }
    stop_pending_ = false;
    stop_done_.notify_all();
  }

  Options options_;
  asio::io_context io_;
  rths::UdpLink link_;
  rths::console::TelemetryHub hub_;
  std::mutex stop_mutex_;
  std::condition_variable stop_done_;
  bool stop_pending_ = false;
  std::vector<std::string> stop_sent_to_;
  std::atomic<bool> running_{true};
};

std::string query_var(const mg_request_info* info, const char* name) {
  if (info->query_string == nullptr) {
    return {};
  }
  std::array<char, 256> value{};
  const int n = mg_get_var(info->query_string, std::strlen(info->query_string), name, value.data(), value.size());
  return n < 0 ? std::string() : std::string(value.data(), static_cast<std::size_t>(n));
}

void reply(mg_connection* conn, int status, const char* type, const std::string& body) {
  const char* text = status == 200   ? "OK"
                     : status == 403 ? "Forbidden"
                     : status == 404 ? "Not Found"
                     : status == 405 ? "Method Not Allowed"
                                     : "Error";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n",
            status, text, type, body.size());
  mg_write(conn, body.data(), body.size());
}

// A JSON string literal, quotes included.
std::string json_string(const std::string& s) {
  return "\"" + rths::json_escape(s) + "\"";
}

// The record files of a run folder the replay serves: its CSVs and summaries by the names rths writes.
std::vector<std::string> replay_files(const std::filesystem::path& dir) {
  static const std::regex kRecord(R"((numerical|reference|timing|site_[A-Za-z0-9_.-]+)\.csv|summary\.json)");
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

void stream_events(mg_connection* conn, Console& console) {
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n");
  std::uint64_t from = console.hub().next();
  std::string out;
  for (const auto& d : console.hub().latest()) {
    out += "data: " + d + "\n\n";
  }
  while (console.running()) {
    if (out.empty()) {
      out = ": still here\n\n";  // a comment: tells a dead client from a quiet test
    }
    if (mg_write(conn, out.data(), out.size()) <= 0) {
      return;  // the page went away
    }
    out.clear();
    const auto batch = console.hub().after(from, std::chrono::milliseconds(1000));
    from = batch.next;
    for (const auto& d : batch.datagrams) {
      out += "data: " + d + "\n\n";
    }
  }
}

int handle(mg_connection* conn, void* data) {
  auto& console = *static_cast<Console*>(data);
  const mg_request_info* info = mg_get_request_info(conn);
  const std::string uri = info->local_uri != nullptr ? info->local_uri : "/";
  const Options& o = console.options();
  if (!o.token.empty()) {
    const char* header = mg_get_header(conn, "X-Rths-Token");
    if (query_var(info, "token") != o.token && (header == nullptr || o.token != header)) {
      reply(conn, 403, "text/plain", "this console needs its token: open it as /?token=TOKEN\n");
      return 403;
    }
  }
  const std::filesystem::path uplot = o.web_dir / "node_modules" / "uplot" / "dist";
  if (uri == "/" || uri == "/index.html") {
    mg_send_mime_file(conn, (o.web_dir / "index.html").c_str(), "text/html; charset=utf-8");
  } else if (uri == "/console.js") {
    mg_send_mime_file(conn, (o.web_dir / "console.js").c_str(), "text/javascript");
  } else if (uri == "/console.css") {
    mg_send_mime_file(conn, (o.web_dir / "console.css").c_str(), "text/css");
  } else if (uri == "/uplot/uPlot.iife.min.js") {
    mg_send_mime_file(conn, (uplot / "uPlot.iife.min.js").c_str(), "text/javascript");
  } else if (uri == "/uplot/uPlot.min.css") {
    mg_send_mime_file(conn, (uplot / "uPlot.min.css").c_str(), "text/css");
  } else if (uri == "/api/mode") {
    std::string body = R"({"mode":"live"})";
    if (!o.replay.empty()) {
      std::string files;
      for (const auto& f : replay_files(o.replay)) {
        files += (files.empty() ? "" : ",") + json_string(f);
      }
      body =
          fmt::format(R"({{"mode":"replay","run":{},"files":[{}]}})", json_string(o.replay.filename().string()), files);
    }
    reply(conn, 200, "application/json", body);
  } else if (uri == "/api/events" && o.replay.empty()) {
    stream_events(conn, console);
  } else if (uri == "/api/stop" && o.replay.empty()) {
    if (std::strcmp(info->request_method, "POST") != 0) {
      reply(conn, 405, "text/plain", "POST to stop the test\n");
      return 405;
    }
    // A header a cross-site form or a no-cors fetch cannot send: another site's page open in the
    // operator's browser cannot stop the test through this console.
    const char* intent = mg_get_header(conn, "X-Rths-Request");
    if (intent == nullptr || std::strcmp(intent, "stop") != 0) {
      reply(conn, 403, "text/plain", "a stop request carries the header X-Rths-Request: stop\n");
      return 403;
    }
    std::string sent;
    for (const auto& to : console.request_stop()) {
      sent += (sent.empty() ? "" : ",") + json_string(to);
    }
    reply(conn, 200, "application/json", fmt::format(R"({{"sent_to":[{}]}})", sent));
  } else if (uri.starts_with("/run/") && !o.replay.empty()) {
    const std::string name = uri.substr(5);
    const auto files = replay_files(o.replay);
    if (std::find(files.begin(), files.end(), name) == files.end()) {
      reply(conn, 404, "text/plain", "no such record in the run folder\n");
      return 404;
    }
    mg_send_mime_file(conn, (o.replay / name).c_str(), name.ends_with(".json") ? "application/json" : "text/csv");
  } else {
    reply(conn, 404, "text/plain", "not found\n");
    return 404;
  }
  return 200;
}

int log_message(const mg_connection* /*conn*/, const char* message) {
  spdlog::warn("web server: {}", message);
  return 1;
}

// Where the page's files are: --web, else the installed tree's, else the source tree's.
std::filesystem::path default_web_dir() {
  std::error_code ec;
  std::filesystem::path installed =
      std::filesystem::canonical("/proc/self/exe", ec).parent_path().parent_path() / "share" / "rths" / "console";
  if (!ec && std::filesystem::exists(installed / "index.html")) {
    return installed;
  }
  return RTHS_CONSOLE_WEB_DIR;
}

int serve(Options o) {
  if (o.web_dir.empty()) {
    o.web_dir = default_web_dir();
  }
  const rths::HostPort web = rths::parse_listen_address(o.listen);
  const rths::HostPort telemetry = rths::parse_listen_address(o.telemetry);
  if (!rths::is_loopback_host(web.host) && o.token.empty()) {
    throw rths::ConfigError(
        fmt::format("--listen {}: a console other machines can reach needs --token (anyone who opens the page "
                    "can stop the test)",
                    o.listen));
  }
  if (!o.replay.empty() && !std::filesystem::is_directory(o.replay)) {
    throw rths::ConfigError(fmt::format("--replay {}: not a run folder", o.replay.string()));
  }
  if (!std::filesystem::exists(o.web_dir / "index.html")) {
    throw rths::ConfigError(fmt::format("--web {}: no index.html there: not the console's page", o.web_dir.string()));
  }
  if (const auto uplot = o.web_dir / "node_modules/uplot/dist/uPlot.iife.min.js"; !std::filesystem::exists(uplot)) {
    spdlog::error("{} is missing: deploy/setup.sh installs the page's uPlot (npm ci in console/web)", uplot.string());
    return rths::kExitFailure;
  }
  const auto& stop = rths::install_stop_signals();
  Console console(o, telemetry);
  std::thread udp([&] { console.receive(stop); });

  mg_init_library(0);
  const std::string ports = fmt::format("{}:{}", web.host, web.port);
  // A thread per page and per event stream: 80 serve a control room.
  std::array<const char*, 5> options{"listening_ports", ports.c_str(), "num_threads", "80", nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = log_message;
  mg_context* ctx = mg_start(&callbacks, nullptr, options.data());
  if (ctx == nullptr) {
    udp.join();
    throw std::runtime_error(fmt::format("cannot serve the page at {} (taken, or not an address here)", o.listen));
  }
  mg_set_request_handler(ctx, "/", handle, &console);
  std::array<mg_server_port, 4> bound{};
  const int n = mg_get_server_ports(ctx, static_cast<int>(bound.size()), bound.data());
  const int web_port = n > 0 ? bound[0].port : web.port;
  std::printf("serving http://%s:%d/\ntelemetry on %s:%u\n", web.host.c_str(), web_port, telemetry.host.c_str(),
              console.telemetry_port());
  std::fflush(stdout);
  spdlog::info("page at http://{}:{}/, telemetry on {}:{}{}", web.host, web_port, telemetry.host,
               console.telemetry_port(), o.replay.empty() ? "" : ", replaying " + o.replay.string());
  udp.join();  // until SIGINT or SIGTERM
  mg_stop(ctx);
  mg_exit_library();
  const std::string stopped = fmt::format("stopped: {} telemetry datagrams accepted, {} refused",
                                          console.hub().accepted(), console.hub().rejected());
  spdlog::info("{}", stopped);
  if (!o.quiet) {
    std::printf("%s\n", stopped.c_str());
  }
  return rths::kExitCompleted;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  if (const auto answered = cli.parse(argc, argv)) {
    return *answered;
  }
  if (const auto failed = rths::start_run_log("rths-console", {}, {}, o.quiet)) {
    return *failed;
  }
  return rths::run_logged([&] {
    try {
      return serve(o);
    } catch (const rths::Expected& e) {
      throw rths::ConfigError(e.what());
    }
  });
}
