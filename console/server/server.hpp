#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/protocol/secret_key.hpp"

namespace rths::console {

// What rths-console serves and the limits that keep its Stop answering.
struct ServerOptions {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  std::string telemetry_host = "127.0.0.1";
  std::uint16_t telemetry_port = 47300;
  std::string token;                     // empty: none asked (loopback only)
  std::vector<std::string> allow_hosts;  // Host names beyond IP literals and localhost
  std::optional<SecretKey> key;          // the console's key (live mode)
  std::filesystem::path web_dir;
  std::filesystem::path replay;  // a run folder: replay instead of live

  std::size_t max_connections = 256;                // all HTTP connections; a new one evicts the oldest unread
  std::size_t max_streams = 32;                     // event streams, all clients
  std::size_t max_streams_per_client = 4;           // event streams from one address
  std::chrono::milliseconds request_timeout{5000};  // to send a request's head
  std::chrono::milliseconds write_timeout{10000};   // for a client to take a response or an event
  std::size_t max_nodes = 64;
};

// The figures rths-console prints when it ends.
struct ServerTotals {
  std::uint64_t accepted = 0;
  std::uint64_t dropped = 0;
};

// The operator's console: the telemetry hub on a UDP socket and the page's HTTP server on one
// Asio thread (no thread per connection, so open event streams or half-sent requests hold no
// worker that Stop would need). Prints "serving http://HOST:PORT/" and "telemetry on HOST:PORT"
// once both listen, then runs until stop becomes true.
ServerTotals serve_console(const ServerOptions& options, const std::atomic<bool>& stop);

}  // namespace rths::console
