#include "node_physical/drivers/udp_bridge.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <asio/io_context.hpp>

#include "common/config/setup_checks.hpp"
#include "common/core/address.hpp"
#include "common/core/component_registry.hpp"
#include "common/realtime/latency_histogram.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/transport/link.hpp"
#include "common/transport/udp_link.hpp"
#include "node_physical/drivers/bridge_layout.hpp"

namespace rths {
namespace {

// open() repeats its probe this often: a target that starts after the site still answers one, and
// a lost probe costs 10 ms, not the whole open_timeout_s.
constexpr std::int64_t kProbeIntervalNs = 10'000'000;
// open() sleeps this long between looks at the socket (off the step loop, so sleeping is fine).
constexpr auto kOpenPoll = std::chrono::microseconds(100);
// Stale datagrams a step still reads once its deadline has passed, looking for its own reply.
constexpr int kMaxReadsPastDeadline = 64;
// Bits 16-31 of status(c) carry the low 16 bits of the target's own status word.
constexpr int kTargetStatusShift = 16;
constexpr std::uint32_t kDriverBits = (1U << kTargetStatusShift) - 1;

std::int64_t to_ns(double seconds) {
  return std::llround(seconds * 1e9);
}

class UdpBridgeDriver final : public PlantDriver {
 public:
  UdpBridgeDriver(const config::UdpBridge& bridge, std::size_t channels)
      : target_(bridge.target()),
        command_(bridge.command(), channels),
        reply_(bridge.reply(), channels),
        reply_timeout_ns_(to_ns(bridge.reply_timeout_s())),
        open_timeout_s_(bridge.open_timeout_s()),
        max_missed_(bridge.max_missed_replies()),
        reply_timeout_s_(bridge.reply_timeout_s()),
        out_(channels),
        in_(channels),
        sent_(channels),
        last_(channels),
        status_(channels, 0),
        saturated_(channels, 0),
        measured_velocity_(channels) {
    try {
      const HostPort target = parse_host_port(target_);
      const HostPort bind = parse_host_port(bridge.bind());
      // An IPv6 target needs an IPv6 socket; the default bind is IPv4's "any".
      const bool v6 = target.host.find(':') != std::string::npos;
      link_ = std::make_unique<UdpLink>(io_, !bridge.has_bind() && v6 ? "::" : bind.host, bind.port);
      link_->set_peer(target.host, target.port);
    } catch (const std::exception& e) {
      throw DriverError(fmt::format("UDP bridge to target {}: {}", target_, e.what()));
    }
    fault_bits_ = bridge.fault_bits();
    link_->lock_peer(true);  // only the target's datagrams are taken; others count as foreign
    for (std::size_t c = 0; c < channels; ++c) {
      measured_velocity_[c] = reply_.has(config::BridgeField::VELOCITY, static_cast<std::uint32_t>(c));
      applied_command_.push_back(reply_.has(config::BridgeField::APPLIED_COMMAND, static_cast<std::uint32_t>(c)));
    }
    applied_counter_ = reply_.has(config::BridgeField::APPLIED_COUNTER);
  }

  [[nodiscard]] std::size_t channels() const override { return out_.size(); }

