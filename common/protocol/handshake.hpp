#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "common/protocol/packet_codec.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/protocol/session_keys.hpp"
#include "wire.pb.h"

namespace rths {

// The handshake of a site's link (docs/architecture.md §5, proto/wire.proto), both halves in one
// place; the nodes only move its datagrams and keep its time. The numerical node sends a hello with
// its terms and a fresh nonce, sealed under the site's handshake key, and repeats it until the site's
// welcome echoes that nonce with the site's own; both derive the session keys from the two nonces.
// The session's first frame, the start, proves the numerical node holds the key: the site adopts no
// peer before it. Nothing that does not authenticate is answered.

// The numerical node's half, for one site.
class HandshakeInitiator {
 public:
  HandshakeInitiator(const SecretKey& psk, std::uint32_t site_id, wire::SiteTerms terms);

  // The hello, sealed (the same nonce every time: a repeated hello is the same handshake).
  [[nodiscard]] std::vector<std::byte> hello(std::int64_t wall_ns, std::uint64_t sequence) const;

  enum class Answer {
    kNone,      // nothing of this handshake's: counted in counters and dropped
    kRepeated,  // the welcome to a repeated hello, after the first
    kAgreed,    // the first welcome: keys() holds the session
    kRefused,   // the site refused, or its terms differ from ours: refusal() says why
  };
  // One datagram from the site: what it was, counted in counters.
  Answer answer(std::span<const std::byte> datagram, PacketCounters& counters);

  [[nodiscard]] bool agreed() const { return agreed_; }
  [[nodiscard]] const SessionKeys& keys() const { return keys_; }
  [[nodiscard]] const std::string& refusal() const { return refusal_; }

 private:
  SecretKey psk_;
  HandshakeCodec codec_;
  std::uint32_t site_id_;
  wire::SiteTerms terms_;
  HandshakeNonce nonce_;
  bool agreed_ = false;
  SessionKeys keys_;
  std::string refusal_;
};

// The site's half: answers every authentic hello with its terms and a fresh nonce, and takes the
// session whose start authenticates under the keys of one of the hellos it answered. A replayed old
// hello takes a slot but cannot start a session (only a holder of the key who saw the site's nonce
// can); the oldest answered hello makes room for a new one.
class HandshakeResponder {
 public:
  static constexpr std::size_t kMaxPendingSessions = 16;

  HandshakeResponder(const SecretKey& psk, wire::SiteTerms mine, double rate_hz);

  struct Session {
    SessionKeys keys;
    std::uint32_t site_id = 0;
    std::int64_t start_wall_ns = 0;
    std::int64_t steps = 0;
  };
  struct Step {
    enum class Kind {
      kNone,      // not authentic, or not for now: counted and dropped, never answered
      kAnswered,  // an authentic hello: send reply to its source
      kRefused,   // an authentic hello whose terms differ: send reply (it says why), then stop
      kStarted,   // the start of an answered hello's session: session holds it
      kAborted,   // the numerical node aborted before the start: reason says why
    } kind = Kind::kNone;
    std::vector<std::byte> reply;
    std::string reason;
    bool new_hello = false;  // a hello not answered before (not a repetition)
    Session session;
  };
  // One datagram, received at now_ns (monotonic; the wall clock's wall_ns goes into a reply).
  Step receive(std::span<const std::byte> datagram, std::int64_t now_ns, std::int64_t wall_ns,
               PacketCounters& counters);

  // Forgets the answered hellos not heard for timeout_ns (a replayed hello, or a node that stopped)
  // and returns how many; still_agreeing() is whether one is still repeated.
  std::size_t forget_quiet(std::int64_t now_ns, std::int64_t timeout_ns);
  [[nodiscard]] bool still_agreeing() const { return !pending_.empty(); }
  [[nodiscard]] std::uint64_t answered() const { return answered_; }

 private:
  struct Pending {
    HandshakeNonce numerical_nonce{};
    HandshakeNonce site_nonce{};
    SessionKeys keys;
    std::uint32_t site_id = 0;
    std::int64_t last_heard_ns = 0;  // its latest hello: a genuine node repeats it until the start
  };

  Step session_frame(std::span<const std::byte> datagram, const FrameHeader& header, std::int64_t wall_ns,
                     PacketCounters& counters);

  SecretKey psk_;
  HandshakeCodec codec_;
  wire::SiteTerms mine_;
  double rate_hz_;
  std::deque<Pending> pending_;
  std::uint64_t sequence_ = 0;
  std::uint64_t answered_ = 0;
};

}  // namespace rths
