#include "common/protocol/packet_codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <sodium.h>

namespace rths {

namespace {

constexpr std::array<std::byte, 2> kMagic{std::byte{'r'}, std::byte{'t'}};
// Sequence numbers a peer may advance beyond the time-based bound (start copies, bursts).
constexpr double kSequenceSlack = 256.0;

static_assert(crypto_aead_chacha20poly1305_IETF_ABYTES == kTagBytes);
static_assert(crypto_aead_xchacha20poly1305_IETF_ABYTES == kTagBytes);
static_assert(crypto_aead_xchacha20poly1305_IETF_NPUBBYTES == kHandshakeNonceBytes);
static_assert(crypto_aead_chacha20poly1305_IETF_KEYBYTES == SecretKey::kBytes);

google::protobuf::ArenaOptions block_options(std::span<std::byte> block) {
  google::protobuf::ArenaOptions options;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the arena API takes char*
  options.initial_block = reinterpret_cast<char*>(block.data());
  options.initial_block_size = block.size();
  return options;
}

// NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): libsodium and protobuf take unsigned char*
unsigned char* uc(std::byte* p) {
  return reinterpret_cast<unsigned char*>(p);
}
const unsigned char* uc(const std::byte* p) {
  return reinterpret_cast<const unsigned char*>(p);
}
// NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)

template <typename T>
void put_le(std::byte* out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<std::byte>(static_cast<std::uint64_t>(value) >> (8U * i));
  }
}

template <typename T>
T get_le(const std::byte* in) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(in[i]) << (8U * i);
  }
  return static_cast<T>(v);
}

void write_header(std::byte* out, const FrameHeader& h) {
  out[0] = kMagic[0];
  out[1] = kMagic[1];
  out[2] = static_cast<std::byte>(h.version);
  out[3] = static_cast<std::byte>(h.kind);
  put_le(out + 4, h.site);
  put_le(out + 8, h.session);
  put_le(out + 16, h.sequence);
}

// Session frames: the 96-bit IETF nonce is the sender's sequence number. Each direction has its
// own key and each sender's sequence strictly increases, so no (key, nonce) pair repeats.
std::array<unsigned char, crypto_aead_chacha20poly1305_IETF_NPUBBYTES> session_nonce(std::uint64_t sequence) {
  std::array<unsigned char, crypto_aead_chacha20poly1305_IETF_NPUBBYTES> nonce{};
  for (std::size_t i = 0; i < sizeof sequence; ++i) {
    nonce[i] = static_cast<unsigned char>(sequence >> (8U * i));
  }
  return nonce;
}

}  // namespace

const char* to_string(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::kOk:
      return "accepted";
    case DecodeStatus::kStale:
      return "stale";
    case DecodeStatus::kDuplicate:
      return "duplicate";
    case DecodeStatus::kTooFarAhead:
      return "too far ahead";
    case DecodeStatus::kUnauthenticated:
      return "unauthenticated";
    case DecodeStatus::kUndecodable:
      return "undecodable";
    case DecodeStatus::kWrongVersion:
      return "wrong version";
    case DecodeStatus::kWrongSession:
      return "wrong session";
    case DecodeStatus::kWrongSite:
      return "wrong site";
    case DecodeStatus::kHandshake:
      return "late handshake";
  }
  return "?";
}

std::optional<FrameHeader> read_frame_header(std::span<const std::byte> datagram) {
  if (datagram.size() < FrameHeader::kBytes || datagram[0] != kMagic[0] || datagram[1] != kMagic[1]) {
    return std::nullopt;
  }
  FrameHeader h;
  h.version = static_cast<std::uint8_t>(datagram[2]);
  h.kind = static_cast<FrameKind>(datagram[3]);
  h.site = get_le<std::uint32_t>(datagram.data() + 4);
  h.session = get_le<std::uint64_t>(datagram.data() + 8);
  h.sequence = get_le<std::uint64_t>(datagram.data() + 16);
  return h;
}

