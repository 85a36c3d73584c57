#pragma once

// Text datagrams for the UDP socket tests (UdpLink, UdpHub): a string's bytes to send, the bytes
// received as a string, and the clock the kernel stamps arrivals with.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <span>
#include <string>

#include "common/transport/link.hpp"

namespace rths::test {

using Datagram = std::array<std::byte, kMaxDatagramBytes>;

inline std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

inline std::string string_of(const Datagram& buffer, std::size_t size) {
  std::string s(size, '\0');
  std::memcpy(s.data(), buffer.data(), size);
  return s;
}

// CLOCK_REALTIME in ns: what SO_TIMESTAMPNS stamps a datagram's arrival with.
inline std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace rths::test
