#pragma once

// An on-path attacker for tests: a UDP forwarder between the numerical node and a site (the
// numerical node is pointed at it instead of the site) that passes every genuine datagram on and,
// from the same addresses the genuine traffic uses, injects hostile ones at both ends: the
// strongest network adversary short of holding the key. It can also cut the link for a while.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include <asio/io_context.hpp>

#include "common/protocol/packet_codec.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/transport/udp_link.hpp"

namespace rths::test {

enum class Hostile : int {
  kGarbage,          // random bytes of random length
  kTruncated,        // a genuine datagram cut short
  kBitFlipped,       // a genuine datagram with one to three bits flipped
  kReplayed,         // an earlier genuine datagram of the same direction, again
  kWrongSession,     // a well-formed header of another session, random body and tag
  kHugeSequence,     // this session's header with sequence 2^63 + r, random body and tag
  kUnauthenticated,  // this session's header with the next plausible sequence, a genuine body, a wrong tag
  kCount
};

constexpr std::array<const char*, static_cast<int>(Hostile::kCount)> kHostileNames{
    "garbage", "truncated", "bit-flipped", "replayed", "wrong session", "huge sequence", "unauthenticated"};

class HostileTap {
 public:
  struct Options {
    std::uint64_t hostile_per_direction = 0;  // injected into each direction from step 0 on
    double inject_over_s = 10.0;              // spread evenly over this long
    double outage_after_s = -1.0;             // cut both directions this long after step 0 ...
    double outage_s = 0.0;                    // ... for this long (datagrams dropped)
    std::uint64_t seed = 1;
  };

  HostileTap(const std::string& site_host, std::uint16_t site_port, Options options)
      : options_(options), to_numerical_(io_, "127.0.0.1", 0), to_site_(io_, "127.0.0.1", 0), rng_(options.seed) {
    to_site_.set_peer(site_host, site_port);
    to_site_.lock_peer(true);
    thread_ = std::thread([this] { loop(); });
  }
  HostileTap(const HostileTap&) = delete;
  HostileTap& operator=(const HostileTap&) = delete;
  HostileTap(HostileTap&&) = delete;
  HostileTap& operator=(HostileTap&&) = delete;
  ~HostileTap() { stop(); }

  void stop() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(to_numerical_.local_port()); }

  // Per direction (0: toward the site, 1: toward the numerical node). Read after stop().
  std::array<std::uint64_t, 2> genuine{};
  std::array<std::uint64_t, 2> dropped_in_outage{};
  std::array<std::array<std::uint64_t, static_cast<int>(Hostile::kCount)>, 2> injected{};
  [[nodiscard]] std::uint64_t injected_total(int direction) const {
    std::uint64_t n = 0;
    for (const auto c : injected[static_cast<std::size_t>(direction)]) n += c;
    return n;
  }

 private:
  void loop() {
    // The tap stands for the network: it must not be the slowest part of the test. With SCHED_FIFO
    // above the nodes' 80 (when the process may have it) a loaded machine cannot starve it.
    const sched_param param{85};
    (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
    std::array<std::byte, kMaxDatagramBytes> buffer{};
    std::int64_t session_start = -1;
    std::uint64_t due = 0;
    while (!done_.load()) {
      bool any = false;
      for (int d = 0; d < 2; ++d) {
        UdpLink& in = d == 0 ? to_numerical_ : to_site_;
        UdpLink& out = d == 0 ? to_site_ : to_numerical_;
        while (const std::size_t n = in.receive(buffer)) {
          any = true;
          if (d == 0 && !to_numerical_.has_peer()) to_numerical_.adopt_last_source();
          const std::span<const std::byte> datagram(buffer.data(), n);
          const auto header = read_frame_header(datagram);
          if (header && header->kind == FrameKind::kSession && d == 1 && session_start < 0) {
            session_start = monotonic_ns();  // the site's first feedback: step 0 of the test
          }
          const double since = session_start < 0 ? -1.0 : 1e-9 * static_cast<double>(monotonic_ns() - session_start);
          if (options_.outage_after_s >= 0 && since >= options_.outage_after_s &&
              since < options_.outage_after_s + options_.outage_s) {
            ++dropped_in_outage[static_cast<std::size_t>(d)];
            continue;
          }
          out.send(datagram);
          ++genuine[static_cast<std::size_t>(d)];
          if (header && header->kind == FrameKind::kSession) {
            auto& seen = seen_[static_cast<std::size_t>(d)];
            seen.emplace_back(datagram.begin(), datagram.end());
            if (seen.size() > 2048) seen.pop_front();
            newest_[static_cast<std::size_t>(d)] = std::max(newest_[static_cast<std::size_t>(d)], header->sequence);
          }
        }
      }
      if (session_start >= 0 && options_.hostile_per_direction > 0) {
        // Spread evenly: by now this many of each direction's hostile datagrams are due.
        const double since = 1e-9 * static_cast<double>(monotonic_ns() - session_start);
        const auto should = static_cast<std::uint64_t>(std::min(1.0, since / options_.inject_over_s) *
                                                       static_cast<double>(options_.hostile_per_direction));
        for (; due < should; ++due) {
          for (int d = 0; d < 2; ++d)
            inject(d, static_cast<Hostile>(due % static_cast<std::uint64_t>(Hostile::kCount)));
        }
      }
      if (!any) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void inject(int d, Hostile kind) {
    auto& seen = seen_[static_cast<std::size_t>(d)];
    if (seen.empty()) return;
    std::vector<std::byte> x = seen[rng_() % seen.size()];
    const auto put_le = [&](std::size_t at, std::uint64_t v, std::size_t bytes) {
      for (std::size_t i = 0; i < bytes; ++i) x[at + i] = static_cast<std::byte>(v >> (8 * i));
    };
    const auto randomise = [&](std::size_t from) {
      for (std::size_t i = from; i < x.size(); ++i) x[i] = static_cast<std::byte>(rng_());
    };
    switch (kind) {
      case Hostile::kGarbage:
        x.resize(rng_() % kMaxDatagramBytes + 1);
        randomise(0);
        break;
      case Hostile::kTruncated:
        x.resize(rng_() % x.size());
        if (x.empty()) x.push_back(std::byte{'r'});
        break;
      case Hostile::kBitFlipped: {
        const int flips = 1 + static_cast<int>(rng_() % 3);
        for (int i = 0; i < flips; ++i) {
          const std::size_t bit = rng_() % (8 * x.size());
          x[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
        }
        break;
      }
      case Hostile::kReplayed:
        break;  // as it was
      case Hostile::kWrongSession:
        put_le(8, rng_() | 1U, 8);
        randomise(FrameHeader::kBytes);
        break;
      case Hostile::kHugeSequence:
        put_le(16, (1ULL << 63U) + (rng_() % 1000), 8);
        randomise(FrameHeader::kBytes);
        break;
      case Hostile::kUnauthenticated:
        put_le(16, newest_[static_cast<std::size_t>(d)] + 1, 8);
        for (std::size_t i = x.size() - kTagBytes; i < x.size(); ++i) x[i] = static_cast<std::byte>(rng_());
        break;
      case Hostile::kCount:
        return;
    }
    (d == 0 ? to_site_ : to_numerical_).send(x);
    ++injected[static_cast<std::size_t>(d)][static_cast<std::size_t>(kind)];
  }

  Options options_;
  asio::io_context io_;
  UdpLink to_numerical_;
  UdpLink to_site_;
  std::mt19937_64 rng_;
  std::array<std::deque<std::vector<std::byte>>, 2> seen_;
  std::array<std::uint64_t, 2> newest_{};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace rths::test
