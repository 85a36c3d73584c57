#include "common/core/address.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>
#include <string_view>

#include <netdb.h>
#include <sys/socket.h>

#include <asio/ip/address.hpp>

namespace rths {

namespace {

bool is_dotted_quad(std::string_view host) {
  int parts = 0;
  while (true) {
    const std::size_t dot = host.find('.');
    const std::string_view part = host.substr(0, dot);
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || part.size() > 3 || ec != std::errc{} || ptr != part.data() + part.size() || value > 255) {
      return false;
    }
    ++parts;
    if (dot == std::string_view::npos) {
      return parts == 4;
    }
    host.remove_prefix(dot + 1);
  }
}

}  // namespace

HostPort parse_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  const auto fail = [&]() -> HostPort {
    throw std::invalid_argument("\"" + text +
                                "\" is not an address; expected host:port, e.g. 127.0.0.1:47000 or [::1]:47000");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return fail();
  }
  HostPort out;
  out.host = text.substr(0, colon);
  if (out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  } else if (out.host.find(':') != std::string::npos) {
    return fail();  // a bare IPv6 address needs brackets to tell its colons from the port's
  }
  // A host of digits and dots can only mean an IPv4 address; getaddrinfo would otherwise send
  // 256.1.1.1 to the DNS as a name, to fail later (or hang) instead of here.
  if (std::all_of(out.host.begin(), out.host.end(), [](char c) { return c == '.' || (c >= '0' && c <= '9'); }) &&
      !is_dotted_quad(out.host)) {
    throw std::invalid_argument("\"" + text + "\": " + out.host +
                                " is not an IPv4 address; expected four numbers 0..255 separated by dots");
  }
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(first, last, port);
  if (ec != std::errc{} || ptr != last || port > 65535 || out.host.empty()) {
    return fail();
  }
  out.port = static_cast<std::uint16_t>(port);
  return out;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") {
    return true;
  }
  std::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) {
    return false;
  }
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return address.is_loopback();
}

namespace {

// A host as same_endpoint compares it: a numeric address in its canonical text, a name in lower case.
std::string canonical_host(const std::string& host) {
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "localhost") return "127.0.0.1";
  std::error_code ec;
  const asio::ip::address address = asio::ip::make_address(lower, ec);
  if (ec) return lower;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_string();
  }
  return address.is_unspecified() ? std::string("*") : address.to_string();
}

}  // namespace

bool same_endpoint(const HostPort& a, const HostPort& b) {
  if (a.port != b.port) return false;
  const std::string ha = canonical_host(a.host);
  const std::string hb = canonical_host(b.host);
  return ha == hb || ha == "*" || hb == "*";
}

std::string resolve_problem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int status = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0) {
    return gai_strerror(status);
  }
  freeaddrinfo(found);
  return {};
}

}  // namespace rths
