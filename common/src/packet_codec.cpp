#include "rths/common/packet_codec.hpp"

#include "rths/common/json_writer.hpp"

namespace rths {

namespace {
google::protobuf::ArenaOptions block_options(std::span<std::byte> block) {
  google::protobuf::ArenaOptions options;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the arena API takes char*
  options.initial_block = reinterpret_cast<char*>(block.data());
  options.initial_block_size = block.size();
  return options;
}
}  // namespace

void write_packet_counters(JsonWriter& json, const PacketCounters& counters) {
  json.begin_object()
      .field("received", counters.received)
      .field("accepted", counters.accepted)
      .field("undecodable", counters.undecodable)
      .field("wrong_version", counters.wrong_version)
      .field("wrong_session", counters.wrong_session)
      .field("wrong_site", counters.wrong_site)
      .field("stale", counters.stale)
      .field("duplicate", counters.duplicate)
      .field("unexpected", counters.unexpected)
      .field("non_finite", counters.non_finite)
      .end_object();
}

void PacketCounters::count(DecodeStatus status) {
  ++received;
  switch (status) {
    case DecodeStatus::kOk:
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
  }
}

PacketCodec::PacketCodec(std::uint64_t session, std::uint32_t site)
    : session_(session),
      site_(site),
      out_arena_(block_options(out_block_)),
      in_arena_(block_options(in_block_)),
      out_(google::protobuf::Arena::CreateMessage<wire::Envelope>(&out_arena_)),
      in_(google::protobuf::Arena::CreateMessage<wire::Envelope>(&in_arena_)) {}

wire::Envelope& PacketCodec::start(std::uint64_t sequence, std::int64_t sent_ns) {
  // Resetting the arena reclaims the previous packet's sub-messages without freeing memory.
  out_arena_.Reset();
  out_ = google::protobuf::Arena::CreateMessage<wire::Envelope>(&out_arena_);
  out_->set_version(kProtocolVersion);
  out_->set_session(session_);
  out_->set_site(site_);
  out_->set_sequence(sequence);
  out_->set_sent_ns(sent_ns);
  return *out_;
}

std::span<const std::byte> PacketCodec::encode() {
  const auto size = out_->ByteSizeLong();
  if (size > out_bytes_.size()) {
    return {};
  }
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): protobuf writes uint8_t, the buffer is std::byte
  out_->SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(out_bytes_.data()));
  return {out_bytes_.data(), size};
}

DecodeStatus PacketCodec::decode(std::span<const std::byte> datagram) {
  in_arena_.Reset();
  in_ = google::protobuf::Arena::CreateMessage<wire::Envelope>(&in_arena_);
  if (!in_->ParseFromArray(datagram.data(), static_cast<int>(datagram.size()))) {
    return DecodeStatus::kUndecodable;
  }
  if (in_->version() != kProtocolVersion) {
    return DecodeStatus::kWrongVersion;
  }
  if (in_->session() != session_) {
    return DecodeStatus::kWrongSession;
  }
  if (in_->site() != site_) {
    return DecodeStatus::kWrongSite;
  }
  return DecodeStatus::kOk;
}

}  // namespace rths
