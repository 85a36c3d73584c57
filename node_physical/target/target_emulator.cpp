#include "node_physical/target/target_emulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "common/config/config.hpp"
#include "common/config/setup_checks.hpp"
#include "node_physical/plants/actuator_plant.hpp"
#include "node_physical/plants/two_actuator_frame_plant.hpp"

namespace rths {
namespace {

// Datagrams one tick answers at most: a flood cannot hold the tick (the rest wait for the next one).
constexpr int kMaxDatagramsPerTick = 64;
constexpr std::size_t kRowColumns = 3;      // t_s, counter, datagrams
constexpr std::size_t kChannelColumns = 4;  // command, displacement, force, status (columns())

// Whether counter a came after b, across the wrap of the 32-bit counter (RFC 1982 serial numbers).
bool newer(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) > 0;
}

}  // namespace

Sender sender_of(const asio::ip::udp::endpoint& endpoint) {
  Sender sender;
  const asio::ip::address& a = endpoint.address();
  const asio::ip::address_v6::bytes_type bytes =
      a.is_v4() ? asio::ip::make_address_v6(asio::ip::v4_mapped, a.to_v4()).to_bytes() : a.to_v6().to_bytes();
  std::copy(bytes.begin(), bytes.end(), sender.address.begin());
  sender.port = endpoint.port();
  return sender;
}

std::string describe(const Sender& sender) {
  asio::ip::address_v6::bytes_type bytes{};
  std::copy(sender.address.begin(), sender.address.end(), bytes.begin());
  const asio::ip::address_v6 a(bytes);
  return a.is_v4_mapped()
             ? fmt::format("{}:{}", asio::ip::make_address_v4(asio::ip::v4_mapped, a).to_string(), sender.port)
             : fmt::format("[{}]:{}", a.to_string(), sender.port);
}

std::size_t UdpTargetPort::receive(std::span<std::byte> buffer, Sender& from) {
  const std::size_t n = link_.receive(buffer);
  if (n != 0) {
    from = sender_of(link_.last_source());
  }
  return n;
}

bool UdpTargetPort::answer(std::span<const std::byte> datagram) {
  // A lab's target answers the host it was configured with; the emulator answers whoever asked, so
  // that a site which is not the peer reads in APPLIED_COUNTER that the target obeys someone else.
  link_.adopt_last_source();
  const std::uint64_t errors = link_.counters().send_errors;
  link_.send(datagram);
  return link_.counters().send_errors == errors;
}

RowQueue::RowQueue(std::size_t columns, std::size_t capacity_rows)
    : columns_(columns), capacity_(capacity_rows), data_(columns * capacity_rows) {}

bool RowQueue::push(std::span<const double> row) {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  std::copy_n(row.begin(), columns_, data_.begin() + static_cast<std::ptrdiff_t>((head % capacity_) * columns_));
  head_.store(head + 1, std::memory_order_release);
  return true;
}

bool RowQueue::pop(std::span<double> row) {
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail == head_.load(std::memory_order_acquire)) {
    return false;
  }
  const auto from = data_.begin() + static_cast<std::ptrdiff_t>((tail % capacity_) * columns_);
  std::copy_n(from, columns_, row.begin());
  tail_.store(tail + 1, std::memory_order_release);
  return true;
}