void PacketCounters::count(DecodeStatus status) {
  ++received;
  switch (status) {
    case DecodeStatus::kOk:
      break;
    case DecodeStatus::kStale:
      ++stale;
      break;
    case DecodeStatus::kDuplicate:
      ++duplicate;
      break;
    case DecodeStatus::kTooFarAhead:
      ++too_far_ahead;
      break;
    case DecodeStatus::kUnauthenticated:
      ++unauthenticated;
      break;
    case DecodeStatus::kUndecodable:
      ++undecodable;
      break;
    case DecodeStatus::kWrongVersion:
      ++wrong_version;
      break;
    case DecodeStatus::kWrongSession:
      ++wrong_session;
      break;
    case DecodeStatus::kWrongSite:
      ++wrong_site;
      break;
    case DecodeStatus::kHandshake:
      ++late_handshake;
      break;
  }
}

PacketCodec::PacketCodec(CodecRole role, std::uint32_t site, const SessionKeys& keys, double max_packets_per_s,
                         std::int64_t epoch_ns)
    : site_(site),
      session_(keys.session),
      sealed_(keys.sealed),
      seal_key_(role == CodecRole::kNumerical ? keys.numerical_to_site : keys.site_to_numerical),
      open_key_(role == CodecRole::kNumerical ? keys.site_to_numerical : keys.numerical_to_site),
      max_packets_per_s_(max_packets_per_s),
      newest_ns_(epoch_ns),
      out_arena_(block_options(out_block_)),
      in_arena_(block_options(in_block_)),
      out_(google::protobuf::Arena::CreateMessage<wire::Envelope>(&out_arena_)),
      in_(google::protobuf::Arena::CreateMessage<wire::Envelope>(&in_arena_)) {
  ensure_crypto();
}

wire::Envelope& PacketCodec::start(std::int64_t sent_ns) {
  // Resetting the arena reclaims the previous packet's sub-messages without freeing memory.
  out_arena_.Reset();
  out_ = google::protobuf::Arena::CreateMessage<wire::Envelope>(&out_arena_);
  out_->set_sent_ns(sent_ns);
  return *out_;
}

std::span<const std::byte> PacketCodec::seal() {
  const std::size_t body = out_->ByteSizeLong();
  if (FrameHeader::kBytes + body + kTagBytes > frame_.size()) {
    return {};
  }
  FrameHeader h;
  h.kind = FrameKind::kSession;
  h.site = site_;
  h.session = session_;
  h.sequence = ++sequence_;
  write_header(frame_.data(), h);
  if (!sealed_) {
    out_->SerializeWithCachedSizesToArray(uc(frame_.data() + FrameHeader::kBytes));
    std::memset(frame_.data() + FrameHeader::kBytes + body, 0, kTagBytes);
    return {frame_.data(), FrameHeader::kBytes + body + kTagBytes};
  }
  out_->SerializeWithCachedSizesToArray(uc(plain_.data()));
  const auto nonce = session_nonce(h.sequence);
  unsigned long long tag_length = 0;  // NOLINT(google-runtime-int): libsodium's type
  crypto_aead_chacha20poly1305_ietf_encrypt_detached(
      uc(frame_.data() + FrameHeader::kBytes), uc(frame_.data() + FrameHeader::kBytes + body), &tag_length,
      uc(plain_.data()), body, uc(frame_.data()), FrameHeader::kBytes, nullptr, nonce.data(), seal_key_.data());
  return {frame_.data(), FrameHeader::kBytes + body + kTagBytes};
}

