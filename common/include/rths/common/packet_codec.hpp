#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <google/protobuf/arena.h>

#include "rths/common/link.hpp"
#include "wire.pb.h"

namespace rths {

constexpr std::uint32_t kProtocolVersion = 1;

// Why a received datagram was not used (DESIGN §5: dropped and counted, never fatal).
enum class DecodeStatus { kOk, kUndecodable, kWrongVersion, kWrongSession, kWrongSite };

struct PacketCounters {
  std::uint64_t received = 0;
  std::uint64_t accepted = 0;
  std::uint64_t undecodable = 0;
  std::uint64_t wrong_version = 0;
  std::uint64_t wrong_session = 0;
  std::uint64_t wrong_site = 0;
  std::uint64_t stale = 0;       // older than one already used
  std::uint64_t duplicate = 0;   // same sequence as one already used
  std::uint64_t unexpected = 0;  // a body this node does not take in this state
  std::uint64_t non_finite = 0;  // a command or feedback carrying a value that is not a finite number

  void count(DecodeStatus status);
  [[nodiscard]] std::uint64_t dropped() const {
    return undecodable + wrong_version + wrong_session + wrong_site + stale + duplicate + unexpected + non_finite;
  }
};

class JsonWriter;
// The counters as a JSON object, for the run summaries.
void write_packet_counters(JsonWriter& json, const PacketCounters& counters);

// Encodes and decodes envelopes for one session and site without touching the heap in steady
// state: messages live on an arena whose first block is a member buffer, reset for every packet.
class PacketCodec {
 public:
  PacketCodec(std::uint64_t session, std::uint32_t site);

  // A cleared envelope with version, session and site filled in, to be completed and encoded.
  wire::Envelope& start(std::uint64_t sequence, std::int64_t sent_ns);
  // Serialises the envelope from start(); the span stays valid until the next encode().
  std::span<const std::byte> encode();

  // Parses a datagram into the receive envelope and checks version, session and site.
  DecodeStatus decode(std::span<const std::byte> datagram);
  [[nodiscard]] const wire::Envelope& received() const { return *in_; }

 private:
  std::uint64_t session_;
  std::uint32_t site_;
  alignas(16) std::array<std::byte, 16384> out_block_{};
  alignas(16) std::array<std::byte, 16384> in_block_{};
  google::protobuf::Arena out_arena_;
  google::protobuf::Arena in_arena_;
  wire::Envelope* out_ = nullptr;
  wire::Envelope* in_ = nullptr;
  std::array<std::byte, kMaxDatagramBytes> out_bytes_{};
};

}  // namespace rths
