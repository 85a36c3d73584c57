// What authentication costs per packet: sealing and opening a site's command and feedback
// (ChaCha20-Poly1305 under the session keys) against serialising and parsing the same envelope in
// clear, the path before packets were authenticated; and rejecting a forged datagram, the cost of
// each hostile packet an attacker on the path makes a node look at.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "common/protocol/packet_codec.hpp"
#include "common/protocol/session_keys.hpp"

namespace {

using rths::CodecRole;
using rths::PacketCodec;

constexpr double kRate = 1024.0;

struct Ends {
  // Sealing, as a handshake's keys: what crosses a socket (virtual time's keys leave frames clear).
  rths::SessionKeys keys = [] {
    rths::SessionKeys k = rths::virtual_session_keys(1, 1);
    k.sealed = true;
    return k;
  }();
  PacketCodec numerical{CodecRole::kNumerical, 1, keys, kRate, 0};
  PacketCodec site{CodecRole::kSite, 1, keys, kRate, 0};
};

// A command of `channels` channels (displacement, velocity, acceleration each).
void fill_command(rths::wire::Envelope& env, int channels, std::uint64_t step) {
  auto* cmd = env.mutable_command();
  cmd->set_step(step);
  for (int c = 0; c < channels; ++c) {
    cmd->add_displacement_m(0.0123 + c);
    cmd->add_velocity_m_per_s(-0.25);
    cmd->add_acceleration_m_per_s2(1.5);
  }
}

void SealAndOpenCommand(benchmark::State& state) {
  auto ends = std::make_unique<Ends>();
  std::uint64_t step = 0;
  for (auto _ : state) {
    auto& env = ends->numerical.start(123456789);
    fill_command(env, static_cast<int>(state.range(0)), ++step);
    const auto frame = ends->numerical.seal();
    benchmark::DoNotOptimize(ends->site.open(frame, 0));
  }
  state.SetLabel("one datagram: seal at one end, open at the other");
}
BENCHMARK(SealAndOpenCommand)->Arg(1)->Arg(2)->Arg(8);

// The same envelope serialised and parsed in clear (no header, no tag): what the authentication
// adds is the difference.
void SerialiseAndParseInClear(benchmark::State& state) {
  auto ends = std::make_unique<Ends>();
  rths::wire::Envelope in;
  std::vector<std::uint8_t> bytes(rths::kMaxDatagramBytes);
  std::uint64_t step = 0;
  for (auto _ : state) {
    auto& env = ends->numerical.start(123456789);
    fill_command(env, static_cast<int>(state.range(0)), ++step);
    const auto size = env.ByteSizeLong();
    env.SerializeWithCachedSizesToArray(bytes.data());
    benchmark::DoNotOptimize(in.ParseFromArray(bytes.data(), static_cast<int>(size)));
  }
}
BENCHMARK(SerialiseAndParseInClear)->Arg(1)->Arg(2)->Arg(8);

// A datagram with this session's header and a wrong tag: the tag is checked, nothing is parsed.
void RejectForged(benchmark::State& state) {
  auto ends = std::make_unique<Ends>();
  auto& env = ends->numerical.start(1);
  fill_command(env, 1, 1);
  const auto sealed = ends->numerical.seal();
  std::vector<std::byte> forged(sealed.begin(), sealed.end());
  forged.back() ^= std::byte{1};
  for (auto _ : state) {
    benchmark::DoNotOptimize(ends->site.open(forged, 0));
  }
}
BENCHMARK(RejectForged);

}  // namespace

BENCHMARK_MAIN();
