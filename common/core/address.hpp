#pragma once

#include <cstdint>
#include <string>

namespace rths {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// "127.0.0.1:47000", "lab.example.org:47000", "[::1]:47000". Throws std::invalid_argument with
// what was expected: a port outside 0..65535, a missing host or port, a host of digits and dots that
// is not a dotted-quad IPv4 address (256.1.1.1, 10.1.1). Port 0 is accepted (a listener's "any
// free port"); a peer's address must not have it (config validation says so). Names are not
// resolved here.
HostPort parse_host_port(const std::string& text);

// Whether host names this machine's loopback interface: 127.0.0.0/8, ::1, ::ffff:127.x.x.x or
// "localhost". Nothing is resolved (a name that merely resolves to 127.0.0.1 does not count).
bool is_loopback_host(const std::string& host);

// Whether datagrams to `a` could reach a socket at `b`, without asking the resolver: the same port,
// and the same host (names compared without case, "localhost" as 127.0.0.1, an IPv4-mapped IPv6
// address as its IPv4 one) or a wildcard host (0.0.0.0, ::) at either end.
bool same_endpoint(const HostPort& a, const HostPort& b);

// "" when `host` (a name or a numeric address) resolves to an address on this machine, else the
// resolver's reason. May ask the DNS: call it before a run starts, never inside one.
std::string resolve_problem(const std::string& host);

}  // namespace rths