  void open(std::span<Measurement> measured) override {
    BridgeFrame probe{0, false, out_};  // counter 0, enable 0: the target must not act on it
    for (BridgeChannel& c : out_) {
      c = BridgeChannel{};
    }
    const std::span<std::byte> datagram(tx_.data(), command_.bytes());
    command_.pack(probe, datagram);
    const std::int64_t deadline = monotonic_ns() + to_ns(open_timeout_s_);
    std::int64_t next_probe = 0;
    for (std::int64_t now = monotonic_ns(); now < deadline; now = monotonic_ns()) {
      if (now >= next_probe) {
        link_->send(datagram);
        next_probe = now + kProbeIntervalNs;
      }
      const std::uint64_t oversized = link_->counters().oversized;
      const std::size_t n = link_->receive(rx_);
      if (link_->counters().oversized != oversized) {
        throw DriverError(
            fmt::format("target {} answered the probe with a datagram of more than {} bytes; the "
                        "reply layout (udp_bridge.reply) has {} bytes",
                        target_, kMaxDatagramBytes, reply_.bytes()));
      }
      if (n == 0) {
        std::this_thread::sleep_for(kOpenPoll);
        continue;
      }
      if (n != reply_.bytes()) {
        throw DriverError(fmt::format("target {} answered the probe with {} (the reply layout, udp_bridge.reply)",
                                      target_, reply_.size_mismatch(n)));
      }
      BridgeFrame reply{0, false, in_};
      reply_.unpack(std::span<const std::byte>(rx_.data(), n), reply);
      if (reply.counter != 0) {
        continue;  // an answer to a step of an earlier session, still on its way
      }
      for (std::size_t c = 0; c < in_.size(); ++c) {
        last_[c] =
            Measurement{in_[c].displacement_m, measured_velocity_[c] ? in_[c].velocity_m_per_s : 0.0, in_[c].force_n};
        measured[c] = last_[c];
        status_[c] = target_status(in_[c].status);
        if ((in_[c].status & fault_bits_) != 0) {
          // A target that has stopped obeying (rths-target: its watchdog tripped, or a test disarmed
          // it) would ignore every command: refused before anything moves.
          throw DriverError(fmt::format(
              "target {} answers the probe with status 0x{:x} on channel {}: a fault bit (udp_bridge.fault_bits "
              "0x{:x}) is set, it does not obey (rths-target: its watchdog tripped, or the last test disarmed it); "
              "restart it",
              target_, in_[c].status, c, fault_bits_));
        }
      }
      // Answers to the other probes in flight would only count as late in the first steps.
      while (link_->receive(rx_) != 0) {
      }
      return;
    }
    const bool refused = link_->counters().receive_errors != 0 &&
                         link_->last_error() == std::error_code(ECONNREFUSED, std::system_category());
    throw DriverError(fmt::format("no reply from target {} within {:g} s{}", target_, open_timeout_s_,
                                  refused ? " (its host answered \"port unreachable\": nothing listens there)" : ""));
  }

  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) override {
    if (fault_ != Fault::kNone) {
      hold(measured);
      return false;
    }
    counter_ = next_counter();
    for (std::size_t c = 0; c < out_.size(); ++c) {
      out_[c].command_m = commands[c].displacement_m;
      out_[c].velocity_m_per_s = commands[c].velocity_m_per_s;
      out_[c].acceleration_m_per_s2 = commands[c].acceleration_m_per_s2;
      status_[c] &= ~kDriverBits;  // the target's word stays until a reply brings a new one
    }
    const std::span<std::byte> datagram(tx_.data(), command_.bytes());
    command_.pack(BridgeFrame{counter_, true, out_}, datagram, saturated_);
    ++steps_since_reply_;

    const std::uint64_t oversized = link_->counters().oversized;
    const std::int64_t sent_ns = monotonic_ns();
    link_->send(datagram);
    const std::int64_t deadline = sent_ns + reply_timeout_ns_;
    bool answered = false;
    // Datagrams already waiting are read even past the deadline (the thread may have been held up
    // while the reply arrived in time), up to a bound a flood cannot stretch.
    for (int past_deadline = 0; past_deadline < kMaxReadsPastDeadline;) {
      const std::size_t n = link_->receive(rx_);
      const std::int64_t now = monotonic_ns();
      if (now >= deadline) {
        ++past_deadline;
      }
      if (link_->counters().oversized != oversized) {
        received_bytes_ = 0;
        fault_ = Fault::kWrongSize;
        hold(measured);
        return false;
      }
      if (n == 0) {
        if (now >= deadline) {
          break;
        }
        // Sleep until the reply is there (bounded by the deadline), leaving the CPU to others: on a
        // shared machine the target itself may need it to answer.
        link_->wait_readable(deadline - now);
        continue;
      }
      if (n != reply_.bytes()) {
        received_bytes_ = n;
        fault_ = Fault::kWrongSize;
        hold(measured);
        return false;
      }
      BridgeFrame reply{0, false, in_};
      reply_.unpack(std::span<const std::byte>(rx_.data(), n), reply);
      applied_counter_in_ = reply.applied_counter;
      if (reply.counter == 0) {
        // An answer to one of open()'s probes that arrived after the first: a target slower to
        // answer than the probe interval gets several. It is about no step, so it flags none.
        ++probe_echoes_;
        continue;
      }
      if (reply.counter != counter_) {
        ++late_;
        set_bits(driver_status::kReplyLate);
        continue;
      }
      answered = true;
      round_trip_.record(now - sent_ns);
      break;
    }

    if (!answered) {
      ++missed_;
      ++missed_run_;
      longest_missed_run_ = std::max(longest_missed_run_, missed_run_);
      set_bits(driver_status::kReplyMissing);
      hold(measured);
      if (missed_run_ >= max_missed_) {
        fault_ = Fault::kMissedReplies;
        return false;
      }
      return true;
    }
    ++replies_;
    missed_run_ = 0;
    const double span_s = dt_s * static_cast<double>(steps_since_reply_);
    steps_since_reply_ = 0;
    for (std::size_t c = 0; c < in_.size(); ++c) {
      // Without a velocity field, the backward difference over the steps since the last reply.
      const double velocity =
          measured_velocity_[c] ? in_[c].velocity_m_per_s : (in_[c].displacement_m - last_[c].displacement_m) / span_s;
      last_[c] = Measurement{in_[c].displacement_m, velocity, in_[c].force_n};
      measured[c] = last_[c];
      status_[c] = (status_[c] & kDriverBits) | target_status(in_[c].status);
      if ((in_[c].status & fault_bits_) != 0 && fault_ == Fault::kNone) {
        fault_ = Fault::kTargetFault;
        fault_status_ = in_[c].status;
        fault_channel_ = c;
      }
    }
    // A fault bit says why the target no longer obeys; without one, the command it holds must be
    // the one just sent.
    if (fault_ == Fault::kNone && !applied_as_sent(datagram)) {
      fault_ = Fault::kNotApplied;
    }
    return fault_ == Fault::kNone;
  }

