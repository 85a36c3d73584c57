#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/core/dof_kind.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/transport/link.hpp"
#include "common/transport/udp_link.hpp"
#include "experiment.pb.h"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/plants/plant.hpp"
#include "node_physical/plants/setup_transform.hpp"
#include "node_physical/plants/site_plants.hpp"

namespace rths {

// The status word rths-target sends in each channel's STATUS field (the site shows it in bits 16-31
// of its status<c>).
namespace target_status {
inline constexpr std::uint32_t kStrokeClamped = 1U << 0;  // the command in force was beyond the stroke: clamped
inline constexpr std::uint32_t kWatchdog = 1U << 1;       // the watchdog tripped: the actuator holds
inline constexpr std::uint32_t kDisarmed = 1U << 2;       // the site disarmed it after its test: it holds
}  // namespace target_status

// Who sent a datagram, as the target tells senders apart: the address (IPv6, an IPv4 one mapped into
// it) and the port. A plain value: comparing two allocates nothing.
struct Sender {
  std::array<std::uint8_t, 16> address{};
  std::uint16_t port = 0;
  friend bool operator==(const Sender&, const Sender&) = default;
};
Sender sender_of(const asio::ip::udp::endpoint& endpoint);
// "127.0.0.1:5000", "[::1]:5000": for the summary and the log.
std::string describe(const Sender& sender);

// Where the target's datagrams come from and its answers go: the UDP socket (UdpTargetPort), or a
// test's script, so that the target's rules run without a socket or a clock.
class TargetPort {
 public:
  TargetPort() = default;
  TargetPort(const TargetPort&) = delete;
  TargetPort& operator=(const TargetPort&) = delete;
  TargetPort(TargetPort&&) = delete;
  TargetPort& operator=(TargetPort&&) = delete;
  virtual ~TargetPort() = default;
  // The next datagram waiting, copied into buffer (its size; 0: none) and its sender into from.
  // Non-blocking, allocation-free.
  virtual std::size_t receive(std::span<std::byte> buffer, Sender& from) = 0;
  // Sends datagram to the sender of the datagram receive() returned last; false when it could not.
  virtual bool answer(std::span<const std::byte> datagram) = 0;
};

// CLOCK_MONOTONIC (monotonic_ns), as the watchdog reads it on a running target.
class MonotonicClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override { return monotonic_ns(); }
};

// The target's port on a UDP socket.
class UdpTargetPort final : public TargetPort {
 public:
  explicit UdpTargetPort(UdpLink& link) : link_(link) {}
  std::size_t receive(std::span<std::byte> buffer, Sender& from) override;
  bool answer(std::span<const std::byte> datagram) override;

 private:
  UdpLink& link_;
};

// A lock-free single-producer, single-consumer queue of fixed-size rows: the tick pushes (no
// allocation, no lock; a full queue drops the row and counts it), a writer thread pops.
class RowQueue {
 public:
  RowQueue(std::size_t columns, std::size_t capacity_rows);
  // Producer: copies row (columns() values); false (counted) when the queue is full.
  bool push(std::span<const double> row);
  // Consumer: copies the oldest row into row; false when empty.
  bool pop(std::span<double> row);
  [[nodiscard]] std::size_t columns() const { return columns_; }
  [[nodiscard]] std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  std::size_t columns_;
  std::size_t capacity_;
  std::vector<double> data_;
  std::atomic<std::uint64_t> head_{0};  // rows pushed
  std::atomic<std::uint64_t> tail_{0};  // rows popped
  std::atomic<std::uint64_t> dropped_{0};
};

// What the watchdog saw when it tripped, published once for the thread that prints it.
struct WatchdogTrip {
  double t_s = 0.0;            // the tick's time since the target started
  double age_s = 0.0;          // since the last new counter
  std::vector<double> hold_m;  // where each channel's command comes to rest
};

// The site's disarm, published once for the thread that prints it.
struct Disarm {
  double t_s = 0.0;            // the tick's time since the target started
  std::uint32_t counter = 0;   // the disarm's
  std::vector<double> hold_m;  // the command in force, which the actuator holds
};

