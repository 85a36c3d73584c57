#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "experiment.pb.h"

namespace rths {

// A site's pre-shared key: 32 random bytes that the numerical node and the site both hold, from
// which each handshake derives fresh session keys (session_keys.hpp). Zeroed when destroyed.
class SecretKey {
 public:
  static constexpr std::size_t kBytes = 32;

  SecretKey() = default;
  explicit SecretKey(std::span<const unsigned char, kBytes> bytes);
  SecretKey(const SecretKey&) = default;
  SecretKey& operator=(const SecretKey&) = default;
  SecretKey(SecretKey&&) = default;
  SecretKey& operator=(SecretKey&&) = default;
  ~SecretKey();

  [[nodiscard]] const unsigned char* data() const { return bytes_.data(); }

 private:
  std::array<unsigned char, kBytes> bytes_{};
};

// Reads a key file written by write_key_file(): '#' comment lines and one line of 64 hex digits.
// Refuses (ConfigError naming the file and what to do) a file that is missing, not a regular file,
// readable or writable by group or others, malformed, or all zeros.
SecretKey load_key_file(const std::filesystem::path& path);

// Writes a new random key to path with mode 0600; never overwrites an existing file (ConfigError).
void write_key_file(const std::filesystem::path& path);

// The key of an experiment marked `insecure`: fixed and public, so the packets still carry a tag
// (corruption is caught, the code path is the one of a keyed test) but anyone can forge them.
SecretKey insecure_key();

// The pre-shared key a real-time test uses for a site: its key_file (relative to base_dir), or the
// insecure key when the experiment is marked realtime.insecure and local_or_peer_host (the site's
// --listen host at the site, its address at the numerical node) is a loopback address. Throws
// ConfigError naming the field otherwise (source: the config file, for the message).
struct SiteKey {
  SecretKey key;
  bool insecure = false;
};
SiteKey site_key(const config::Experiment& experiment, const config::Site& site, const std::filesystem::path& base_dir,
                 const std::string& source, const std::string& local_or_peer_host);

// libsodium's one-time initialisation; every function here calls it. Throws if it fails.
void ensure_crypto();

}  // namespace rths
