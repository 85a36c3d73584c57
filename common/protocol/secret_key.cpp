#include "common/protocol/secret_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <sodium.h>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/core/input_file.hpp"

namespace rths {

namespace {
constexpr const char* kKeyFileHeader =
    "# rths pre-shared site key. Keep it secret: mode 0600, the same file at the numerical node and the site.\n";
}  // namespace

void ensure_crypto() {
  static const bool ready = sodium_init() >= 0;
  if (!ready) {
    throw std::runtime_error("libsodium could not initialise (no entropy source?)");
  }
}

SecretKey::SecretKey(std::span<const unsigned char, kBytes> bytes) {
  std::memcpy(bytes_.data(), bytes.data(), kBytes);
}

SecretKey::~SecretKey() {
  sodium_memzero(bytes_.data(), bytes_.size());
}

SecretKey load_key_file(const std::filesystem::path& path) {
  ensure_crypto();
  const std::string name = path.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ConfigError(
        fmt::format("key file {}: {} (make one with: rths-numerical keygen {})", name, std::strerror(errno), name));
  }
  if (!S_ISREG(st.st_mode)) {
    throw ConfigError(fmt::format("key file {}: not a regular file", name));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw ConfigError(fmt::format("key file {}: mode {:04o} lets group or others read or write it; chmod 600 {}", name,
                                  st.st_mode & 07777U, name));
  }
  (void)check_input_file(path);  // and at most kMaxInputFileBytes, each line bounded below
  std::ifstream in(path);
  std::string hex;
  std::size_t number = 0;
  for (std::string line; read_input_line(in, line, path, ++number);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') {
      continue;
    }
    if (!hex.empty()) {
      throw ConfigError(fmt::format("key file {}: more than one key line", name));
    }
    hex = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
  }
  std::array<unsigned char, SecretKey::kBytes> bytes{};
  std::size_t length = 0;
  if (hex.size() != 2 * SecretKey::kBytes ||
      sodium_hex2bin(bytes.data(), bytes.size(), hex.data(), hex.size(), nullptr, &length, nullptr) != 0 ||
      length != SecretKey::kBytes) {
    throw ConfigError(fmt::format("key file {}: expected one line of {} hex digits (rths-numerical keygen writes one)",
                                  name, 2 * SecretKey::kBytes));
  }
  if (sodium_is_zero(bytes.data(), bytes.size()) != 0) {
    throw ConfigError(fmt::format("key file {}: the key is all zeros", name));
  }
  SecretKey key{std::span<const unsigned char, SecretKey::kBytes>(bytes)};
  sodium_memzero(bytes.data(), bytes.size());
  sodium_memzero(hex.data(), hex.size());
  return key;
}

void write_key_file(const std::filesystem::path& path) {
  ensure_crypto();
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw ConfigError(fmt::format("cannot create key file {}: {}", name, std::strerror(errno)));
  }
  std::array<unsigned char, SecretKey::kBytes> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  std::array<char, 2 * SecretKey::kBytes + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), bytes.data(), bytes.size());
  const std::string text = std::string(kKeyFileHeader) + hex.data() + "\n";
  sodium_memzero(bytes.data(), bytes.size());
  sodium_memzero(hex.data(), hex.size());
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(path.c_str());
    throw ConfigError(fmt::format("cannot write key file {}", name));
  }
}

SecretKey insecure_key() {
  ensure_crypto();
  // Derived from a public text, so that it is obviously nobody's secret.
  static constexpr std::string_view kLabel = "rths insecure experiment: anyone can forge these packets";
  std::array<unsigned char, SecretKey::kBytes> bytes{};
  crypto_generichash(bytes.data(), bytes.size(), reinterpret_cast<const unsigned char*>(kLabel.data()),  // NOLINT
                     kLabel.size(), nullptr, 0);
  return SecretKey{std::span<const unsigned char, SecretKey::kBytes>(bytes)};
}

SiteKey site_key(const config::Experiment& experiment, const config::Site& site, const std::filesystem::path& base_dir,
                 const std::string& source, const std::string& local_or_peer_host) {
  int index = 0;
  while (index < experiment.site_size() && experiment.site(index).name() != site.name()) {
    ++index;
  }
  if (site.has_key_file()) {
    const std::filesystem::path path = base_dir / site.key_file();
    try {
      return {load_key_file(path), false};
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: site[{}].key_file: {}", source, index, e.what()));
    }
  }
  if (!experiment.realtime().insecure()) {
    throw ConfigError(
        fmt::format("{}: site[{}].key_file: missing; a real-time test authenticates every packet with the site's "
                    "pre-shared key (make one with `rths-numerical keygen FILE` and give both ends the file), or set "
                    "realtime.insecure: true for a test on this machine only",
                    source, index));
  }
  if (!is_loopback_host(local_or_peer_host)) {
    throw ConfigError(
        fmt::format("{}: realtime.insecure: only for a test on this machine, but site \"{}\" is at {}, "
                    "not a loopback address; give the site a key_file",
                    source, site.name(), local_or_peer_host));
  }
  return {insecure_key(), true};
}

}  // namespace rths