// The real-time controller of a laboratory as rths's UDP bridge sees it (docs/plant-drivers.md):
// each channel's actuator and specimen from the site's config (make_plant at the target's own rate;
// a channel without an actuator is an ideal one), or a multi-axial site's actuator plant (the maRTHS
// frame's, in actuator coordinates, make_actuator_plant), ticked by a RealtimeLoop. Each tick:
//   1. drain the port: every datagram of the command layout is answered at once with the sensors
//      sampled at this tick (before any new command acts), its counter echoed and the counter and
//      command in force after taking it (APPLIED_COUNTER, APPLIED_COMMAND). Only the peer commands:
//      the sender of the first command taken (or the one given), and only with a counter newer than
//      the one in force. Counter 0 (a probe, from anyone), another sender's datagram (counted as
//      foreign), an older counter, a value that is not finite and anything after a watchdog trip or a
//      disarm change nothing, the watchdog included. ENABLE 0 from the peer with a newer counter is the
//      site's disarm: that counter is in force, the command is held, the watchdog is off, and nothing
//      is taken any more (kDisarmed). The newest counter's command is clamped to the stroke (counted,
//      kStrokeClamped) and held;
//   2. the watchdog: armed by the first command taken, it trips when no newer counter was taken for
//      more than watchdog_s by the clock (when the tick runs, not the tick's index: after a stall of
//      the target its ticks catch up within microseconds, and the site was not silent meanwhile). The command then
//      ramps the actuator's velocity to zero over kHoldRampS (from its measured position and velocity at the trip, so
//      nothing jumps) and holds the point where the ramp ends. The trip latches until the target restarts: a site that
//      comes back (a probe, a new counter) after the actuator stopped would otherwise jump it to a command computed for
//      a test that is over; the operator decides, as at a real controller's interlock;
//   3. advance every plant one tick with the command in force and record the tick.
// With a setup transformation (Site.setup) and channel plants the datagrams carry the setup's
// actuators, as they do at a rig (an actuator plant needs no mapping: it is in their coordinates): each stroke command
// is clamped to its actuator's setup.stroke_limit_m and mapped to the interface DOFs by the setup's inverse (commands
// it cannot map are ignored and counted), the plants run on the DOFs, and each reply carries the strokes of the sensed
// DOF displacements, their rates J v and the load-cell forces f with J^T f = the specimen's forces. An actuator's own
// dynamics are thereby modelled along its DOF, not along its axis: the emulator exercises the mapping both ways, not
// the rig's kinematics. Nothing in tick() allocates, locks or logs.
class TargetEmulator final : public TickHandler {
 public:
  // The velocity ramp of the hold (s): quick, as a stop should be (0.1 m/s comes to rest within
  // 0.5 mm), yet ten site steps at 1024 Hz long, so the command asks no jump of the actuator.
  static constexpr double kHoldRampS = 0.01;

  struct Counters {
    std::uint64_t datagrams = 0;      // of the command layout's size, each answered
    std::uint64_t probes = 0;         // counter 0
    std::uint64_t foreign = 0;        // live commands from another sender than the peer: ignored
    std::uint64_t after_disarm = 0;   // live commands after the site's disarm: ignored
    std::uint64_t applied = 0;        // live commands that became the command in force
    std::uint64_t stale = 0;          // live commands with a counter not newer than the one in force
    std::uint64_t disabled = 0;       // live commands with ENABLE 0
    std::uint64_t after_trip = 0;     // live commands after the watchdog tripped: ignored
    std::uint64_t not_finite = 0;     // live commands with a value that is not finite: ignored
    std::uint64_t outside_setup = 0;  // live strokes the setup cannot map to the DOFs: ignored
    std::uint64_t wrong_size = 0;     // datagrams of another size: not answered
    std::uint64_t send_errors = 0;
    std::int64_t longest_silence_ns = 0;        // between two new counters of the peer, by the clock
    std::vector<std::uint64_t> stroke_clamped;  // per channel (per actuator with a setup)
  };

  // clock: what the watchdog measures silence by (MonotonicClock when running). rows: the queue the
  // ticks are recorded to (nullptr: none). peer: the only sender whose commands are taken (none: the
  // sender of the first command taken). Throws std::invalid_argument for a site without a UDP bridge.
  TargetEmulator(const config::Site& site, double rate_hz, double watchdog_s, TargetPort& port, const Clock& clock,
                 RowQueue* rows, std::optional<Sender> peer = std::nullopt);

  // False when the plant failed (fault()): the loop stops.
  bool tick(std::int64_t k) override;