TargetEmulator::TargetEmulator(const config::Site& site, double rate_hz, double watchdog_s, TargetPort& port,
                               const Clock& clock, RowQueue* rows, std::optional<Sender> peer)
    : dt_s_(1.0 / rate_hz),
      watchdog_ns_(std::llround(watchdog_s * 1e9)),
      clock_(clock),
      port_(port),
      rows_(rows),
      peer_(peer),
      command_layout_(site.driver().udp_bridge().command(), driven_channels(site)),
      reply_layout_(site.driver().udp_bridge().reply(), driven_channels(site)) {
  if (!site.driver().has_udp_bridge()) {
    throw std::invalid_argument(fmt::format("site \"{}\" has no driver {{ udp_bridge {{ ... }} }}", site.name()));
  }
  const std::size_t wire = driven_channels(site);
  if (site.has_actuator_plant()) {
    // A multi-axial site's plant (the maRTHS frame's 2 x 2 plant) is in actuator coordinates, as the
    // rig's controller sees its actuators: the wire's channels are the plant's, no setup maps them,
    // and each stroke is limited by setup.stroke_limit_m.
    plants_ = make_actuator_plant(site.actuator_plant(), rate_hz);
    stroke_m_.assign(site.setup().stroke_limit_m().begin(), site.setup().stroke_limit_m().end());
    stroke_m_.resize(plants_->channels(), std::numeric_limits<double>::infinity());
  } else {
    plants_ = make_simulated_plants(site, rate_hz);
    for (const config::Channel& channel : site.channel()) {
      // The controller's own stroke limit: the actuator's, else the channel's interlock limit.
      const double stroke = channel.actuator().limits().stroke_m() > 0 ? channel.actuator().limits().stroke_m()
                                                                       : channel.stroke_limit_m();
      stroke_m_.push_back(stroke > 0 ? stroke : std::numeric_limits<double>::infinity());
    }
  }
  const std::size_t n = plants_->channels();
  wire_stroke_m_ = stroke_m_;
  if (site.has_setup() && !site.has_actuator_plant()) {
    setup_ = make_setup_transform(site);
    wire_stroke_m_.assign(site.setup().stroke_limit_m().begin(), site.setup().stroke_limit_m().end());
    wire_stroke_m_.resize(wire, std::numeric_limits<double>::infinity());
  }
  if (n != wire) {
    throw std::invalid_argument(
        fmt::format("site \"{}\": its plant has {} channels, the bridge carries {}", site.name(), n, wire));
  }
  for (auto* v : {&dof_u_, &dof_v_, &dof_f_}) v->resize(n);
  for (auto* v : {&wire_s_, &wire_v_, &wire_f_}) v->resize(wire);
  sensors_.resize(n);
  command_.resize(n);
  applied_.resize(n);
  status_.resize(wire, 0);
  wire_applied_m_.resize(wire, 0.0);
  in_.resize(wire);
  out_.resize(wire);
  hold_start_m_.resize(n, 0.0);
  hold_velocity_m_per_s_.resize(n, 0.0);
  trip_.hold_m.resize(n, 0.0);
  disarm_.hold_m.resize(n, 0.0);
  counters_.stroke_clamped.resize(wire, 0);
  row_.resize(kRowColumns + kChannelColumns * n);
  if (rows_ != nullptr && rows_->columns() != row_.size()) {
    throw std::invalid_argument(
        fmt::format("the row queue has {} columns, the target records {}", rows_->columns(), row_.size()));
  }
}

std::vector<std::string> TargetEmulator::columns(std::span<const DofKind> kinds) {
  std::vector<std::string> names{"t_s", "counter", "datagrams"};
  for (std::size_t c = 0; c < kinds.size(); ++c) {
    names.push_back(fmt::format("command{}_{}", c, displacement_unit(kinds[c])));
    names.push_back(fmt::format("displacement{}_{}", c, displacement_unit(kinds[c])));
    names.push_back(fmt::format("force{}_{}", c, force_unit(kinds[c])));
    names.push_back(fmt::format("status{}", c));
  }
  return names;
}

std::vector<DofKind> TargetEmulator::recorded_kinds(const config::Structure& structure, const config::Site& site) {
  if (site.has_actuator_plant()) return std::vector<DofKind>(driven_channels(site), DofKind::kTranslation);
  return channel_kinds(structure, site);
}

double TargetEmulator::clamp_to_stroke(std::size_t c, double x) const {
  return std::clamp(x, -stroke_m_[c], stroke_m_[c]);
}

std::uint32_t TargetEmulator::dof_status(std::size_t c) const {
  if (!setup_) return status_[c];
  std::uint32_t bits = 0;
  for (const std::uint32_t s : status_) bits |= s;
  return bits;
}

void TargetEmulator::sense_wire() {
  if (!setup_) {
    for (std::size_t c = 0; c < out_.size(); ++c) {
      out_[c].displacement_m = sensors_[c].displacement_m;
      out_[c].velocity_m_per_s = sensors_[c].velocity_m_per_s;
      out_[c].force_n = sensors_[c].force_n;
    }
    return;
  }
  for (std::size_t c = 0; c < sensors_.size(); ++c) {
    dof_u_[c] = sensors_[c].displacement_m;
    dof_v_[c] = sensors_[c].velocity_m_per_s;
    dof_f_[c] = sensors_[c].force_n;
  }
  // Outside the setup's range the rig's sensors would read nonsense: the site refuses NaN.
  const bool read = setup_->strokes(dof_u_, wire_s_) && setup_->stroke_velocities(dof_u_, dof_v_, wire_v_) &&
                    setup_->actuator_forces(wire_s_, dof_f_, wire_f_);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < out_.size(); ++i) {
    out_[i].displacement_m = read ? wire_s_[i] : kNaN;
    out_[i].velocity_m_per_s = read ? wire_v_[i] : kNaN;
    out_[i].force_n = read ? wire_f_[i] : kNaN;
  }
}