DecodeStatus PacketCodec::open(std::span<const std::byte> datagram, std::int64_t now_ns) {
  const std::optional<FrameHeader> h = read_frame_header(datagram);
  if (!h || datagram.size() < FrameHeader::kBytes + kTagBytes) {
    return DecodeStatus::kUndecodable;
  }
  if (h->version != kProtocolVersion) {
    return DecodeStatus::kWrongVersion;
  }
  if (h->kind == FrameKind::kHandshake) {
    return DecodeStatus::kHandshake;
  }
  if (h->kind != FrameKind::kSession) {
    return DecodeStatus::kUndecodable;
  }
  if (h->site != site_) {
    return DecodeStatus::kWrongSite;
  }
  if (h->session != session_) {
    return DecodeStatus::kWrongSession;
  }
  const std::size_t body = datagram.size() - FrameHeader::kBytes - kTagBytes;
  const std::byte* plain = datagram.data() + FrameHeader::kBytes;
  if (sealed_) {
    const auto nonce = session_nonce(h->sequence);
    if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
            uc(plain_.data()), nullptr, uc(datagram.data() + FrameHeader::kBytes), body,
            uc(datagram.data() + FrameHeader::kBytes + body), uc(datagram.data()), FrameHeader::kBytes, nonce.data(),
            open_key_.data()) != 0) {
      return DecodeStatus::kUnauthenticated;
    }
    plain = plain_.data();
  } else if (std::any_of(datagram.begin() + static_cast<std::ptrdiff_t>(FrameHeader::kBytes + body), datagram.end(),
                         [](std::byte b) { return b != std::byte{0}; })) {
    return DecodeStatus::kUnauthenticated;  // a sealed frame: never opened as clear
  }
  in_arena_.Reset();
  in_ = google::protobuf::Arena::CreateMessage<wire::Envelope>(&in_arena_);
  if (!in_->ParseFromArray(plain, static_cast<int>(body))) {
    return DecodeStatus::kUndecodable;
  }
  received_sequence_ = h->sequence;
  if (h->sequence == newest_sequence_) {
    return DecodeStatus::kDuplicate;
  }
  if (h->sequence < newest_sequence_) {
    return DecodeStatus::kStale;
  }
  // Authentic, so only a bug or a leaked key can put it here; adopting it would make every later
  // genuine packet look stale. The bound grows with the time since the newest packet.
  const double elapsed_s = std::max(0.0, static_cast<double>(now_ns - newest_ns_) * 1e-9);
  const double reachable = kSequenceSlack + 2.0 * max_packets_per_s_ * elapsed_s;
  if (static_cast<double>(h->sequence - newest_sequence_) > reachable) {
    return DecodeStatus::kTooFarAhead;
  }
  newest_sequence_ = h->sequence;
  newest_ns_ = now_ns;
  return DecodeStatus::kOk;
}

HandshakeCodec::HandshakeCodec(const SecretKey& psk) : key_(handshake_key(psk)) {}

std::vector<std::byte> HandshakeCodec::seal(const wire::Envelope& envelope, std::uint32_t site,
                                            std::uint64_t sequence) const {
  const std::string body = envelope.SerializeAsString();
  std::vector<std::byte> frame(FrameHeader::kBytes + kHandshakeNonceBytes + body.size() + kTagBytes);
  FrameHeader h;
  h.kind = FrameKind::kHandshake;
  h.site = site;
  h.session = 0;
  h.sequence = sequence;
  write_header(frame.data(), h);
  std::byte* nonce = frame.data() + FrameHeader::kBytes;
  randombytes_buf(nonce, kHandshakeNonceBytes);
  std::byte* cipher = nonce + kHandshakeNonceBytes;
  unsigned long long tag_length = 0;  // NOLINT(google-runtime-int): libsodium's type
  // The header and the nonce are the associated data: authenticated, sent in clear.
  crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
      uc(cipher), uc(cipher + body.size()), &tag_length,
      reinterpret_cast<const unsigned char*>(body.data()),  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
      body.size(), uc(frame.data()), FrameHeader::kBytes + kHandshakeNonceBytes, nullptr, uc(nonce), key_.data());
  return frame;
}

DecodeStatus HandshakeCodec::open(std::span<const std::byte> datagram, wire::Envelope& out, FrameHeader& header) const {
  const std::optional<FrameHeader> h = read_frame_header(datagram);
  if (!h) {
    return DecodeStatus::kUndecodable;
  }
  if (h->version != kProtocolVersion) {
    return DecodeStatus::kWrongVersion;
  }
  if (h->kind != FrameKind::kHandshake) {
    return DecodeStatus::kWrongSession;
  }
  constexpr std::size_t kOverhead = FrameHeader::kBytes + kHandshakeNonceBytes + kTagBytes;
  if (datagram.size() < kOverhead) {
    return DecodeStatus::kUndecodable;
  }
  const std::size_t body = datagram.size() - kOverhead;
  const std::byte* nonce = datagram.data() + FrameHeader::kBytes;
  const std::byte* cipher = nonce + kHandshakeNonceBytes;
  std::vector<unsigned char> plain(body);
  if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
          plain.data(), nullptr, uc(cipher), body, uc(cipher + body), uc(datagram.data()),
          FrameHeader::kBytes + kHandshakeNonceBytes, uc(nonce), key_.data()) != 0) {
    return DecodeStatus::kUnauthenticated;
  }
  if (!out.ParseFromArray(plain.data(), static_cast<int>(body))) {
    return DecodeStatus::kUndecodable;
  }
  header = *h;
  return DecodeStatus::kOk;
}

}  // namespace rths
