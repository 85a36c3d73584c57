#include "node_physical/drivers/bridge_layout.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "common/transport/link.hpp"

namespace rths {
namespace {

using config::BridgeField;

// The bytes of an unsigned integer in the given order, whatever the host's own order is.
template <class Bits>
void put(std::byte* at, Bits bits, bool big_endian) {
  constexpr std::size_t kBytes = sizeof(Bits);
  for (std::size_t i = 0; i < kBytes; ++i) {
    const std::size_t shift = 8 * (big_endian ? kBytes - 1 - i : i);
    at[i] = static_cast<std::byte>((bits >> shift) & 0xFFU);
  }
}

template <class Bits>
Bits get(const std::byte* at, bool big_endian) {
  constexpr std::size_t kBytes = sizeof(Bits);
  Bits bits = 0;
  for (std::size_t i = 0; i < kBytes; ++i) {
    const std::size_t shift = 8 * (big_endian ? kBytes - 1 - i : i);
    bits |= static_cast<Bits>(std::to_integer<unsigned>(at[i])) << shift;
  }
  return bits;
}

// Round to nearest, halves away from zero (std::round), then clamp to Int's range; NaN becomes 0.
// Each clamp (and NaN) counts as a saturation.
template <class Int>
Int saturate(double wire, std::size_t& saturated) {
  constexpr auto kLow = static_cast<double>(std::numeric_limits<Int>::min());
  constexpr auto kHigh = static_cast<double>(std::numeric_limits<Int>::max());
  if (std::isnan(wire)) {
    ++saturated;
    return 0;
  }
  const double rounded = std::round(wire);
  if (rounded < kLow) {
    ++saturated;
    return std::numeric_limits<Int>::min();
  }
  if (rounded > kHigh) {
    ++saturated;
    return std::numeric_limits<Int>::max();
  }
  return static_cast<Int>(rounded);
}

void encode(const BridgeLayout::Field& f, double wire, std::byte* at, std::size_t& saturated) {
  switch (f.type) {
    case BridgeField::DOUBLE:
      put(at, std::bit_cast<std::uint64_t>(wire), f.big_endian);
      return;
    case BridgeField::FLOAT: {
      constexpr double kMax = std::numeric_limits<float>::max();
      if (wire > kMax || wire < -kMax) {
        ++saturated;
        wire = std::clamp(wire, -kMax, kMax);
      }
      put(at, std::bit_cast<std::uint32_t>(static_cast<float>(wire)), f.big_endian);
      return;
    }
    case BridgeField::INT32:
      put(at, std::bit_cast<std::uint32_t>(saturate<std::int32_t>(wire, saturated)), f.big_endian);
      return;
    case BridgeField::UINT32:
      put(at, saturate<std::uint32_t>(wire, saturated), f.big_endian);
      return;
  }
}

// A counter or status word is carried as it is: its 32 bits in an integer field, its value in a
// floating one.
void encode_word(const BridgeLayout::Field& f, std::uint32_t word, std::byte* at, std::size_t& saturated) {
  if (f.type == BridgeField::INT32 || f.type == BridgeField::UINT32) {
    put(at, word, f.big_endian);
  } else {
    encode(f, static_cast<double>(word), at, saturated);
  }
}

// The wire value of a field as a double (exact for every type).
double decode(const BridgeLayout::Field& f, const std::byte* at) {
  switch (f.type) {
    case BridgeField::DOUBLE:
      return std::bit_cast<double>(get<std::uint64_t>(at, f.big_endian));
    case BridgeField::FLOAT:
      return std::bit_cast<float>(get<std::uint32_t>(at, f.big_endian));
    case BridgeField::INT32:
      return std::bit_cast<std::int32_t>(get<std::uint32_t>(at, f.big_endian));
    case BridgeField::UINT32:
      return get<std::uint32_t>(at, f.big_endian);
  }
  return 0.0;
}

// The counter or status word encode_word() wrote.
std::uint32_t decode_word(const BridgeLayout::Field& f, const std::byte* at) {
  if (f.type == BridgeField::INT32 || f.type == BridgeField::UINT32) {
    return get<std::uint32_t>(at, f.big_endian);
  }
  std::size_t ignored = 0;
  return saturate<std::uint32_t>(decode(f, at), ignored);
}

const char* type_name(BridgeField::Type type) {
  switch (type) {
    case BridgeField::DOUBLE:
      return "double";
    case BridgeField::FLOAT:
      return "single";  // Simulink's name for a 4-byte float
    case BridgeField::INT32:
      return "int32";
    case BridgeField::UINT32:
      return "uint32";
  }
  return "?";
}

// A unit the wire may carry a quantity in: SI value x per_si is the value in it.
struct Unit {
  const char* name;
  double per_si;
};

// The unit on the wire: a known unit when scale is one (within 1e-6), else "SI unit x scale".
std::string wire_unit(const BridgeLayout::Field& f) {
  static constexpr Unit kLength[] = {{"m", 1.0}, {"cm", 1e2}, {"mm", 1e3}, {"um", 1e6}, {"in", 1.0 / 0.0254}};
  static constexpr Unit kVelocity[] = {{"m/s", 1.0}, {"cm/s", 1e2}, {"mm/s", 1e3}, {"in/s", 1.0 / 0.0254}};
  static constexpr Unit kAcceleration[] = {
      {"m/s^2", 1.0}, {"cm/s^2", 1e2}, {"mm/s^2", 1e3}, {"g", 1.0 / 9.80665}, {"in/s^2", 1.0 / 0.0254}};
  // 1 lbf = 4.4482216152605 N (NIST SP 811), 1 kip = 1000 lbf.
  static constexpr Unit kForce[] = {
      {"N", 1.0}, {"kN", 1e-3}, {"lbf", 1.0 / 4.4482216152605}, {"kip", 1e-3 / 4.4482216152605}};
  std::span<const Unit> units;
  switch (f.quantity) {
    case BridgeField::COMMAND:
    case BridgeField::DISPLACEMENT:
      units = kLength;
      break;
    case BridgeField::VELOCITY:
      units = kVelocity;
      break;
    case BridgeField::ACCELERATION:
      units = kAcceleration;
      break;
    case BridgeField::FORCE:
      units = kForce;
      break;
    case BridgeField::APPLIED_COMMAND:
      units = kLength;
      break;
    case BridgeField::COUNTER:
    case BridgeField::APPLIED_COUNTER:
      return "count";
    case BridgeField::STATUS:
      return "bits";
    case BridgeField::ENABLE:
      return fmt::format("{:g} off, {:g} on", f.offset, f.scale + f.offset);
    case BridgeField::PADDING:
      return "(zeros)";
  }
  for (const Unit& u : units) {
    if (std::abs(f.scale - u.per_si) <= 1e-6 * u.per_si) {
      return u.name;
    }
  }
  return fmt::format("{} x {:g}", units.front().name, f.scale);
}

std::string quantity_name(BridgeField::Quantity quantity) {
  return BridgeField::Quantity_Name(quantity);
}

std::string direction_table(const char* title, const BridgeLayout& layout, bool actuators) {
  std::string out = fmt::format("{}: {} bytes\n", title, layout.bytes());
  out += fmt::format("{:>6}  {:>5}  {:<6}  {:<6}  {:<15}  {:>8}  {:>12}  {:>8}  {}\n", "offset", "bytes", "type",
                     "order", "quantity", actuators ? "actuator" : "channel", "scale", "offset", "unit on the wire");
  for (const BridgeLayout::Field& f : layout.fields()) {
    const std::string channel = BridgeLayout::per_channel(f.quantity) ? std::to_string(f.channel) : "-";
    out += fmt::format("{:>6}  {:>5}  {:<6}  {:<6}  {:<15}  {:>8}  {:>12g}  {:>8g}  {}\n", f.byte_offset, f.bytes,
                       type_name(f.type), f.big_endian ? "big" : "little", quantity_name(f.quantity), channel, f.scale,
                       f.offset, wire_unit(f));
  }
  return out;
}

}  // namespace

std::size_t BridgeLayout::type_bytes(config::BridgeField::Type type) {
  return type == BridgeField::DOUBLE ? 8 : 4;
}

bool BridgeLayout::per_channel(Quantity quantity) {
  return quantity != BridgeField::COUNTER && quantity != BridgeField::ENABLE && quantity != BridgeField::PADDING &&
         quantity != BridgeField::APPLIED_COUNTER;
}

BridgeLayout::BridgeLayout(const google::protobuf::RepeatedPtrField<config::BridgeField>& fields, std::size_t channels)
    : channels_(channels) {
  fields_.reserve(static_cast<std::size_t>(fields.size()));
  for (const config::BridgeField& given : fields) {
    Field f;
    f.quantity = given.quantity();
    f.channel = given.channel();
    f.type = given.type();
    f.big_endian = given.byte_order() == BridgeField::BIG;
    f.scale = given.scale();
    f.offset = given.offset();
    f.byte_offset = bytes_;
    f.bytes = type_bytes(f.type);
    if (per_channel(f.quantity) && f.channel >= channels) {
      throw std::invalid_argument(fmt::format("bridge field {} of channel {}: the site has {} channel(s)",
                                              quantity_name(f.quantity), f.channel, channels));
    }
    bytes_ += f.bytes;
    fields_.push_back(f);
  }
}

bool BridgeLayout::has(Quantity quantity, std::uint32_t channel) const {
  return std::any_of(fields_.begin(), fields_.end(), [&](const Field& f) {
    return f.quantity == quantity && (!per_channel(quantity) || f.channel == channel);
  });
}

void BridgeLayout::pack(const BridgeFrame& frame, std::span<std::byte> datagram,
                        std::span<std::uint64_t> saturated_by_channel) const {
  if (datagram.size() != bytes_ || frame.channels.size() < channels_) {
    return;
  }
  std::size_t saturated = 0;
  for (const Field& f : fields_) {
    std::byte* at = datagram.data() + f.byte_offset;
    double si = 0.0;
    switch (f.quantity) {
      case BridgeField::PADDING:
        std::fill_n(at, f.bytes, std::byte{0});
        continue;
      case BridgeField::COUNTER:
        encode_word(f, frame.counter, at, saturated);  // validation asks for UINT32, scale 1, offset 0
        continue;
      case BridgeField::APPLIED_COUNTER:
        encode_word(f, frame.applied_counter, at, saturated);
        continue;
      case BridgeField::STATUS:
        encode_word(f, frame.channels[f.channel].status, at, saturated);
        continue;
      case BridgeField::ENABLE:
        si = frame.enable ? 1.0 : 0.0;
        break;
      case BridgeField::COMMAND:
        si = frame.channels[f.channel].command_m;
        break;
      case BridgeField::VELOCITY:
        si = frame.channels[f.channel].velocity_m_per_s;
        break;
      case BridgeField::ACCELERATION:
        si = frame.channels[f.channel].acceleration_m_per_s2;
        break;
      case BridgeField::DISPLACEMENT:
        si = frame.channels[f.channel].displacement_m;
        break;
      case BridgeField::FORCE:
        si = frame.channels[f.channel].force_n;
        break;
      case BridgeField::APPLIED_COMMAND:
        si = frame.channels[f.channel].applied_m;
        break;
    }
    const std::size_t before = saturated;
    encode(f, si * f.scale + f.offset, at, saturated);
    if (saturated != before && per_channel(f.quantity) && f.channel < saturated_by_channel.size()) {
      ++saturated_by_channel[f.channel];
    }
  }
}

bool BridgeLayout::unpack(std::span<const std::byte> datagram, BridgeFrame& frame) const {
  if (datagram.size() != bytes_ || frame.channels.size() < channels_) {
    return false;
  }
  for (const Field& f : fields_) {
    const std::byte* at = datagram.data() + f.byte_offset;
    switch (f.quantity) {
      case BridgeField::PADDING:
        continue;
      case BridgeField::COUNTER:
        frame.counter = decode_word(f, at);
        continue;
      case BridgeField::APPLIED_COUNTER:
        frame.applied_counter = decode_word(f, at);
        continue;
      case BridgeField::STATUS:
        frame.channels[f.channel].status = decode_word(f, at);
        continue;
      default:
        break;
    }
    const double si = (decode(f, at) - f.offset) / f.scale;
    switch (f.quantity) {
      case BridgeField::ENABLE:
        frame.enable = si > 0.5;  // 1 on, 0 off: the nearer of the two
        break;
      case BridgeField::COMMAND:
        frame.channels[f.channel].command_m = si;
        break;
      case BridgeField::VELOCITY:
        frame.channels[f.channel].velocity_m_per_s = si;
        break;
      case BridgeField::ACCELERATION:
        frame.channels[f.channel].acceleration_m_per_s2 = si;
        break;
      case BridgeField::DISPLACEMENT:
        frame.channels[f.channel].displacement_m = si;
        break;
      case BridgeField::FORCE:
        frame.channels[f.channel].force_n = si;
        break;
      case BridgeField::APPLIED_COMMAND:
        frame.channels[f.channel].applied_m = si;
        break;
      default:
        break;
    }
  }
  return true;
}

std::string BridgeLayout::size_mismatch(std::size_t received_bytes) const {
  return fmt::format("a {}-byte datagram, expected {} bytes", received_bytes, bytes_);
}

double BridgeLayout::resolution(Quantity quantity, std::uint32_t channel, double magnitude_si) const {
  constexpr double kDoubleSlackM = 1e-12;  // a double's last bits after scale and offset, and back
  for (const Field& f : fields_) {
    if (f.quantity != quantity || (per_channel(quantity) && f.channel != channel)) continue;
    switch (f.type) {
      case BridgeField::DOUBLE:
        return kDoubleSlackM + 1e-15 * std::abs(magnitude_si);
      case BridgeField::FLOAT:
        // Half an ulp of a float (2^-24 relative) around the wire value, in SI, doubled for slack.
        return kDoubleSlackM +
               std::ldexp(std::abs(magnitude_si * f.scale) + std::abs(f.offset), -23) / std::abs(f.scale);
      case BridgeField::INT32:
      case BridgeField::UINT32:
        return kDoubleSlackM + 1.0 / std::abs(f.scale);
    }
  }
  return kDoubleSlackM;
}

std::string bridge_layout_table(const config::UdpBridge& bridge, const std::string& site_name, std::size_t channels,
                                double rate_hz, bool actuators) {
  const BridgeLayout command(bridge.command(), channels);
  const BridgeLayout reply(bridge.reply(), channels);
  const bool status = std::any_of(reply.fields().begin(), reply.fields().end(),
                                  [](const BridgeLayout::Field& f) { return f.quantity == BridgeField::STATUS; });
  std::string out = fmt::format(
      "UDP bridge (protocol {}) of site \"{}\" to the real-time target at {}:\n"
      "one datagram each way per site step ({:g} Hz).\n"
      "Protocol:\n"
      "  - The site sends the command datagram every step with COUNTER = 1, 2, 3, ... and ENABLE 1 (never\n"
      "    0 once started; after 4294967295 it goes on at 1).\n"
      "  - The target answers every datagram at once with the reply datagram: its sensors as sampled at\n"
      "    its last tick, before the new command acts, and COUNTER = the counter of the datagram answered.\n"
      "  - The target takes a command only from the site (lock to the site's address and port, or to\n"
      "    the sender of the first command taken) and only with a counter newer than the one in force\n"
      "    (serial-number order: (int32)(new - old) > 0); anything else changes nothing, not even its\n"
      "    watchdog, which trips when no new counter came for its time.\n"
      "  - APPLIED_COUNTER and APPLIED_COMMAND: the counter and the command the target holds in force\n"
      "    after taking the datagram (0 before any). The site stops (interlock, exit 8) when they are not\n"
      "    the ones it just sent: the actuator does not follow the site.\n"
      "  - COUNTER 0 is a read-only probe (the site's start sends it until the target answers, within\n"
      "    open_timeout_s = {:g} s): answer it with the sensors, and do not act on its command (ENABLE 0).\n"
      "  - Disarm: after its stop ramp the site sends ENABLE 0 with the next counter. Take its counter as\n"
      "    the one in force (answer APPLIED_COUNTER = it), keep holding the command in force, switch the\n"
      "    watchdog off and take no further command until restarted. Nothing else disarms.{}\n"
      "  - A step waits reply_timeout_s = {:g} s for its own echo; an older echo is discarded; after\n"
      "    max_missed_replies = {} steps in a row without one the site stops. A reply of another size is\n"
      "    refused at once and stops the site.\n"
      "  - Wire value = SI value x scale + offset. int32/uint32 round to nearest (halves away from zero)\n"
      "    and saturate; single saturates at +-3.4e38. Offsets in bytes from the datagram's start.\n"
      "  - In Simulink: UDP Receive filtered to the site's address, Byte Unpack, an Enabled Subsystem with\n"
      "    Memory blocks for the counter and command in force, Byte Pack, UDP Send; in LabVIEW RT the same\n"
      "    with shift registers (docs/plant-drivers.md, \"The table for the target's blocks\").\n\n",
      kBridgeProtocolVersion, site_name, bridge.target(), rate_hz, bridge.open_timeout_s(),
      status
          ? fmt::format("\n    While disarmed, set one of the status bits 0x{:x} (fault_bits): a site is then refused.",
                        bridge.fault_bits())
          : std::string(),
      bridge.reply_timeout_s(), bridge.max_missed_replies());
  if (actuators) {
    out +=
        "The site has a setup transformation: the datagrams carry its actuators (column \"actuator\", from 0),\n"
        "COMMAND and DISPLACEMENT are actuator strokes (length changes from the reference length, positive\n"
        "extending), FORCE is the actuator's load cell (positive in compression).\n\n";
  }
  out += direction_table("command (site -> target)", command, actuators);
  out += "\n";
  out += direction_table("reply (target -> site)", reply, actuators);
  return out;
}

void check_bridge_fields(const google::protobuf::RepeatedPtrField<config::BridgeField>& fields, bool outgoing,
                         int count, std::string_view carried, bool load_cells, const Checker& check) {
  using config::BridgeField;
  const std::string_view direction = outgoing ? "command" : "reply";
  const std::vector<BridgeField::Quantity> allowed =
      outgoing ? std::vector{BridgeField::PADDING,  BridgeField::COUNTER,      BridgeField::COMMAND,
                             BridgeField::VELOCITY, BridgeField::ACCELERATION, BridgeField::ENABLE}
               : std::vector{BridgeField::PADDING,         BridgeField::COUNTER,        BridgeField::VELOCITY,
                             BridgeField::DISPLACEMENT,    BridgeField::FORCE,          BridgeField::STATUS,
                             BridgeField::APPLIED_COUNTER, BridgeField::APPLIED_COMMAND};
  std::string allowed_names;
  for (const auto q : allowed) {
    allowed_names += (allowed_names.empty() ? "" : ", ") + BridgeField::Quantity_Name(q);
  }
  // The first field of each (quantity, channel): a second one is named with it.
  std::map<std::pair<int, std::uint32_t>, int> first;
  std::size_t bytes = 0;
  for (int i = 0; i < fields.size(); ++i) {
    const BridgeField& f = fields.Get(i);
    const Checker at = check.at("", i);
    at.require(f.has_quantity(), "quantity", fmt::format("missing; expected one of {}", allowed_names));
    const BridgeField::Quantity q = f.quantity();
    const std::string name = BridgeField::Quantity_Name(q);
    at.require(
        std::find(allowed.begin(), allowed.end(), q) != allowed.end(), "quantity",
        fmt::format("is {}, which the {} datagram does not carry; expected one of {}", name, direction, allowed_names));
    if (BridgeLayout::per_channel(q)) {
      at.require(f.channel() < static_cast<std::uint32_t>(count), "channel",
                 fmt::format("is {}, expected {} of the site{}, 0 to {}", f.channel(),
                             carried == "channel" ? "a channel" : "an actuator", carried == "channel" ? "" : "'s setup",
                             count - 1));
    } else {
      at.require(!f.has_channel(), "channel",
                 fmt::format("is given, but {} belongs to the datagram, not to a channel; leave it out", name));
    }
    at.require(f.scale() != 0, "scale",
               "is 0; expected a finite, non-zero factor (wire value = SI value x scale + offset)");
    const bool integer = f.type() == BridgeField::INT32 || f.type() == BridgeField::UINT32;
    const bool counter = q == BridgeField::COUNTER || q == BridgeField::APPLIED_COUNTER;
    if (counter) {
      at.require(f.type() == BridgeField::UINT32, "type",
                 fmt::format("is {}; {} is UINT32", BridgeField::Type_Name(f.type()), name));
    }
    if (q == BridgeField::STATUS) {
      at.require(integer, "type",
                 fmt::format("is {}; a status word is a bit field: expected INT32 or UINT32",
                             BridgeField::Type_Name(f.type())));
    }
    if (counter || q == BridgeField::STATUS) {
      at.require(f.scale() == 1 && f.offset() == 0, f.scale() != 1 ? "scale" : "offset",
                 fmt::format("is given; {} is carried as it is (scale 1, offset 0)", name));
    }
    if (q == BridgeField::ENABLE && integer) {
      // Enable's two wire values must fit its type: it never saturates.
      const double low = f.type() == BridgeField::INT32 ? -2147483648.0 : 0.0;
      const double high = f.type() == BridgeField::INT32 ? 2147483647.0 : 4294967295.0;
      for (const double wire : {f.offset(), f.scale() + f.offset()}) {
        at.require(std::round(wire) >= low && std::round(wire) <= high, "offset",
                   fmt::format("puts ENABLE's wire value {:g} outside {} ({:g} to {:g})", wire,
                               BridgeField::Type_Name(f.type()), low, high));
      }
    }
    if (q != BridgeField::PADDING) {
      const auto key = std::pair{static_cast<int>(q), BridgeLayout::per_channel(q) ? f.channel() : 0U};
      if (const auto seen = first.find(key); seen != first.end()) {
        at.fail("quantity", fmt::format("is a second {}{} (also {}[{}]); expected one", name,
                                        BridgeLayout::per_channel(q) ? fmt::format(" of {} {}", carried, f.channel())
                                                                     : std::string(),
                                        direction, seen->second));
      }
      first.emplace(key, i);
    }
    bytes += BridgeLayout::type_bytes(f.type());
  }
  const auto require_one = [&](BridgeField::Quantity q, int channel, std::string_view why) {
    const auto key = std::pair{static_cast<int>(q), channel < 0 ? 0U : static_cast<std::uint32_t>(channel)};
    if (first.contains(key)) return;
    const std::string name = BridgeField::Quantity_Name(q);
    check.fail("", channel < 0 ? fmt::format("has no {}; expected one {}", name, why)
                               : fmt::format("has no {} of {} {}; expected one per {} {}", name, carried, channel,
                                             carried, why));
  };
  require_one(BridgeField::COUNTER, -1,
              outgoing ? "UINT32 field with the step counter" : "UINT32 field echoing the counter answered");
  // Bridge protocol 2 (docs/plant-drivers.md): the site disarms the target with ENABLE 0, and the
  // reply says which command the target holds, so that the site sees when it is not its own.
  if (outgoing) {
    require_one(BridgeField::ENABLE, -1,
                "(1 in every step, 0 in a probe and in the disarm that ends a test; bridge protocol 2)");
  } else {
    require_one(BridgeField::APPLIED_COUNTER, -1,
                "UINT32 field with the counter of the command the target holds in force (bridge protocol 2: the "
                "site stops when it is not the one it sent)");
  }
  const bool strokes = carried != "channel";
  for (int c = 0; c < count; ++c) {
    if (outgoing) {
      require_one(BridgeField::COMMAND, c, strokes ? "(the stroke command)" : "(the displacement command)");
    } else {
      require_one(BridgeField::DISPLACEMENT, c, strokes ? "(the measured stroke)" : "(the measured displacement)");
      if (load_cells) require_one(BridgeField::FORCE, c, strokes ? "(the load cell's force)" : "(the measured force)");
      require_one(BridgeField::APPLIED_COMMAND, c, "(the command the target holds in force; bridge protocol 2)");
    }
  }
  check.require(
      bytes <= kMaxDatagramBytes, "",
      fmt::format("lays out {} bytes; expected at most {} (one unfragmented UDP datagram)", bytes, kMaxDatagramBytes));
}

}  // namespace rths