  [[nodiscard]] InterlockTrip refused() const override { return refused_; }

  // The disarm: ENABLE 0 with the next counter and the last commands, repeated every probe interval
  // until the answer echoing it says the target holds that counter (APPLIED_COUNTER), or
  // open_timeout_s. Off the step loop.
  std::string disarm() override {
    if (fault_ != Fault::kNone) {
      disarm_ = "not sent: " + fault();
      return disarm_;
    }
    if (counter_ == 0) {
      disarm_ = "not sent: no command was sent, nothing armed the target";
      return {};
    }
    counter_ = next_counter();
    const std::span<std::byte> datagram(tx_.data(), command_.bytes());
    command_.pack(BridgeFrame{counter_, false, out_}, datagram);
    const std::int64_t deadline = monotonic_ns() + to_ns(open_timeout_s_);
    std::int64_t next_send = 0;
    for (std::int64_t now = monotonic_ns(); now < deadline; now = monotonic_ns()) {
      if (now >= next_send) {
        link_->send(datagram);
        next_send = now + kProbeIntervalNs;
      }
      const std::size_t n = link_->receive(rx_);
      if (n == 0) {
        link_->wait_readable(std::min(next_send, deadline) - now);
        continue;
      }
      BridgeFrame reply{0, false, in_};
      if (!reply_.unpack(std::span<const std::byte>(rx_.data(), n), reply) || reply.counter != counter_) {
        continue;  // a late answer to a step, or a datagram of another size: not the disarm's
      }
      if (applied_counter_ && reply.applied_counter != counter_) {
        disarm_ = fmt::format(
            "not confirmed: target {} answered the disarm (counter {}) holding command {}: it did not take it", target_,
            counter_, reply.applied_counter);
        return disarm_;
      }
      disarm_ = "confirmed";
      return {};
    }
    disarm_ =
        fmt::format("not confirmed: no answer from target {} to the disarm within {:g} s", target_, open_timeout_s_);
    return disarm_;
  }

  [[nodiscard]] std::uint32_t status(std::size_t channel) const override { return status_[channel]; }

  [[nodiscard]] std::string fault() const override {
    switch (fault_) {
      case Fault::kNone:
        return {};
      case Fault::kWrongSize:
        return received_bytes_ == 0
                   ? fmt::format(
                         "target {} sent a datagram of more than {} bytes, expected {} bytes (the reply "
                         "layout, udp_bridge.reply): refused",
                         target_, kMaxDatagramBytes, reply_.bytes())
                   : fmt::format("target {} sent {} (the reply layout, udp_bridge.reply): refused", target_,
                                 reply_.size_mismatch(received_bytes_));
      case Fault::kTargetFault:
        return fmt::format(
            "target {} reports status 0x{:x} on channel {}: a fault bit (udp_bridge.fault_bits 0x{:x}) is set, the "
            "equipment no longer obeys",
            target_, fault_status_, fault_channel_, fault_bits_);
      case Fault::kNotApplied:
        return fmt::format("target {}: {}", target_, refused_.describe());
      case Fault::kMissedReplies:
        return fmt::format(
            "no reply from target {} for {} steps in a row (max_missed_replies {}, reply_timeout_s "
            "{:g} s)",
            target_, missed_run_, max_missed_, reply_timeout_s_);
    }
    return {};
  }

