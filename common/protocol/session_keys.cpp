#include "common/protocol/session_keys.hpp"

#include <cstring>
#include <string_view>

#include <sodium.h>

namespace rths {

namespace {

// crypto_generichash keyed with key over label | site id (little-endian) | a | b.
void keyed_hash(std::span<unsigned char> out, const SecretKey& key, std::string_view label, std::uint32_t site_id,
                const HandshakeNonce& a, const HandshakeNonce& b) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, key.data(), SecretKey::kBytes, out.size());
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libsodium takes unsigned char*
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(label.data()), label.size());
  const std::array<unsigned char, 4> id{static_cast<unsigned char>(site_id), static_cast<unsigned char>(site_id >> 8U),
                                        static_cast<unsigned char>(site_id >> 16U),
                                        static_cast<unsigned char>(site_id >> 24U)};
  crypto_generichash_update(&state, id.data(), id.size());
  crypto_generichash_update(&state, a.data(), a.size());
  crypto_generichash_update(&state, b.data(), b.size());
  crypto_generichash_final(&state, out.data(), out.size());
  sodium_memzero(&state, sizeof state);
}

}  // namespace

HandshakeNonce random_nonce() {
  ensure_crypto();
  HandshakeNonce nonce{};
  randombytes_buf(nonce.data(), nonce.size());
  return nonce;
}

SessionKeys derive_session_keys(const SecretKey& psk, std::uint32_t site_id, const HandshakeNonce& numerical,
                                const HandshakeNonce& site) {
  ensure_crypto();
  std::array<unsigned char, 2 * SecretKey::kBytes> keys{};
  keyed_hash(keys, psk, "rths v2 session keys", site_id, numerical, site);
  std::array<unsigned char, sizeof(std::uint64_t)> id{};
  keyed_hash(id, psk, "rths v2 session id", site_id, numerical, site);
  SessionKeys out;
  std::memcpy(&out.session, id.data(), id.size());
  if (out.session == 0) {
    out.session = 1;  // 0 marks handshake frames; probability 2^-64
  }
  out.numerical_to_site = SecretKey(std::span<const unsigned char, SecretKey::kBytes>(keys.data(), SecretKey::kBytes));
  out.site_to_numerical =
      SecretKey(std::span<const unsigned char, SecretKey::kBytes>(keys.data() + SecretKey::kBytes, SecretKey::kBytes));
  sodium_memzero(keys.data(), keys.size());
  return out;
}

SecretKey handshake_key(const SecretKey& psk) {
  ensure_crypto();
  std::array<unsigned char, SecretKey::kBytes> key{};
  keyed_hash(key, psk, "rths v2 handshake", 0, HandshakeNonce{}, HandshakeNonce{});
  SecretKey out{std::span<const unsigned char, SecretKey::kBytes>(key)};
  sodium_memzero(key.data(), key.size());
  return out;
}

SessionKeys virtual_session_keys(std::uint64_t session, std::uint32_t site_id) {
  HandshakeNonce from_session{};
  std::memcpy(from_session.data(), &session, sizeof session);
  SessionKeys keys = derive_session_keys(insecure_key(), site_id, from_session, from_session);
  keys.session = session;
  keys.sealed = false;
  return keys;
}

}  // namespace rths
