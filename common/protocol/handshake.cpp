#include "common/protocol/handshake.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "common/protocol/site_terms.hpp"

namespace rths {

namespace {

bool copy_nonce(const std::string& bytes, HandshakeNonce& out) {
  if (bytes.size() != out.size()) {
    return false;
  }
  std::memcpy(out.data(), bytes.data(), out.size());
  return true;
}

}  // namespace

HandshakeInitiator::HandshakeInitiator(const SecretKey& psk, std::uint32_t site_id, wire::SiteTerms terms)
    : psk_(psk), codec_(psk), site_id_(site_id), terms_(std::move(terms)), nonce_(random_nonce()) {}

std::vector<std::byte> HandshakeInitiator::hello(std::int64_t wall_ns, std::uint64_t sequence) const {
  wire::Envelope hello;
  *hello.mutable_hello()->mutable_terms() = terms_;
  hello.mutable_hello()->set_numerical_nonce(nonce_.data(), nonce_.size());
  hello.set_sent_ns(wall_ns);
  return codec_.seal(hello, site_id_, sequence);
}

HandshakeInitiator::Answer HandshakeInitiator::answer(std::span<const std::byte> datagram, PacketCounters& counters) {
  wire::Envelope env;
  FrameHeader header;
  const DecodeStatus status = codec_.open(datagram, env, header);
  counters.count(status);
  if (status != DecodeStatus::kOk) {
    return Answer::kNone;
  }
  if (!env.has_welcome() || header.site != site_id_) {
    ++counters.unexpected;
    return Answer::kNone;
  }
  HandshakeNonce site_nonce{};
  const std::string& echoed = env.welcome().numerical_nonce();
  if (echoed.size() != nonce_.size() || std::memcmp(echoed.data(), nonce_.data(), echoed.size()) != 0 ||
      !copy_nonce(env.welcome().site_nonce(), site_nonce)) {
    ++counters.stale;  // a welcome to another hello (replayed): not this handshake's
    return Answer::kNone;
  }
  ++counters.accepted;
  if (agreed_) {
    return Answer::kRepeated;
  }
  refusal_ = env.welcome().refusal();
  if (refusal_.empty()) {
    refusal_ = terms_mismatch(terms_, env.welcome().terms());
  }
  if (!refusal_.empty()) {
    return Answer::kRefused;
  }
  keys_ = derive_session_keys(psk_, site_id_, nonce_, site_nonce);
  agreed_ = true;
  return Answer::kAgreed;
}

HandshakeResponder::HandshakeResponder(const SecretKey& psk, wire::SiteTerms mine, double rate_hz)
    : psk_(psk), codec_(psk), mine_(std::move(mine)), rate_hz_(rate_hz) {}

HandshakeResponder::Step HandshakeResponder::receive(std::span<const std::byte> datagram, std::int64_t now_ns,
                                                     std::int64_t wall_ns, PacketCounters& counters) {
  const std::optional<FrameHeader> header = read_frame_header(datagram);
  if (header && header->version == kProtocolVersion && header->kind == FrameKind::kSession) {
    return session_frame(datagram, *header, wall_ns, counters);
  }
  Step step;
  wire::Envelope env;
  FrameHeader frame;
  const DecodeStatus status = codec_.open(datagram, env, frame);
  counters.count(status);
  if (status != DecodeStatus::kOk) {
    return step;  // unauthenticated: no answer at all, so nothing about the site is disclosed
  }
  HandshakeNonce numerical_nonce{};
  if (!env.has_hello() || !copy_nonce(env.hello().numerical_nonce(), numerical_nonce)) {
    ++counters.unexpected;
    return step;
  }
  ++counters.accepted;
  auto p = std::find_if(pending_.begin(), pending_.end(),
                        [&](const Pending& s) { return s.numerical_nonce == numerical_nonce; });
  if (p == pending_.end()) {
    // A new hello (the numerical node repeats its hello until answered: same nonce, same session).
    Pending fresh;
    fresh.numerical_nonce = numerical_nonce;
    fresh.site_nonce = random_nonce();
    fresh.site_id = frame.site;
    fresh.keys = derive_session_keys(psk_, frame.site, fresh.numerical_nonce, fresh.site_nonce);
    pending_.push_front(std::move(fresh));
    if (pending_.size() > kMaxPendingSessions) {
      pending_.pop_back();
    }
    p = pending_.begin();
    ++answered_;
    step.new_hello = true;
  }
  p->last_heard_ns = now_ns;
  wire::Envelope reply;
  wire::Welcome* welcome = reply.mutable_welcome();
  *welcome->mutable_terms() = mine_;
  step.reason = terms_mismatch(env.hello().terms(), mine_);
  welcome->set_refusal(step.reason);
  welcome->set_numerical_nonce(env.hello().numerical_nonce());
  welcome->set_site_nonce(p->site_nonce.data(), p->site_nonce.size());
  reply.set_sent_ns(wall_ns);
  step.reply = codec_.seal(reply, frame.site, ++sequence_);
  step.kind = step.reason.empty() ? Step::Kind::kAnswered : Step::Kind::kRefused;
  return step;
}

HandshakeResponder::Step HandshakeResponder::session_frame(std::span<const std::byte> datagram,
                                                           const FrameHeader& header, std::int64_t wall_ns,
                                                           PacketCounters& counters) {
  Step step;
  const auto p = std::find_if(pending_.begin(), pending_.end(),
                              [&](const Pending& s) { return s.keys.session == header.session; });
  if (p == pending_.end()) {
    counters.count(DecodeStatus::kWrongSession);
    return step;
  }
  const auto codec = std::make_unique<PacketCodec>(CodecRole::kSite, p->site_id, p->keys, rate_hz_, wall_ns);
  const DecodeStatus status = codec->open(datagram, wall_ns);
  counters.count(status);
  if (status != DecodeStatus::kOk) {
    return step;
  }
  ++counters.accepted;
  const wire::Envelope& env = codec->received();
  if (env.has_start()) {
    step.kind = Step::Kind::kStarted;
    step.session = {p->keys, p->site_id, env.start().start_ns(), static_cast<std::int64_t>(env.start().steps())};
  } else if (env.has_abort()) {
    step.kind = Step::Kind::kAborted;
    step.reason = env.abort().reason();
  }
  return step;
}

std::size_t HandshakeResponder::forget_quiet(std::int64_t now_ns, std::int64_t timeout_ns) {
  const auto quiet = [&](const Pending& p) { return now_ns - p.last_heard_ns > timeout_ns; };
  const auto kept = std::remove_if(pending_.begin(), pending_.end(), quiet);
  const auto forgotten = static_cast<std::size_t>(pending_.end() - kept);
  pending_.erase(kept, pending_.end());
  return forgotten;
}

}  // namespace rths
