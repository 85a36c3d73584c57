// Authenticated frames: what a forged, corrupted, replayed or misdirected datagram does to a codec
// (nothing), the replay window's rules one at a time, the handshake's key derivation and key files.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "common/config/config.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/protocol/session_keys.hpp"
#include "support/alloc_counter.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_packet_codec {
namespace {

constexpr double kRate = 1024.0;
constexpr std::uint32_t kSite = 3;

SessionKeys keys_for(std::uint8_t seed) {
  HandshakeNonce a{};
  HandshakeNonce b{};
  a.fill(seed);
  b.fill(static_cast<std::uint8_t>(seed + 1));
  return derive_session_keys(insecure_key(), kSite, a, b);
}

// A sealed command of the numerical node with the given target.
std::vector<std::byte> command(PacketCodec& tx, double target_m, std::int64_t sent_ns = 1) {
  wire::Envelope& env = tx.start(sent_ns);
  env.mutable_command()->set_step(7);
  env.mutable_command()->add_displacement_m(target_m);
  env.mutable_command()->add_velocity_m_per_s(0.25);
  const auto bytes = tx.seal();
  return {bytes.begin(), bytes.end()};
}

struct Ends {
  SessionKeys keys = keys_for(1);
  PacketCodec numerical{CodecRole::kNumerical, kSite, keys, kRate, 0};
  PacketCodec site{CodecRole::kSite, kSite, keys, kRate, 0};
};

TEST(PacketCodec, SealedCommandOpensAtTheOtherEndWithEveryField) {
  auto ends = std::make_unique<Ends>();
  const auto frame = command(ends->numerical, 0.0123, 123456789);
  ASSERT_EQ(ends->site.open(frame, 0), DecodeStatus::kOk);
  const wire::Envelope& env = ends->site.received();
  EXPECT_EQ(ends->site.received_sequence(), 1U);
  EXPECT_EQ(env.sent_ns(), 123456789);
  ASSERT_TRUE(env.has_command());
  EXPECT_EQ(env.command().step(), 7U);
  EXPECT_EQ(env.command().displacement_m(0), 0.0123);
  // Header (24) + body + tag (16): the frame stays far below one datagram.
  EXPECT_EQ(frame.size(), FrameHeader::kBytes + env.ByteSizeLong() + kTagBytes);
  // The body is encrypted: the target's bytes do not appear in clear.
  const double target = 0.0123;
  std::array<std::byte, sizeof target> raw{};
  std::memcpy(raw.data(), &target, sizeof target);
  EXPECT_EQ(std::search(frame.begin(), frame.end(), raw.begin(), raw.end()), frame.end());
}

TEST(PacketCodec, EverySingleBitFlipIsRejectedAndLeavesTheWindowAlone) {
  auto ends = std::make_unique<Ends>();
  const auto first = command(ends->numerical, 0.001);
  ASSERT_EQ(ends->site.open(first, 0), DecodeStatus::kOk);
  const auto frame = command(ends->numerical, 0.002);
  for (std::size_t bit = 0; bit < 8 * frame.size(); ++bit) {
    auto flipped = frame;
    flipped[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
    const DecodeStatus status = ends->site.open(flipped, 0);
    ASSERT_NE(status, DecodeStatus::kOk) << "bit " << bit;
    ASSERT_NE(status, DecodeStatus::kStale) << "bit " << bit;
    ASSERT_NE(status, DecodeStatus::kDuplicate) << "bit " << bit;
  }
  EXPECT_EQ(ends->site.newest_sequence(), 1U);
  // The genuine frame is still taken after all of them.
  EXPECT_EQ(ends->site.open(frame, 0), DecodeStatus::kOk);
}

TEST(PacketCodec, EveryTruncationIsRejected) {
  auto ends = std::make_unique<Ends>();
  const auto frame = command(ends->numerical, 0.001);
  for (std::size_t n = 0; n < frame.size(); ++n) {
    const DecodeStatus status = ends->site.open(std::span(frame.data(), n), 0);
    ASSERT_TRUE(status == DecodeStatus::kUndecodable || status == DecodeStatus::kUnauthenticated) << n;
  }
  EXPECT_EQ(ends->site.newest_sequence(), 0U);
}

TEST(PacketCodec, ForgedHeaderWithAHugeSequenceIsNotAdopted) {
  // The attack that took a site over: the right session and site, sequence 2^63, any body.
  auto ends = std::make_unique<Ends>();
  ASSERT_EQ(ends->site.open(command(ends->numerical, 0.001), 0), DecodeStatus::kOk);
  auto forged = command(ends->numerical, 0.5);
  const std::uint64_t huge = 1ULL << 63U;
  for (std::size_t i = 0; i < 8; ++i) forged[16 + i] = static_cast<std::byte>(huge >> (8 * i));
  EXPECT_EQ(ends->site.open(forged, 0), DecodeStatus::kUnauthenticated);
  EXPECT_EQ(ends->site.newest_sequence(), 1U);
  // Every genuine command after it is still new.
  ASSERT_EQ(ends->site.open(command(ends->numerical, 0.003), 0), DecodeStatus::kOk);
  EXPECT_EQ(ends->site.received().command().displacement_m(0), 0.003);
}

TEST(PacketCodec, NewestWinsOlderIsStaleRepeatedIsDuplicate) {
  auto ends = std::make_unique<Ends>();
  const auto one = command(ends->numerical, 0.001);
  const auto two = command(ends->numerical, 0.002);
  ASSERT_EQ(ends->site.open(two, 0), DecodeStatus::kOk);
  EXPECT_EQ(ends->site.open(one, 0), DecodeStatus::kStale);
  EXPECT_EQ(ends->site.open(two, 0), DecodeStatus::kDuplicate);
  EXPECT_EQ(ends->site.newest_sequence(), 2U);
  // A stale packet is still readable (a late stop must be honoured), but it moved nothing.
  EXPECT_EQ(ends->site.received().command().displacement_m(0), 0.002);
}

TEST(PacketCodec, AuthenticSequenceBeyondWhatThePeerCanHaveSentIsRefused) {
  // Only a bug or a leaked key can do this; the bound grows with the time since the newest packet:
  // 256 + 2 x 1024 per second.
  auto ends = std::make_unique<Ends>();
  std::vector<std::byte> frame;
  for (int i = 0; i < 300; ++i) frame = command(ends->numerical, 0.001);
  EXPECT_EQ(ends->site.open(frame, 0), DecodeStatus::kTooFarAhead);
  EXPECT_EQ(ends->site.newest_sequence(), 0U);
  // 22 ms later 256 + 45 = 301 sequences are reachable.
  EXPECT_EQ(ends->site.open(frame, 22'000'000), DecodeStatus::kOk);
}

TEST(PacketCodec, OtherKeysOtherSessionOtherSiteOtherDirectionAreRejected) {
  auto ends = std::make_unique<Ends>();
  const auto frame = command(ends->numerical, 0.001);
  // The same session id and site, keys of another handshake: the tag does not match.
  SessionKeys other = keys_for(9);
  other.session = ends->keys.session;
  PacketCodec stranger(CodecRole::kSite, kSite, other, kRate, 0);
  EXPECT_EQ(stranger.open(frame, 0), DecodeStatus::kUnauthenticated);
  PacketCodec other_session(CodecRole::kSite, kSite, keys_for(9), kRate, 0);
  EXPECT_EQ(other_session.open(frame, 0), DecodeStatus::kWrongSession);
  PacketCodec other_site(CodecRole::kSite, kSite + 1, ends->keys, kRate, 0);
  EXPECT_EQ(other_site.open(frame, 0), DecodeStatus::kWrongSite);
  // Reflected back to its sender (or to another numerical node of the session): the direction's
  // key differs.
  PacketCodec numerical_again(CodecRole::kNumerical, kSite, ends->keys, kRate, 0);
  EXPECT_EQ(numerical_again.open(frame, 0), DecodeStatus::kUnauthenticated);
  auto other_version = frame;
  other_version[2] = std::byte{kProtocolVersion + 1};
  EXPECT_EQ(ends->site.open(other_version, 0), DecodeStatus::kWrongVersion);
}

TEST(PacketCodec, VirtualTimeFramesAreClearAndNeverMixWithSealedOnes) {
  // Virtual time: both ends in one process, frames in clear with a zero tag.
  const SessionKeys in_memory = virtual_session_keys(42, kSite);
  ASSERT_FALSE(in_memory.sealed);
  PacketCodec numerical(CodecRole::kNumerical, kSite, in_memory, kRate, 0);
  PacketCodec site(CodecRole::kSite, kSite, in_memory, kRate, 0);
  EXPECT_FALSE(numerical.sealed());
  const auto frame = command(numerical, 0.0123);
  ASSERT_EQ(site.open(frame, 0), DecodeStatus::kOk);
  EXPECT_EQ(site.received().command().displacement_m(0), 0.0123);
  const double target = 0.0123;
  std::array<std::byte, sizeof target> raw{};
  std::memcpy(raw.data(), &target, sizeof target);
  EXPECT_NE(std::search(frame.begin(), frame.end(), raw.begin(), raw.end()), frame.end());
  // Every handshake's keys seal; the same keys sealed and in clear never open each other's frames.
  EXPECT_TRUE(keys_for(1).sealed);
  SessionKeys sealing = in_memory;
  sealing.sealed = true;
  PacketCodec sealed_numerical(CodecRole::kNumerical, kSite, sealing, kRate, 0);
  PacketCodec sealed_site(CodecRole::kSite, kSite, sealing, kRate, 0);
  EXPECT_EQ(site.open(command(sealed_numerical, 0.5), 0), DecodeStatus::kUnauthenticated);
  EXPECT_EQ(sealed_site.open(command(numerical, 0.5), 0), DecodeStatus::kUnauthenticated);
  // A clear frame with a flipped tag bit is not one of this process's frames either.
  auto flipped = command(numerical, 0.25);
  flipped.back() ^= std::byte{1};
  EXPECT_EQ(site.open(flipped, 0), DecodeStatus::kUnauthenticated);
}

TEST(PacketCodec, GarbageNeverOpens) {
  auto ends = std::make_unique<Ends>();
  std::mt19937_64 rng(5);
  std::vector<std::byte> garbage;
  for (int i = 0; i < 20000; ++i) {
    garbage.resize(rng() % kMaxDatagramBytes);
    for (auto& b : garbage) b = static_cast<std::byte>(rng());
    if (garbage.size() >= 4 && i % 2 == 0) {
      // Half of them with a valid-looking header of this session.
      garbage[0] = std::byte{'r'};
      garbage[1] = std::byte{'t'};
      garbage[2] = std::byte{kProtocolVersion};
      garbage[3] = std::byte{2};
      if (garbage.size() >= 16) {
        std::uint32_t site = kSite;
        std::memcpy(garbage.data() + 4, &site, 4);
        std::memcpy(garbage.data() + 8, &ends->keys.session, 8);
      }
    }
    ASSERT_NE(ends->site.open(garbage, 0), DecodeStatus::kOk);
  }
  EXPECT_EQ(ends->site.newest_sequence(), 0U);
}

TEST(PacketCodec, TextThatIsNotUtf8TravelsAsBytesWithoutAWordFromProtobuf) {
  // proto3 strings are checked for UTF-8 on parsing, and libprotobuf logs an ERROR line from inside
  // the step loop when one is not; the wire's text fields are bytes instead.
  auto ends = std::make_unique<Ends>();
  const std::string reason = "interlock \xff\xfe tripped";
  ends->numerical.start(1).mutable_abort()->set_reason(reason);
  const auto frame = ends->numerical.seal();
  ::testing::internal::CaptureStderr();
  const DecodeStatus status = ends->site.open(frame, 0);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(status, DecodeStatus::kOk);
  EXPECT_EQ(ends->site.received().abort().reason(), reason);
  EXPECT_EQ(printed, "");
}

TEST(PacketCodec, SealAndOpenDoNotAllocateInSteadyState) {
  auto ends = std::make_unique<Ends>();
  for (int i = 0; i < 10; ++i) {
    auto& env = ends->numerical.start(1);
    env.mutable_command()->add_displacement_m(0.001);
    ASSERT_EQ(ends->site.open(ends->numerical.seal(), 0), DecodeStatus::kOk);
  }
  const std::uint64_t before = test::allocations();
  for (int i = 0; i < 1000; ++i) {
    auto& env = ends->numerical.start(1);
    env.mutable_command()->set_step(static_cast<std::uint64_t>(i));
    env.mutable_command()->add_displacement_m(0.001);
    env.mutable_command()->add_velocity_m_per_s(0.01);
    const auto frame = ends->numerical.seal();
    ASSERT_EQ(ends->site.open(frame, 0), DecodeStatus::kOk);
  }
  EXPECT_EQ(test::allocations(), before);
}

TEST(HandshakeCodec, OpensOnlyWithTheSameKeyAndKeepsFramesApart) {
  HandshakeCodec ours(insecure_key());
  wire::Envelope hello;
  hello.mutable_hello()->set_numerical_nonce(std::string(32, 'n'));
  const auto frame = ours.seal(hello, kSite, 5);
  wire::Envelope out;
  FrameHeader header;
  ASSERT_EQ(ours.open(frame, out, header), DecodeStatus::kOk);
  EXPECT_EQ(out.hello().numerical_nonce(), std::string(32, 'n'));
  EXPECT_EQ(header.site, kSite);
  EXPECT_EQ(header.kind, FrameKind::kHandshake);
  // Two seals of the same hello differ (random nonce): nothing repeats on the wire.
  EXPECT_NE(ours.seal(hello, kSite, 5), frame);

  const std::array<unsigned char, SecretKey::kBytes> other_bytes{1, 2, 3};
  const HandshakeCodec theirs(SecretKey{std::span<const unsigned char, SecretKey::kBytes>(other_bytes)});
  EXPECT_EQ(theirs.open(frame, out, header), DecodeStatus::kUnauthenticated);
  for (std::size_t bit = 0; bit < 8 * frame.size(); bit += 7) {
    auto flipped = frame;
    flipped[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
    ASSERT_NE(ours.open(flipped, out, header), DecodeStatus::kOk) << bit;
  }
  // A handshake frame is not session traffic, and session traffic is not a handshake.
  auto ends = std::make_unique<Ends>();
  EXPECT_EQ(ends->site.open(frame, 0), DecodeStatus::kHandshake);
  EXPECT_EQ(ours.open(command(ends->numerical, 0.0), out, header), DecodeStatus::kWrongSession);
}

TEST(SessionKeys, BothEndsDeriveTheSameFreshKeysAndId) {
  const SecretKey psk = insecure_key();
  const HandshakeNonce n = random_nonce();
  const HandshakeNonce s = random_nonce();
  const SessionKeys a = derive_session_keys(psk, kSite, n, s);
  const SessionKeys b = derive_session_keys(psk, kSite, n, s);
  EXPECT_EQ(a.session, b.session);
  EXPECT_NE(a.session, 0U);
  EXPECT_EQ(std::memcmp(a.numerical_to_site.data(), b.numerical_to_site.data(), SecretKey::kBytes), 0);
  // The two directions differ, and another nonce gives another session.
  EXPECT_NE(std::memcmp(a.numerical_to_site.data(), a.site_to_numerical.data(), SecretKey::kBytes), 0);
  const SessionKeys c = derive_session_keys(psk, kSite, n, random_nonce());
  EXPECT_NE(a.session, c.session);
  EXPECT_NE(std::memcmp(a.numerical_to_site.data(), c.numerical_to_site.data(), SecretKey::kBytes), 0);
  // The site id is bound in.
  EXPECT_NE(derive_session_keys(psk, kSite + 1, n, s).session, a.session);
}

class KeyFile : public test::RunFolderTest {};

TEST_F(KeyFile, WrittenWithMode0600ReadBackAndNeverOverwritten) {
  const auto path = dir_ / "site.key";
  write_key_file(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777U, 0600U);
  const SecretKey a = load_key_file(path);
  const SecretKey b = load_key_file(path);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), SecretKey::kBytes), 0);
  EXPECT_THROW(write_key_file(path), ConfigError);
  write_key_file(dir_ / "other.key");
  EXPECT_NE(std::memcmp(a.data(), load_key_file(dir_ / "other.key").data(), SecretKey::kBytes), 0);
}

