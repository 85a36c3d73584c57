#pragma once

#include <cstdint>
#include <string>

namespace rths {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// "127.0.0.1:47000", "lab.example.org:47000", "[::1]:47000". Throws std::invalid_argument with
// what was expected.
HostPort parse_host_port(const std::string& text);

// Whether host names this machine's loopback interface: 127.0.0.0/8, ::1, ::ffff:127.x.x.x or
// "localhost". Nothing is resolved (a name that merely resolves to 127.0.0.1 does not count).
bool is_loopback_host(const std::string& host);

}  // namespace rths
