#pragma once

#include <array>
#include <cstdint>

#include "common/protocol/secret_key.hpp"

namespace rths {

// 32 random bytes each end contributes to a handshake (Hello.numerical_nonce, Welcome.site_nonce).
using HandshakeNonce = std::array<unsigned char, 32>;

HandshakeNonce random_nonce();

// What a handshake agrees: a random session id and one key per direction. Both ends derive the
// same values from the pre-shared key and the two fresh nonces, so nobody without the key can
// compute them, and no earlier session's packets open in this one.
struct SessionKeys {
  std::uint64_t session = 0;  // never 0 (0 marks handshake frames)
  SecretKey numerical_to_site;
  SecretKey site_to_numerical;
  // False only in virtual time (virtual_session_keys): both ends live in one process and no frame
  // leaves it, so frames go unencrypted with a zero tag. Every key a handshake derives seals.
  bool sealed = true;
};

// Keyed BLAKE2b (libsodium crypto_generichash, RFC 7693) of a label, the site id and both nonces.
SessionKeys derive_session_keys(const SecretKey& psk, std::uint32_t site_id, const HandshakeNonce& numerical,
                                const HandshakeNonce& site);

// The key that seals hellos and welcomes: keyed BLAKE2b of a label, so the pre-shared key itself
// never seals a packet.
SecretKey handshake_key(const SecretKey& psk);

// Keys of a virtual-time run: there is no handshake (both ends live in one process), so they are
// derived from the insecure key and the session id, and marked unsealed: sealing and opening were
// about half of a virtual-time step (docs/performance.md) and protect nothing that stays in memory.
// A real-time run replaces them with a handshake's keys before its first step, and checks it did.
SessionKeys virtual_session_keys(std::uint64_t session, std::uint32_t site_id);

}  // namespace rths
