#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <google/protobuf/arena.h>

#include "common/protocol/session_keys.hpp"
#include "common/transport/link.hpp"
#include "wire.pb.h"

namespace rths {

// Version 2: authenticated frames (proto/wire.proto describes the layout).
constexpr std::uint8_t kProtocolVersion = 2;

enum class FrameKind : std::uint8_t { kHandshake = 1, kSession = 2 };

// The clear header of every frame; authenticated with the body, so nothing in it can be altered.
struct FrameHeader {
  static constexpr std::size_t kBytes = 24;
  std::uint8_t version = kProtocolVersion;
  FrameKind kind = FrameKind::kSession;
  std::uint32_t site = 0;
  std::uint64_t session = 0;
  std::uint64_t sequence = 0;
};

constexpr std::size_t kTagBytes = 16;
constexpr std::size_t kHandshakeNonceBytes = 24;

// The header of a datagram, or nothing when it is too short or lacks the magic. Only the version is
// meaningful before authentication: the rest is whatever the sender wrote.
std::optional<FrameHeader> read_frame_header(std::span<const std::byte> datagram);

// Why a received datagram was or was not used (docs/architecture.md §5: dropped and counted, never fatal). Only
// kOk is a sign of life (a new authentic packet of this session); kStale and kDuplicate are
// authentic but not new, and their envelope is readable (a late stop is still a stop).
enum class DecodeStatus {
  kOk,               // authentic, newer than every packet before it
  kStale,            // authentic, older than one already taken (reordered or replayed)
  kDuplicate,        // authentic, the same sequence as the newest taken (duplicated or replayed)
  kTooFarAhead,      // authentic, but a sequence the peer cannot have reached yet: refused, not adopted
  kUnauthenticated,  // the tag does not match: forged, corrupted, or another key
  kUndecodable,      // too short, no magic, or an authentic body that does not parse
  kWrongVersion,
  kWrongSession,
  kWrongSite,
  kHandshake,  // a handshake frame after the session started (a late copy of a hello or welcome)
};
const char* to_string(DecodeStatus status) noexcept;

struct PacketCounters {
  std::uint64_t received = 0;
  std::uint64_t accepted = 0;  // new authentic packets (signs of life) that were used
  std::uint64_t undecodable = 0;
  std::uint64_t wrong_version = 0;
  std::uint64_t wrong_session = 0;
  std::uint64_t wrong_site = 0;
  std::uint64_t unauthenticated = 0;
  std::uint64_t too_far_ahead = 0;
  std::uint64_t stale = 0;           // authentic, older than one already used
  std::uint64_t duplicate = 0;       // authentic, same sequence as one already used
  std::uint64_t late_handshake = 0;  // handshake frames after the start
  std::uint64_t unexpected = 0;      // new and authentic, but a body this node does not take now

  // Counts the datagram in received and, unless kOk, in its drop counter (kOk is counted in
  // accepted or unexpected by the node, which knows what the body meant).
  void count(DecodeStatus status);
  [[nodiscard]] std::uint64_t dropped() const {
    return undecodable + wrong_version + wrong_session + wrong_site + unauthenticated + too_far_ahead + stale +
           duplicate + late_handshake + unexpected;
  }
};

// Which end of a site's link a codec serves: it seals with its own direction's key and opens with
// the other's.
enum class CodecRole { kNumerical, kSite };

// Seals and opens the session frames of one site at one end, without touching the heap in steady
// state: messages live on an arena whose first block is a member buffer, reset for every packet.
// The codec owns the sequence numbers it sends (strictly increasing, so no nonce is used twice
// under a key) and the window of those it receives: newest wins, an old or repeated sequence is
// reported as such, and a sequence beyond what the peer can have sent since its last packet
// (max_packets_per_s, twice over, plus a slack) is refused rather than adopted.
class PacketCodec {
 public:
  PacketCodec(CodecRole role, std::uint32_t site, const SessionKeys& keys, double max_packets_per_s,
              std::int64_t epoch_ns);

  // A cleared envelope with sent_ns filled in, for the next sequence number; complete it, then seal().
  wire::Envelope& start(std::int64_t sent_ns);
  // Serialises and seals the envelope from start(); the span stays valid until the next seal().
  // Empty when the envelope does not fit in a datagram.
  std::span<const std::byte> seal();

  // Authenticates and parses a datagram received at now_ns (the receiving node's clock).
  DecodeStatus open(std::span<const std::byte> datagram, std::int64_t now_ns);
  // The envelope of the last open() that returned kOk, kStale or kDuplicate.
  [[nodiscard]] const wire::Envelope& received() const { return *in_; }
  [[nodiscard]] std::uint64_t received_sequence() const { return received_sequence_; }
  [[nodiscard]] std::uint64_t newest_sequence() const { return newest_sequence_; }
  [[nodiscard]] std::uint64_t sent_sequence() const { return sequence_; }
  [[nodiscard]] std::uint64_t session() const { return session_; }
  // Whether frames are encrypted and authenticated (every codec but virtual time's).
  [[nodiscard]] bool sealed() const { return sealed_; }

 private:
  std::uint32_t site_;
  std::uint64_t session_;
  bool sealed_;
  SecretKey seal_key_;
  SecretKey open_key_;
  double max_packets_per_s_;
  std::uint64_t sequence_ = 0;
  std::uint64_t newest_sequence_ = 0;
  std::int64_t newest_ns_;
  std::uint64_t received_sequence_ = 0;
  alignas(16) std::array<std::byte, 16384> out_block_{};
  alignas(16) std::array<std::byte, 16384> in_block_{};
  google::protobuf::Arena out_arena_;
  google::protobuf::Arena in_arena_;
  wire::Envelope* out_ = nullptr;
  wire::Envelope* in_ = nullptr;
  std::array<std::byte, kMaxDatagramBytes> plain_{};
  std::array<std::byte, kMaxDatagramBytes> frame_{};
};

// Seals and opens hellos and welcomes under the handshake key (session_keys.hpp) with a random
// nonce per frame. Used before the session exists, so it may allocate.
class HandshakeCodec {
 public:
  explicit HandshakeCodec(const SecretKey& psk);

  [[nodiscard]] std::vector<std::byte> seal(const wire::Envelope& envelope, std::uint32_t site,
                                            std::uint64_t sequence) const;
  // kOk with the envelope in out and the header in header; otherwise why not (a session frame is
  // kWrongSession here: it belongs to a session this codec does not know).
  DecodeStatus open(std::span<const std::byte> datagram, wire::Envelope& out, FrameHeader& header) const;

 private:
  SecretKey key_;
};

}  // namespace rths
