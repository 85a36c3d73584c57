// rths-console: the operator's view of a running test, and of a finished one. Collects the
// telemetry of every node (UDP, TelemetryPublisher, sealed with the console's key) and serves one
// web page that draws it live, with the test's stop button; or serves a run folder's records for
// replay.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/protocol/secret_key.hpp"
#include "console/server/server.hpp"

namespace {

// The shortest --token: 16 characters, about 64 bits even of hexadecimal digits.
constexpr std::size_t kMinTokenChars = 16;

struct Options {
  rths::HostPort listen{"127.0.0.1", 8080};
  rths::HostPort telemetry{"127.0.0.1", 47300};
  std::filesystem::path key_file;
  std::string token;
  std::vector<std::string> allow_hosts;
  std::filesystem::path web_dir;
  std::filesystem::path replay;
  double request_timeout_s = 5.0;
  long long max_streams = 32;
  long long max_streams_per_client = 4;
  long long max_connections = 256;
  long long max_nodes = 64;
  bool quiet = false;
  std::set<std::string> given;  // options taken once: a second --key is a mistake, not a choice
};

// The address's host as a numeric address (a name resolved, IPv4 first), so that the console binds,
// prints and judges loopback by the address it listens on ("localhost" and "LOCALHOST" are 127.0.0.1).
rths::HostPort numeric(const std::string& text) {
  rths::HostPort address = rths::parse_listen_address(text);
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  asio::error_code ec;
  const auto found = resolver.resolve(address.host, "0", asio::ip::resolver_base::numeric_service, ec);
  if (ec || found.empty()) {
    throw rths::Expected(fmt::format("an address of this host (cannot resolve {})", address.host));
  }
  auto chosen = found.begin()->endpoint().address();
  for (const auto& entry : found) {
    if (entry.endpoint().address().is_v4()) {
      chosen = entry.endpoint().address();
      break;
    }
  }
  address.host = chosen.to_string();
  return address;
}

// A setter that refuses its option a second time.
rths::CommandLine::Setter once(Options& o, const std::string& name, std::function<void(const std::string&)> set) {
  return [&o, name, set = std::move(set)](const std::string& v) {
    if (!o.given.insert(name).second) {
      throw rths::Expected("it once (it was given twice)");
    }
    set(v);
  };
}

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-console", "the operator's console of an rths test (a web page)");
  cli.command("", "",
              "Collect the telemetry of every node of a test (rths-numerical, rths-physical, rths-relay and\n"
              "rths-target with --console at --telemetry's address and --console-key naming the same key\n"
              "file as --key) and serve a page at --listen that draws it live per site: target against\n"
              "measured displacement, force, tracking error, the Smith model error, the network and the\n"
              "loop timing, each node's state, and a Stop button that stops the test as SIGINT at the\n"
              "numerical node does. With --replay RUN_DIR the page scrubs through a finished run folder.");
  const auto number = [&o](const char* name, double& target, const rths::NumberRange& range) {
    return once(o, name, [&target, range](const std::string& v) { target = rths::parse_number(v, range); });
  };
  const auto whole = [&o](const char* name, long long& target, const rths::WholeRange& range) {
    return once(o, name, [&target, range](const std::string& v) { target = rths::parse_whole(v, range); });
  };
  const auto path = [&o](const char* name, std::filesystem::path& target) {
    return once(o, name, [&target](const std::string& v) {
      if (v.empty()) throw rths::Expected("a path");
      target = v;
    });
  };
  cli.option("listen", "HOST:PORT", once(o, "listen", [&o](const std::string& v) { o.listen = numeric(v); }),
             "Where the page is served (a name is resolved to its address, IPv4 first). Default\n"
             "127.0.0.1:8080; an address other than loopback needs --token.");
  cli.option("telemetry", "HOST:PORT", once(o, "telemetry", [&o](const std::string& v) { o.telemetry = numeric(v); }),
             "Where the nodes' telemetry arrives (their --console). Default 127.0.0.1:47300; port 0 picks\n"
             "a free one (printed).");
  cli.option("key", "FILE", path("key", o.key_file),
             "The console's key file (64 hex digits, mode 0600; make it with `rths-numerical keygen FILE`)\n"
             "that every node names with --console-key. Telemetry that does not authenticate under it, or\n"
             "that is not fresh, is dropped and counted, and the stop request goes only to a numerical\n"
             "node whose telemetry authenticated. Required unless --replay.");
  cli.option("token", "TOKEN",
             once(o, "token",
                  [&o](const std::string& v) {
                    if (v.size() < kMinTokenChars) {
                      throw rths::Expected(fmt::format("a secret of at least {} characters", kMinTokenChars));
                    }
                    o.token = v;
                  }),
             "A secret of 16 characters or more that every request for the test's data or its Stop must\n"
             "carry (open the page as /?token=TOKEN; the page passes it on); required when --listen is not\n"
             "a loopback address. The page's own files are served without it.");
  cli.repeated("allow-host", "NAME", o.allow_hosts,
               "A host name the page may be opened by (its Host header), beyond IP addresses and\n"
               "localhost, e.g. the control room machine's DNS name. Repeatable. Any other name is\n"
               "refused (403), so that a web site that rebinds its name to this machine reaches nothing.");
  cli.option("request-timeout-s", "SECONDS",
             number("request-timeout-s", o.request_timeout_s, {0.1, 60.0, false, "a time in seconds"}),
             "A connection that has not sent its whole request head in this time is closed. Default 5.");
  cli.option("max-streams", "N", whole("max-streams", o.max_streams, {1, 1000, "a whole number"}),
             "Event streams (open pages) at once, all clients; a new one closes the oldest. Default 32.");
  cli.option("max-streams-per-client", "N",
             whole("max-streams-per-client", o.max_streams_per_client, {1, 1000, "a whole number"}),
             "Event streams at once from one address (every loopback address counts as one); a new\n"
             "one closes that client's oldest. Default 4.");
  cli.option("max-connections", "N", whole("max-connections", o.max_connections, {8, 4096, "a whole number"}),
             "HTTP connections at once; a new one closes the oldest still sending its request, so that\n"
             "Stop gets in. Default 256.");
  cli.option("max-nodes", "N", whole("max-nodes", o.max_nodes, {1, 4096, "a whole number"}),
             "Node runs the console keeps; the least recently heard goes first. Default 64.");
  cli.option("web", "DIR", path("web", o.web_dir),
             "The page's files and uPlot (node_modules/uplot). Default: ../share/rths/console from\n"
             "this program's folder when installed, else the source tree's console/web.");
  cli.option("replay", "RUN_DIR", path("replay", o.replay),
             "Serve this finished run folder for replay instead of live telemetry.");
  cli.flag("quiet", o.quiet, "Print only errors.").alias("-q");
  cli.epilogue(R"(Prints "serving http://HOST:PORT/" and "telemetry on HOST:PORT" once both listen, then runs until
SIGINT or SIGTERM, and then "stopped: N telemetry datagrams accepted, M dropped". GET /api/status
answers the console's counters (accepted, dropped by why, dropped by the kernel), nodes and stop
requests as JSON (with --token, only with the token).
Exit codes: 0 stopped by a signal; 1 failure (a port taken, uPlot missing: deploy/setup.sh installs
it); 2 bad command line (no --key, a key file that is missing, readable by others or malformed, a
short token, an option given twice, an address that is not HOST:PORT or does not resolve here, a
page folder without the page, a reachable page without a token, a replay folder that is not there).
)");
  return cli;
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

std::string shown(const rths::HostPort& a) {
  return a.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", a.host, a.port)
                                               : fmt::format("{}:{}", a.host, a.port);
}

rths::console::ServerOptions server_options(const Options& o) {
  rths::console::ServerOptions s;
  s.web_dir = o.web_dir.empty() ? default_web_dir() : o.web_dir;
  const rths::HostPort& web = o.listen;
  const rths::HostPort& telemetry = o.telemetry;
  if (!rths::is_loopback_host(web.host) && o.token.empty()) {
    throw rths::ConfigError(
        fmt::format("--listen {}: a console other machines can reach needs --token (anyone who opens the page "
                    "can stop the test)",
                    shown(web)));
  }
  for (const std::string& name : o.allow_hosts) {
    const bool valid = !name.empty() && name.size() <= 253 && name.front() != '.' && name.front() != '-' &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.';
                       });
    if (!valid) {
      throw rths::ConfigError(
          fmt::format("--allow-host: expected a host name (letters, digits, '-' and '.'), got '{}'", name));
    }
  }
  if (!o.replay.empty() && !std::filesystem::is_directory(o.replay)) {
    throw rths::ConfigError(fmt::format("--replay {}: not a run folder", o.replay.string()));
  }
  if (!std::filesystem::exists(s.web_dir / "index.html")) {
    throw rths::ConfigError(fmt::format("--web {}: no index.html there: not the console's page", s.web_dir.string()));
  }
  if (o.replay.empty()) {
    if (o.key_file.empty()) {
      throw rths::ConfigError(
          "--key: missing; the console takes telemetry only sealed with its key: make one with `rths-numerical "
          "keygen FILE` and give every node the same file (--console-key FILE)");
    }
    try {
      s.key = rths::load_key_file(o.key_file);
    } catch (const rths::ConfigError& e) {
      throw rths::ConfigError(fmt::format("--key: {}", e.what()));
    }
  }
  s.listen_host = web.host;
  s.listen_port = web.port;
  s.telemetry_host = telemetry.host;
  s.telemetry_port = telemetry.port;
  s.token = o.token;
  s.allow_hosts = o.allow_hosts;
  s.replay = o.replay;
  s.request_timeout = std::chrono::milliseconds(static_cast<long long>(o.request_timeout_s * 1000.0));
  s.max_streams = static_cast<std::size_t>(o.max_streams);
  s.max_streams_per_client = static_cast<std::size_t>(o.max_streams_per_client);
  s.max_connections = static_cast<std::size_t>(o.max_connections);
  s.max_nodes = static_cast<std::size_t>(o.max_nodes);
  return s;
}

// Serves the page until a signal stops it.
int serve(const Options& o, const std::atomic<bool>& stop) {
  rths::console::ServerOptions options;
  try {
    options = server_options(o);
  } catch (const rths::Expected& e) {
    throw rths::ConfigError(e.what());
  }
  rths::console::ServerTotals totals;
  try {
    totals = rths::console::serve_console(options, stop);
  } catch (const std::system_error& e) {
    throw std::runtime_error(fmt::format("cannot serve the page at {} or take telemetry at {}: {}", shown(o.listen),
                                         shown(o.telemetry), e.what()));
  }
  const std::string stopped =
      fmt::format("stopped: {} telemetry datagrams accepted, {} dropped", totals.accepted, totals.dropped);
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
  return rths::run_program(argc, argv, cli, [&o](const rths::CommandLine&) {
    return rths::ProgramRun([&o](const auto& stop) { return serve(o, stop); }).quiet(o.quiet).stop_on_signals();
  });
}
