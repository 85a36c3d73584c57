// Both halves of the handshake (common/protocol/handshake.hpp) against each other in memory: the
// keys they agree, what neither answers nor adopts, and the site's memory of answered hellos.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "common/protocol/handshake.hpp"

namespace rths::test_handshake {
namespace {

constexpr std::uint32_t kSite = 3;
constexpr double kRate = 1024.0;
constexpr std::int64_t kSecond = 1'000'000'000;

SecretKey key(unsigned char first) {
  std::array<unsigned char, SecretKey::kBytes> bytes{};
  bytes.fill(0x5a);
  bytes[0] = first;
  return SecretKey(std::span<const unsigned char, SecretKey::kBytes>(bytes));
}

wire::SiteTerms terms(double rate_hz = kRate) {
  wire::SiteTerms t;
  t.set_rate_hz(rate_hz);
  t.set_channels(1);
  t.set_site_name("damper");
  return t;
}

// The start of the session the numerical node agreed, sealed as it sends it.
std::vector<std::byte> start_frame(const SessionKeys& keys, std::int64_t start_ns) {
  PacketCodec codec(CodecRole::kNumerical, kSite, keys, kRate, 0);
  wire::Start* start = codec.start(0).mutable_start();
  start->set_start_ns(start_ns);
  start->set_steps(2048);
  const auto frame = codec.seal();
  return {frame.begin(), frame.end()};
}

using Kind = HandshakeResponder::Step::Kind;
using Answer = HandshakeInitiator::Answer;

TEST(Handshake, BothHalvesAgreeOneSessionAndTheStartOpensItAtTheSite) {
  HandshakeInitiator numerical(key(1), kSite, terms());
  HandshakeResponder site(key(1), terms(), kRate);
  PacketCounters at_site;
  PacketCounters at_numerical;
  const auto welcome = site.receive(numerical.hello(0, 1), 0, 0, at_site);
  ASSERT_EQ(welcome.kind, Kind::kAnswered);
  EXPECT_TRUE(welcome.new_hello);
  ASSERT_EQ(numerical.answer(welcome.reply, at_numerical), Answer::kAgreed);
  EXPECT_TRUE(numerical.agreed());

  const auto started = site.receive(start_frame(numerical.keys(), 42), 0, 0, at_site);
  ASSERT_EQ(started.kind, Kind::kStarted);
  EXPECT_EQ(started.session.keys.session, numerical.keys().session);
  EXPECT_EQ(started.session.site_id, kSite);
  EXPECT_EQ(started.session.start_wall_ns, 42);
  EXPECT_EQ(started.session.steps, 2048);
  EXPECT_EQ(at_site.accepted, 2U);
  EXPECT_EQ(at_site.dropped(), 0U);
  EXPECT_EQ(at_numerical.accepted, 1U);
}

TEST(Handshake, ARepeatedHelloIsTheSameHandshakeAtBothEnds) {
  HandshakeInitiator numerical(key(1), kSite, terms());
  HandshakeResponder site(key(1), terms(), kRate);
  PacketCounters counters;
  const auto first = site.receive(numerical.hello(0, 1), 0, 0, counters);
  const auto again = site.receive(numerical.hello(0, 2), 1, 0, counters);
  EXPECT_TRUE(first.new_hello);
  EXPECT_FALSE(again.new_hello);
  EXPECT_EQ(site.answered(), 1U);
  ASSERT_EQ(numerical.answer(first.reply, counters), Answer::kAgreed);
  const std::uint64_t session = numerical.keys().session;
  // The welcome to the repetition carries the same site nonce: the same keys, nothing new agreed.
  EXPECT_EQ(numerical.answer(again.reply, counters), Answer::kRepeated);
  EXPECT_EQ(numerical.keys().session, session);
}

TEST(Handshake, NothingUnderAnotherKeyIsAnsweredOrAdopted) {
  HandshakeInitiator stranger(key(2), kSite, terms());
  HandshakeResponder site(key(1), terms(), kRate);
  PacketCounters counters;
  const auto step = site.receive(stranger.hello(0, 1), 0, 0, counters);
  EXPECT_EQ(step.kind, Kind::kNone);
  EXPECT_TRUE(step.reply.empty());
  EXPECT_EQ(counters.unauthenticated, 1U);
  EXPECT_EQ(site.answered(), 0U);

  // Nor does the numerical node take a welcome sealed under another key.
  HandshakeInitiator numerical(key(1), kSite, terms());
  HandshakeResponder impostor(key(2), terms(), kRate);
  PacketCounters ignored;
  const auto welcome = impostor.receive(stranger.hello(0, 1), 0, 0, ignored);
  ASSERT_EQ(welcome.kind, Kind::kAnswered);
  EXPECT_EQ(numerical.answer(welcome.reply, counters), Answer::kNone);
  EXPECT_FALSE(numerical.agreed());
}

TEST(Handshake, AWelcomeToAnotherHelloIsStaleForThisOne) {
  // A welcome recorded from an earlier handshake (another nonce) replayed to a new one.
  HandshakeInitiator earlier(key(1), kSite, terms());
  HandshakeInitiator numerical(key(1), kSite, terms());
  HandshakeResponder site(key(1), terms(), kRate);
  PacketCounters counters;
  const auto old_welcome = site.receive(earlier.hello(0, 1), 0, 0, counters);
  PacketCounters at_numerical;
  EXPECT_EQ(numerical.answer(old_welcome.reply, at_numerical), Answer::kNone);
  EXPECT_EQ(at_numerical.stale, 1U);
  EXPECT_FALSE(numerical.agreed());
}

TEST(Handshake, TermsThatDifferAreRefusedByBothHalvesWithTheReason) {
  HandshakeInitiator numerical(key(1), kSite, terms(kRate));
  HandshakeResponder site(key(1), terms(2048.0), kRate);
  PacketCounters counters;
  const auto step = site.receive(numerical.hello(0, 1), 0, 0, counters);
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_NE(step.reason.find("rate"), std::string::npos) << step.reason;
  ASSERT_EQ(numerical.answer(step.reply, counters), Answer::kRefused);
  EXPECT_EQ(numerical.refusal(), step.reason);
  EXPECT_FALSE(numerical.agreed());
}

TEST(Handshake, AStartOfNoAnsweredHelloIsAWrongSession) {
  HandshakeInitiator numerical(key(1), kSite, terms());
  HandshakeResponder site(key(1), terms(), kRate);
  HandshakeResponder other_site(key(1), terms(), kRate);
  PacketCounters counters;
  // The numerical node agreed with another site's instance: its keys are none of this site's.
  ASSERT_EQ(numerical.answer(other_site.receive(numerical.hello(0, 1), 0, 0, counters).reply, counters),
            Answer::kAgreed);
  PacketCounters at_site;
  EXPECT_EQ(site.receive(start_frame(numerical.keys(), 0), 0, 0, at_site).kind, Kind::kNone);
  EXPECT_EQ(at_site.wrong_session, 1U);
}

TEST(Handshake, AQuietHelloIsForgottenAndItsStartThenRefused) {
  HandshakeInitiator numerical(key(1), kSite, terms());
  HandshakeResponder site(key(1), terms(), kRate);
  PacketCounters counters;
  ASSERT_EQ(numerical.answer(site.receive(numerical.hello(0, 1), 0, 0, counters).reply, counters), Answer::kAgreed);
  EXPECT_EQ(site.forget_quiet(kSecond, kSecond), 0U) << "heard exactly one timeout ago: kept";
  EXPECT_TRUE(site.still_agreeing());
  EXPECT_EQ(site.forget_quiet(kSecond + 1, kSecond), 1U);
  EXPECT_FALSE(site.still_agreeing());
  PacketCounters at_site;
  EXPECT_EQ(site.receive(start_frame(numerical.keys(), 0), 0, 0, at_site).kind, Kind::kNone);
  EXPECT_EQ(at_site.wrong_session, 1U);
}

TEST(Handshake, TheSiteRemembersItsNewestAnsweredHellosOnly) {
  HandshakeResponder site(key(1), terms(), kRate);
  std::vector<HandshakeInitiator> nodes;
  PacketCounters counters;
  for (std::size_t i = 0; i <= HandshakeResponder::kMaxPendingSessions; ++i) {
    nodes.emplace_back(key(1), kSite, terms());
    const auto step = site.receive(nodes.back().hello(0, 1), 0, 0, counters);
    ASSERT_EQ(nodes.back().answer(step.reply, counters), Answer::kAgreed);
  }
  // The oldest was pushed out by the one past the limit; the newest still starts.
  PacketCounters at_site;
  EXPECT_EQ(site.receive(start_frame(nodes.front().keys(), 0), 0, 0, at_site).kind, Kind::kNone);
  EXPECT_EQ(at_site.wrong_session, 1U);
  EXPECT_EQ(site.receive(start_frame(nodes[1].keys(), 0), 0, 0, at_site).kind, Kind::kStarted);
  EXPECT_EQ(site.receive(start_frame(nodes.back().keys(), 0), 0, 0, at_site).kind, Kind::kStarted);
}

}  // namespace
}  // namespace rths::test_handshake