  void report(std::size_t channel, results::PlantReport& out) const override {
    results::UdpBridgePlant& b = *out.mutable_udp_bridge();
    b.set_target(target_);
    b.set_replies(replies_);
    b.set_missed(missed_);
    b.set_longest_missed_run(longest_missed_run_);
    b.set_late(late_);
    b.set_probe_echoes(probe_echoes_);
    b.set_disarm(disarm_.empty() ? std::string("not sent: the site's stop ramp did not complete") : disarm_);
    b.set_foreign(link_->counters().foreign);
    b.set_saturated(saturated_[channel]);
    b.set_command_bytes(static_cast<std::uint32_t>(command_.bytes()));
    b.set_reply_bytes(static_cast<std::uint32_t>(reply_.bytes()));
    b.set_round_trip_p50_us(static_cast<double>(round_trip_.percentile(50)) * 1e-3);
    b.set_round_trip_p99_us(static_cast<double>(round_trip_.percentile(99)) * 1e-3);
    b.set_round_trip_max_us(static_cast<double>(round_trip_.max_ns()) * 1e-3);
  }

 private:
  enum class Fault : std::uint8_t { kNone, kWrongSize, kMissedReplies, kTargetFault, kNotApplied };

  [[nodiscard]] std::uint32_t next_counter() const {
    return counter_ == std::numeric_limits<std::uint32_t>::max() ? 1 : counter_ + 1;
  }

  // Whether the reply just taken (in_, applied_counter_in_) says the target holds the command this
  // step sent (datagram): its counter, and each value as the target read it from the wire (what the
  // site's own datagram unpacks to) within the two fields' resolution. Else sets refused_.
  bool applied_as_sent(std::span<const std::byte> datagram) {
    if (applied_counter_ && applied_counter_in_ != counter_) {
      refused_ = InterlockTrip{InterlockTrip::What::kAppliedCounter, 0, static_cast<double>(applied_counter_in_),
                               static_cast<double>(counter_)};
      return false;
    }
    BridgeFrame sent{0, false, sent_};
    command_.unpack(datagram, sent);
    for (std::size_t c = 0; c < in_.size(); ++c) {
      if (!applied_command_[c]) continue;
      const double x = sent_[c].command_m;
      const auto channel = static_cast<std::uint32_t>(c);
      const double tolerance = command_.resolution(config::BridgeField::COMMAND, channel, x) +
                               reply_.resolution(config::BridgeField::APPLIED_COMMAND, channel, x);
      if (!(std::abs(in_[c].applied_m - x) <= tolerance)) {
        refused_ = InterlockTrip{InterlockTrip::What::kAppliedCommand, c, in_[c].applied_m, x};
        return false;
      }
    }
    return true;
  }

  static std::uint32_t target_status(std::uint32_t word) { return (word & kDriverBits) << kTargetStatusShift; }

  void set_bits(std::uint32_t bits) {
    for (std::uint32_t& s : status_) {
      s |= bits;
    }
  }

  // The last reading again, marked held: nothing new was read this step.
  void hold(std::span<Measurement> measured) const {
    for (std::size_t c = 0; c < last_.size(); ++c) {
      measured[c] = last_[c];
      measured[c].held = true;
    }
  }

  std::string target_;
  BridgeLayout command_;
  BridgeLayout reply_;
  std::int64_t reply_timeout_ns_;
  double open_timeout_s_;
  std::uint64_t max_missed_;
  double reply_timeout_s_;
  asio::io_context io_;
  std::unique_ptr<UdpLink> link_;

  std::vector<BridgeChannel> out_;
  std::vector<BridgeChannel> in_;
  std::vector<BridgeChannel> sent_;  // this step's command as the target reads it off the wire
  std::vector<Measurement> last_;    // the last measurement received: held while replies are missing
  std::vector<std::uint32_t> status_;
  std::vector<std::uint64_t> saturated_;
  std::vector<bool> measured_velocity_;   // per channel: the reply carries a VELOCITY
  std::vector<bool> applied_command_;     // per channel: the reply carries an APPLIED_COMMAND
  bool applied_counter_ = false;          // the reply carries an APPLIED_COUNTER
  std::uint32_t applied_counter_in_ = 0;  // of the reply last read
  InterlockTrip refused_;                 // the target holds another command than the one sent (Fault::kNotApplied)
  std::string disarm_;                    // what became of the disarm (results::UdpBridgePlant.disarm)
  std::array<std::byte, kMaxDatagramBytes> tx_{};
  std::array<std::byte, kMaxDatagramBytes> rx_{};