std::string load_error(const std::filesystem::path& path) {
  try {
    (void)load_key_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST_F(KeyFile, RefusesReadableByOthersMalformedZeroAndMissing) {
  const auto path = dir_ / "site.key";
  write_key_file(path);
  std::filesystem::permissions(path, std::filesystem::perms::group_read, std::filesystem::perm_options::add);
  EXPECT_NE(load_error(path).find("chmod 600"), std::string::npos) << load_error(path);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(load_error(path), "accepted");

  const auto write = [&](const std::string& name, const std::string& text) {
    auto p = dir_ / name;
    std::ofstream(p) << text;
    std::filesystem::permissions(p, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return p;
  };
  EXPECT_NE(load_error(write("short.key", "abcd\n")).find("64 hex digits"), std::string::npos);
  EXPECT_NE(load_error(write("nothex.key", std::string(64, 'g') + "\n")).find("64 hex digits"), std::string::npos);
  EXPECT_NE(load_error(write("zero.key", std::string(64, '0') + "\n")).find("all zeros"), std::string::npos);
  EXPECT_NE(load_error(write("two.key", std::string(64, 'a') + "\n" + std::string(64, 'b') + "\n")).find("more than"),
            std::string::npos);
  EXPECT_EQ(load_error(write("comment.key", "# a comment\n" + std::string(64, 'a') + "\n")), "accepted");
  EXPECT_NE(load_error(dir_ / "missing.key").find("keygen"), std::string::npos);
  EXPECT_NE(load_error(dir_).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace rths::test_packet_codec
