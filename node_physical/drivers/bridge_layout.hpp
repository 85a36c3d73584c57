#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "common/core/problems.hpp"
#include "experiment.pb.h"

namespace rths {

// The bridge protocol this layout speaks, printed at the head of its table (bridge_layout_table):
// 2 adds the reply's APPLIED_COUNTER and APPLIED_COMMAND (what the target holds in force), the
// required ENABLE and the disarm that ends a test (ENABLE 0 with the next counter). A target built
// for protocol 1 answers in a datagram the site refuses by its size.
inline constexpr int kBridgeProtocolVersion = 2;

// The SI values of one channel in a bridge datagram. A layout reads and writes only the members it
// has fields for (velocity: commanded in the command datagram, measured in the reply).
struct BridgeChannel {
  double command_m = 0.0;
  double velocity_m_per_s = 0.0;
  double acceleration_m_per_s2 = 0.0;
  double displacement_m = 0.0;
  double force_n = 0.0;
  std::uint32_t status = 0;  // the target's status word, as sent
  double applied_m = 0.0;    // the command the target holds in force (reply's APPLIED_COMMAND)
};

// The values of one datagram: the counter (0: a probe), the enable flag, one entry per channel, and
// in a reply the counter of the command the target holds in force (APPLIED_COUNTER).
struct BridgeFrame {
  std::uint32_t counter = 0;
  bool enable = false;
  std::span<BridgeChannel> channels;
  std::uint32_t applied_counter = 0;
};

// The byte layout of one direction of a UDP bridge (config UdpBridge.command or .reply): the fields in
// order, packed without gaps, each in its own type and byte order. Built once before a run; pack() and
// unpack() neither allocate nor depend on the host's byte order, so the real-time step and a target
// emulator use them alike. Wire value = SI value x scale + offset in both directions; integer types
// round to nearest (halves away from zero) and saturate at their range, and FLOAT at +-FLT_MAX.
class BridgeLayout {
 public:
  using Quantity = config::BridgeField::Quantity;

  struct Field {
    Quantity quantity = config::BridgeField::PADDING;
    std::uint32_t channel = 0;  // meaningful for per-channel quantities only
    config::BridgeField::Type type = config::BridgeField::DOUBLE;
    bool big_endian = false;
    double scale = 1.0;
    double offset = 0.0;
    std::size_t byte_offset = 0;
    std::size_t bytes = 0;
  };

  // The fields of a validated config (config_validate.cpp checks the rules); throws
  // std::invalid_argument for a per-channel field whose channel is not below channels or a zero scale,
  // which validation refuses first with the field's line.
  BridgeLayout(const google::protobuf::RepeatedPtrField<config::BridgeField>& fields, std::size_t channels);

  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  [[nodiscard]] std::size_t channels() const { return channels_; }
  [[nodiscard]] std::span<const Field> fields() const { return fields_; }
  // Whether a field carries this quantity (of this channel, for per-channel quantities).
  [[nodiscard]] bool has(Quantity quantity, std::uint32_t channel = 0) const;

  // Writes every field of frame into datagram, whose size must be bytes() (else nothing is written).
  // frame.channels needs channels() entries. Each field that saturated adds one to
  // saturated_by_channel[its channel] when that span is not empty (only per-channel fields can: the
  // counter and status are carried as they are, and validation keeps ENABLE's values in its type).
  void pack(const BridgeFrame& frame, std::span<std::byte> datagram,
            std::span<std::uint64_t> saturated_by_channel = {}) const;
  // Reads datagram into frame (frame.channels needs channels() entries; members without a field are
  // left as they are). False, with nothing read, when its size is not bytes(): size_mismatch() says so.
  bool unpack(std::span<const std::byte> datagram, BridgeFrame& frame) const;
  // "a 20-byte datagram, expected 24 bytes": for a refused datagram's message.
  [[nodiscard]] std::string size_mismatch(std::size_t received_bytes) const;
  // How far apart two readings of one value may be after it crossed the wire in this layout's field
  // of the quantity (of the channel) and another layout's: a unit of an integer type (of each field,
  // 1 / |scale|), a float's rounding relative to magnitude_si; 0 for doubles but a millionth of a
  // micrometre. For comparing what a target echoes with what was sent.
  [[nodiscard]] double resolution(Quantity quantity, std::uint32_t channel, double magnitude_si) const;

  // Bytes of a field of this type on the wire.
  static std::size_t type_bytes(config::BridgeField::Type type);
  // Whether the quantity belongs to one channel (COMMAND, VELOCITY, ACCELERATION, DISPLACEMENT, FORCE,
  // STATUS, APPLIED_COMMAND) rather than to the datagram (COUNTER, ENABLE, APPLIED_COUNTER, PADDING).
  static bool per_channel(Quantity quantity);

 private:
  std::vector<Field> fields_;
  std::size_t bytes_ = 0;
  std::size_t channels_ = 0;
};

// The table a lab engineer copies into the target's Byte Pack / Byte Unpack blocks (or LabVIEW's
// cluster): a header with the protocol (counter, probe, echo), then for each direction every field's
// offset, bytes, type, byte order, quantity, channel, scale, offset and unit on the wire.
// With a setup transformation (actuators true) the per-channel fields are the setup's actuators:
// the column is headed "actuator" and the protocol says what COMMAND, DISPLACEMENT and FORCE carry.
std::string bridge_layout_table(const config::UdpBridge& bridge, const std::string& site_name, std::size_t channels,
                                double rate_hz, bool actuators = false);

// The rules of one direction's fields (command: site -> target, reply: target -> site), the
// layout's part of a UDP bridge's rules (docs/plant-drivers.md). A per-channel field names a channel
// of the site, or with a setup transformation an actuator (carried "channel" or "actuator", count of
// them); load_cells: the reply must carry each one's force (false for a site whose force model gives
// it). The first broken rule ends the direction's checks.
void check_bridge_fields(const google::protobuf::RepeatedPtrField<config::BridgeField>& fields, bool outgoing,
                         int count, std::string_view carried, bool load_cells, const Checker& check);

}  // namespace rths
