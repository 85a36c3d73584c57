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

}  // namespace rths
