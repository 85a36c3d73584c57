// The UDP bridge's round trip on loopback: one exchange() (pack, sendto, spin on recv until the
// echo) against a target thread that answers each datagram as soon as it sees it. This is the
// driver's and the kernel's share of a step; a real target (or rths-target) adds the wait for its
// next tick, up to one tick. Reported: wall time per exchange, and the driver's own round-trip
// percentiles (results::UdpBridgePlant).
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <string>
#include <thread>

#include <google/protobuf/text_format.h>

#include <asio/io_context.hpp>

#include "common/transport/udp_link.hpp"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/drivers/udp_bridge.hpp"
#include "support/bridge_layouts.hpp"

namespace {

const char* const kLayout = rths::test::kOneChannelBridgeLayout;

// Answers every datagram at once with its counter echoed, spinning on its socket.
class EchoTarget {
 public:
  explicit EchoTarget(const rths::config::UdpBridge& layout)
      : link_(io_, "127.0.0.1", 0), command_(layout.command(), 1), reply_(layout.reply(), 1) {
    thread_ = std::thread([this] { run(); });
  }
  EchoTarget(const EchoTarget&) = delete;
  EchoTarget& operator=(const EchoTarget&) = delete;
  EchoTarget(EchoTarget&&) = delete;
  EchoTarget& operator=(EchoTarget&&) = delete;
  ~EchoTarget() {
    stop_.store(true);
    thread_.join();
  }
  [[nodiscard]] std::uint16_t port() const { return link_.local_port(); }

 private:
  void run() {
    std::array<std::byte, rths::kMaxDatagramBytes> in{};
    std::array<std::byte, rths::kMaxDatagramBytes> out{};
    rths::BridgeChannel channel;
    while (!stop_.load(std::memory_order_relaxed)) {
      const std::size_t n = link_.receive(in);
      if (n == 0) continue;
      link_.adopt_last_source();
      rths::BridgeFrame frame{0, false, std::span(&channel, 1)};
      command_.unpack(std::span<const std::byte>(in.data(), n), frame);
      channel.displacement_m = channel.command_m;
      channel.applied_m = channel.command_m;  // taken, as a target that obeys the site answers
      frame.applied_counter = frame.counter;
      const std::span<std::byte> datagram(out.data(), reply_.bytes());
      reply_.pack(frame, datagram);
      link_.send(datagram);
    }
  }

  asio::io_context io_;
  rths::UdpLink link_;
  rths::BridgeLayout command_;
  rths::BridgeLayout reply_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void BM_BridgeExchangeLoopback(benchmark::State& state) {
  rths::config::UdpBridge bridge;
  google::protobuf::TextFormat::ParseFromString(kLayout, &bridge);
  const EchoTarget target(bridge);
  bridge.set_target("127.0.0.1:" + std::to_string(target.port()));
  bridge.set_bind("127.0.0.1:0");
  bridge.set_reply_timeout_s(0.0005);
  bridge.set_max_missed_replies(1000000);
  rths::config::Site site;
  site.add_channel();
  const auto driver = rths::make_udp_bridge(bridge, site, 1024);
  std::array<rths::Measurement, 1> measured{};
  driver->open(measured);
  std::array<rths::InterfaceMotion, 1> commands{};
  std::uint64_t failed = 0;
  for (auto _ : state) {
    commands[0].displacement_m += 1e-6;
    failed += driver->exchange(commands, measured, 1.0 / 1024) ? 0 : 1;
  }
  rths::results::PlantReport report;
  driver->report(0, report);
  const auto& r = report.udp_bridge();
  state.counters["p50_us"] = r.round_trip_p50_us();
  state.counters["p99_us"] = r.round_trip_p99_us();
  state.counters["max_us"] = r.round_trip_max_us();
  state.counters["missed"] = static_cast<double>(r.missed());
  state.counters["late"] = static_cast<double>(r.late());
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_BridgeExchangeLoopback)->UseRealTime()->Iterations(20000);

}  // namespace

BENCHMARK_MAIN();