  // The columns of a recorded row: t_s, counter, datagrams, then per channel command, displacement,
  // force and status (with a setup: of the interface DOF, its status any of its actuators), named
  // with the units of the channel's kind as every rths record is (command0_m, force0_N; a rotation's
  // command1_rad, force1_Nm).
  static std::vector<std::string> columns(std::span<const DofKind> kinds);
  // The kind of each channel a row records: the interface DOFs as the config says (channel_kinds),
  // or a multi-axial plant's actuators, which are translations.
  static std::vector<DofKind> recorded_kinds(const config::Structure& structure, const config::Site& site);
  [[nodiscard]] const Counters& counters() const { return counters_; }
  // The trip, once tripped() (acquire: everything in it was written before).
  [[nodiscard]] bool tripped() const { return tripped_.load(std::memory_order_acquire); }
  [[nodiscard]] const WatchdogTrip& trip() const { return trip_; }
  // The site's disarm, once disarmed() (acquire, as tripped()).
  [[nodiscard]] bool disarmed() const { return disarmed_.load(std::memory_order_acquire); }
  [[nodiscard]] const Disarm& disarm() const { return disarm_; }
  // The sender whose commands are taken, once known.
  [[nodiscard]] const std::optional<Sender>& peer() const { return peer_; }
  // The counter in force (0 before any command was taken) and each channel's command in force as the
  // wire carries it (after the stroke clamp), as a reply reports them.
  [[nodiscard]] std::uint32_t counter() const { return counter_; }
  [[nodiscard]] double wire_command_m(std::size_t channel) const { return wire_applied_m_[channel]; }
  [[nodiscard]] std::size_t channels() const { return plants_->channels(); }
  // Why a tick returned false (the plant could not step); empty while all is well.
  [[nodiscard]] std::string fault() const { return plants_->fault(); }

 private:
  void receive(std::int64_t k);
  void answer(std::uint32_t counter);
  void take_disarm(std::int64_t k, std::uint32_t counter);
  // False when a setup cannot map the strokes to the DOFs (nothing changes).
  [[nodiscard]] bool accept(std::int64_t k, std::uint32_t counter);
  // The sensors of the DOFs as the wire carries them (strokes and load cells with a setup) into out_.
  void sense_wire();
  [[nodiscard]] bool finite_commands() const;
  void trip_watchdog(std::int64_t k);
  [[nodiscard]] InterfaceMotion hold_command(std::size_t c, double since_trip_s) const;
  [[nodiscard]] double clamp_to_stroke(std::size_t c, double x) const;
  [[nodiscard]] std::uint32_t dof_status(std::size_t c) const;

  double dt_s_;
  std::int64_t watchdog_ns_;
  const Clock& clock_;
  TargetPort& port_;
  RowQueue* rows_;
  std::optional<Sender> peer_;
  BridgeLayout command_layout_;
  BridgeLayout reply_layout_;
  std::unique_ptr<PlantDriver> plants_;
  std::vector<double> stroke_m_;                                          // per channel; infinity: none
  std::unique_ptr<SetupTransform> setup_;                                 // null: the wire carries the channels
  std::vector<double> wire_stroke_m_;                                     // per wire channel (actuator with a setup)
  std::vector<double> dof_u_, dof_v_, dof_f_, wire_s_, wire_v_, wire_f_;  // scratch for the setup
  std::vector<Measurement> sensors_;      // what the sensors read at this tick (before its command acts)
  std::vector<InterfaceMotion> command_;  // in force, held between datagrams
  std::vector<InterfaceMotion> applied_;  // this tick's: the command in force, or the hold's
  std::vector<std::uint32_t> status_;     // per wire channel
  std::vector<double> wire_applied_m_;    // per wire channel: the command in force, as the wire carries it
  std::vector<BridgeChannel> in_;
  std::vector<BridgeChannel> out_;
  std::vector<double> row_;
  std::array<std::byte, kMaxDatagramBytes> rx_{};
  std::array<std::byte, kMaxDatagramBytes> tx_{};

  bool armed_ = false;
  std::uint32_t counter_ = 0;      // of the command in force
  std::int64_t changed_tick_ = 0;  // when it came: the tick
  std::int64_t changed_ns_ = 0;    // and the clock
  std::uint64_t tick_datagrams_ = 0;

  std::atomic<bool> tripped_{false};
  std::atomic<bool> disarmed_{false};
  Disarm disarm_;
  std::int64_t trip_tick_ = 0;
  std::vector<double> hold_start_m_;
  std::vector<double> hold_velocity_m_per_s_;
  WatchdogTrip trip_;
  Counters counters_;
};

}  // namespace rths