void TargetEmulator::answer(std::uint32_t counter) {
  sense_wire();
  for (std::size_t c = 0; c < out_.size(); ++c) {
    out_[c].status = status_[c];
    out_[c].applied_m = wire_applied_m_[c];
  }
  const std::span<std::byte> datagram(tx_.data(), reply_layout_.bytes());
  reply_layout_.pack(BridgeFrame{counter, true, out_, counter_}, datagram);
  counters_.send_errors += port_.answer(datagram) ? 0 : 1;
}

void TargetEmulator::take_disarm(std::int64_t k, std::uint32_t counter) {
  counter_ = counter;
  changed_tick_ = k;
  changed_ns_ = clock_.now_ns();
  for (std::uint32_t& s : status_) s |= target_status::kDisarmed;
  disarm_.t_s = static_cast<double>(k) * dt_s_;
  disarm_.counter = counter;
  for (std::size_t c = 0; c < command_.size(); ++c) {
    disarm_.hold_m[c] = command_[c].displacement_m;
  }
  disarmed_.store(true, std::memory_order_release);
}

bool TargetEmulator::accept(std::int64_t k, std::uint32_t counter) {
  const double gap_s = static_cast<double>(k - changed_tick_) * dt_s_;
  for (std::size_t i = 0; i < in_.size(); ++i) {
    wire_s_[i] = std::clamp(in_[i].command_m, -wire_stroke_m_[i], wire_stroke_m_[i]);
  }
  if (setup_) {
    if (!setup_->interface_displacements(wire_s_, dof_u_)) {
      return false;
    }
  } else {
    std::copy(wire_s_.begin(), wire_s_.end(), dof_u_.begin());
  }
  for (std::size_t i = 0; i < in_.size(); ++i) {
    wire_applied_m_[i] = wire_s_[i];
    const bool clamped = wire_s_[i] != in_[i].command_m;
    counters_.stroke_clamped[i] += clamped ? 1 : 0;
    status_[i] = clamped ? status_[i] | target_status::kStrokeClamped : status_[i] & ~target_status::kStrokeClamped;
  }
  for (std::size_t c = 0; c < command_.size(); ++c) {
    const double x = clamp_to_stroke(c, dof_u_[c]);
    // The command's velocity as the actuator is asked to move: the layout's own (without a setup,
    // where the wire carries the DOFs), else the change since the command before (the plant's
    // specimen may need it: a damper).
    const bool sent = !setup_ && command_layout_.has(config::BridgeField::VELOCITY, static_cast<std::uint32_t>(c));
    const double velocity = sent                  ? in_[c].velocity_m_per_s
                            : armed_ && gap_s > 0 ? (x - command_[c].displacement_m) / gap_s
                                                  : command_[c].velocity_m_per_s;
    command_[c] = InterfaceMotion{x, velocity, setup_ ? 0.0 : in_[c].acceleration_m_per_s2};
  }
  changed_tick_ = k;
  const std::int64_t now_ns = clock_.now_ns();
  if (armed_) {
    // What the watchdog had to cover: the test's margin against it.
    counters_.longest_silence_ns = std::max(counters_.longest_silence_ns, now_ns - changed_ns_);
  }
  changed_ns_ = now_ns;
  counter_ = counter;
  armed_ = true;
  ++counters_.applied;
  return true;
}

bool TargetEmulator::finite_commands() const {
  return std::all_of(in_.begin(), in_.end(), [](const BridgeChannel& c) {
    return std::isfinite(c.command_m) && std::isfinite(c.velocity_m_per_s) && std::isfinite(c.acceleration_m_per_s2);
  });
}

