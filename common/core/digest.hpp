#pragma once

#include <cstdint>
#include <string_view>

namespace rths {

// FNV-1a 64 (offset basis and prime from the FNV reference): stable across builds, hosts and
// standard libraries, unlike std::hash, which is what two processes comparing digests need.
constexpr std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<std::uint64_t>(static_cast<unsigned char>(c));
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace rths
