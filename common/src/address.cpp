#include "rths/common/address.hpp"

#include <charconv>
#include <stdexcept>

#include <asio/ip/address.hpp>

namespace rths {

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

}  // namespace rths