void TargetEmulator::receive(std::int64_t k) {
  for (int i = 0; i < kMaxDatagramsPerTick; ++i) {
    Sender from;
    const std::size_t n = port_.receive(rx_, from);
    if (n == 0) {
      return;
    }
    BridgeFrame frame{0, true, in_};
    if (!command_layout_.unpack(std::span<const std::byte>(rx_.data(), n), frame)) {
      ++counters_.wrong_size;
      continue;
    }
    ++counters_.datagrams;
    ++tick_datagrams_;
    const bool has_enable = command_layout_.has(config::BridgeField::ENABLE);
    // Each rule below is one a lab's controller must keep (docs/plant-drivers.md, "Protocol"): only
    // the peer's newer counter acts, and only a disarm ends its session.
    if (frame.counter == 0) {
      ++counters_.probes;
    } else if (peer_ && from != *peer_) {
      ++counters_.foreign;
    } else if (tripped_.load(std::memory_order_relaxed)) {
      ++counters_.after_trip;
    } else if (disarmed_.load(std::memory_order_relaxed)) {
      ++counters_.after_disarm;
    } else if (armed_ && !newer(frame.counter, counter_)) {
      ++counters_.stale;
    } else if (has_enable && !frame.enable) {
      if (armed_) {
        take_disarm(k, frame.counter);
      } else {
        ++counters_.disabled;  // nothing armed: nothing to disarm
      }
    } else if (!finite_commands()) {
      ++counters_.not_finite;
    } else if (!accept(k, frame.counter)) {
      ++counters_.outside_setup;
    } else if (!peer_) {
      peer_ = from;  // the first command taken: its sender is the only one obeyed from now on
    }
    // Answered after the command is taken, so that its status says whether it was clamped; the
    // sensors are this tick's, read before the command acts.
    answer(frame.counter);
  }
}

void TargetEmulator::trip_watchdog(std::int64_t k) {
  trip_tick_ = k;
  for (std::size_t c = 0; c < command_.size(); ++c) {
    hold_start_m_[c] = sensors_[c].displacement_m;
    hold_velocity_m_per_s_[c] = sensors_[c].velocity_m_per_s;
    trip_.hold_m[c] = hold_command(c, kHoldRampS).displacement_m;
  }
  for (std::uint32_t& s : status_) s |= target_status::kWatchdog;
  trip_.t_s = static_cast<double>(k) * dt_s_;
  trip_.age_s = static_cast<double>(clock_.now_ns() - changed_ns_) * 1e-9;
  tripped_.store(true, std::memory_order_release);
}

// From the measured position x0 and velocity v0 at the trip, the velocity ramps linearly to zero
// over kHoldRampS: x = x0 + v0 (s - s^2 / 2T), then holds x0 + v0 T / 2 (within the stroke).
InterfaceMotion TargetEmulator::hold_command(std::size_t c, double since_trip_s) const {
  constexpr double kT = kHoldRampS;
  const double s = std::min(since_trip_s, kT);
  const double v0 = hold_velocity_m_per_s_[c];
  const double x = clamp_to_stroke(c, hold_start_m_[c] + v0 * (s - s * s / (2 * kT)));
  return since_trip_s < kT ? InterfaceMotion{x, v0 * (1 - s / kT), -v0 / kT} : InterfaceMotion{x, 0.0, 0.0};
}

bool TargetEmulator::tick(std::int64_t k) {
  tick_datagrams_ = 0;
  receive(k);
  const bool tripped = tripped_.load(std::memory_order_relaxed);
  const bool disarmed = disarmed_.load(std::memory_order_relaxed);
  if (armed_ && !tripped && !disarmed && clock_.now_ns() - changed_ns_ > watchdog_ns_) {
    trip_watchdog(k);
  }
  const bool holding = tripped_.load(std::memory_order_relaxed);
  const double t_s = static_cast<double>(k) * dt_s_;
  row_[0] = t_s;
  row_[1] = counter_;
  row_[2] = static_cast<double>(tick_datagrams_);
  for (std::size_t c = 0; c < applied_.size(); ++c) {
    applied_[c] = holding ? hold_command(c, static_cast<double>(k - trip_tick_) * dt_s_) : command_[c];
    const std::size_t at = 3 + 4 * c;
    row_[at] = applied_[c].displacement_m;
    row_[at + 1] = sensors_[c].displacement_m;
    row_[at + 2] = sensors_[c].force_n;
    row_[at + 3] = dof_status(c);
  }
  if (!plants_->exchange(applied_, sensors_, dt_s_)) {
    return false;  // the plant failed (fault() says why): the target stops ticking
  }
  if (rows_ != nullptr) {
    rows_->push(row_);
  }
  return true;
}

}  // namespace rths