  std::uint32_t counter_ = 0;  // of the last step sent; 0 before the first
  std::uint64_t steps_since_reply_ = 0;
  std::uint64_t replies_ = 0;
  std::uint64_t missed_ = 0;
  std::uint64_t missed_run_ = 0;
  std::uint64_t longest_missed_run_ = 0;
  std::uint64_t late_ = 0;
  std::uint64_t probe_echoes_ = 0;
  LatencyHistogram round_trip_;
  Fault fault_ = Fault::kNone;
  std::size_t received_bytes_ = 0;  // of the refused datagram; 0: more than kMaxDatagramBytes
  std::uint32_t fault_bits_ = 0;    // udp_bridge.fault_bits
  std::uint32_t fault_status_ = 0;  // the status word that stopped the site
  std::size_t fault_channel_ = 0;
};

// UDP bridge bounds (proto/driver.proto, UdpBridge). The probe's answer comes within milliseconds
// from a target that runs; a minute covers a target still booting. Missed replies beyond one second of
// steps leave the site's interlock watching a measurement that old.
constexpr double kMaxBridgeOpenTimeoutS = 60.0;
constexpr double kMaxBridgeMissedSeconds = 1.0;

// The bridge's rules (docs/plant-drivers.md). A driver is part of a site: the datagrams carry the
// site's channels, or with a setup transformation its actuators.
void validate(const config::UdpBridge& bridge, const ComponentContext& context, const Checker& check) {
  if (context.site == nullptr) throw std::logic_error("a UDP bridge's rules need its site");
  const config::Site& site = *context.site;
  const double rate_hz = context.rate_hz;
  check.section([&] {
    check.require(bridge.has_target(), "target",
                  R"(missing; expected the real-time target's "host:port" (e.g. "192.168.7.5:47100"))");
    HostPort target;
    try {
      target = parse_host_port(bridge.target());
    } catch (const std::invalid_argument& e) {
      check.fail("target", e.what());
    }
    check.require(
        target.port != 0, "target",
        fmt::format("\"{}\" has port 0; expected the port the target listens on (1..65535)", bridge.target()));
  });
  try {
    (void)parse_host_port(bridge.bind());
  } catch (const std::invalid_argument& e) {
    check.expect(false, "bind", e.what());
  }
  const double step_s = 1.0 / rate_hz;
  check.expect(bridge.reply_timeout_s() > 0 && bridge.reply_timeout_s() <= 0.5 * step_s, "reply_timeout_s",
               fmt::format("is {:g}, expected above 0 and at most half a step ({:g} s at {:g} Hz): the step needs the "
                           "rest for itself",
                           bridge.reply_timeout_s(), 0.5 * step_s, rate_hz));
  const auto max_missed = static_cast<std::uint32_t>(std::ceil(kMaxBridgeMissedSeconds * rate_hz));
  check.expect(bridge.max_missed_replies() >= 1 && bridge.max_missed_replies() <= max_missed, "max_missed_replies",
               fmt::format("is {}, expected 1 to {} (one second of steps at {:g} Hz: the interlock must not watch "
                           "an older measurement)",
                           bridge.max_missed_replies(), max_missed, rate_hz));
  check.expect(
      bridge.open_timeout_s() > 0 && bridge.open_timeout_s() <= kMaxBridgeOpenTimeoutS, "open_timeout_s",
      fmt::format("is {:g}, expected above 0 and at most {:g} s", bridge.open_timeout_s(), kMaxBridgeOpenTimeoutS));
  const auto carried = static_cast<int>(driven_channels(site));
  const std::string_view unit = site.has_setup() ? "actuator" : "channel";
  // A multi-axial site's interface forces come from its force model, not from load cells.
  const bool load_cells = !site.has_force_model();
  check.section([&] { check_bridge_fields(bridge.command(), true, carried, unit, load_cells, check.at("command")); });
  check.section([&] { check_bridge_fields(bridge.reply(), false, carried, unit, load_cells, check.at("reply")); });
}

std::unique_ptr<PlantDriver> make(const config::UdpBridge& bridge, const ComponentContext& context) {
  return make_udp_bridge(bridge, *context.site, context.rate_hz);
}

[[maybe_unused]] const bool kUdpBridgeRegistered = register_component<config::UdpBridge, PlantDriver>(validate, make);

}  // namespace

std::unique_ptr<PlantDriver> make_udp_bridge(const config::UdpBridge& bridge, const config::Site& site,
                                             double rate_hz) {
  (void)rate_hz;  // validation bounded the timeouts by it; each exchange() brings the step's own dt_s
  // With a setup transformation the datagrams carry its actuators (SetupDriver sits in front).
  return std::make_unique<UdpBridgeDriver>(bridge, driven_channels(site));
}

}  // namespace rths
