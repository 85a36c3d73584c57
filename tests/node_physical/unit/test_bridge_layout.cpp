// The byte layout of a UDP bridge datagram: offsets, every type in both byte orders against bytes
// written out by hand, the one scale/offset rule in both directions, rounding and saturation of the
// integer types, refusal of a datagram of the wrong size, and the table a lab engineer copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/core/problems.hpp"
#include "node_physical/drivers/bridge_layout.hpp"

namespace rths::test_bridge_layout {
namespace {

using config::BridgeField;
using Fields = google::protobuf::RepeatedPtrField<BridgeField>;

BridgeField field(BridgeField::Quantity quantity, BridgeField::Type type, BridgeField::ByteOrder order,
                  std::uint32_t channel = 0, double scale = 1.0, double offset = 0.0) {
  BridgeField f;
  f.set_quantity(quantity);
  if (BridgeLayout::per_channel(quantity)) f.set_channel(channel);
  f.set_type(type);
  f.set_byte_order(order);
  f.set_scale(scale);
  f.set_offset(offset);
  return f;
}

Fields fields(std::initializer_list<BridgeField> list) {
  Fields out;
  for (const auto& f : list) *out.Add() = f;
  return out;
}

std::vector<std::byte> bytes(std::initializer_list<unsigned> list) {
  std::vector<std::byte> out;
  for (const unsigned b : list) out.push_back(static_cast<std::byte>(b));
  return out;
}

// The same four fields in one byte order: counter, an int32 command in mm, a float velocity and a
// double acceleration.
Fields four_fields(BridgeField::ByteOrder order) {
  return fields({field(BridgeField::COUNTER, BridgeField::UINT32, order),
                 field(BridgeField::COMMAND, BridgeField::INT32, order, 0, 1000.0),
                 field(BridgeField::VELOCITY, BridgeField::FLOAT, order),
                 field(BridgeField::ACCELERATION, BridgeField::DOUBLE, order)});
}

TEST(BridgeLayout, FieldsFollowEachOtherWithoutGaps) {
  const BridgeLayout layout(four_fields(BridgeField::LITTLE), 1);
  ASSERT_EQ(layout.fields().size(), 4U);
  EXPECT_EQ(layout.bytes(), 4U + 4U + 4U + 8U);
  const std::array<std::size_t, 4> offsets{0, 4, 8, 12};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(layout.fields()[i].byte_offset, offsets[i]) << i;
  }
}

// Counter 0x01020304; command -2.5 mm, which rounds away from zero to -3 (0xFFFFFFFD); velocity 1.5
// (IEEE 754 single 0x3FC00000); acceleration -2 (double 0xC000000000000000).
TEST(BridgeLayout, BigEndianBytesAreTheHandWrittenOnes) {
  const BridgeLayout layout(four_fields(BridgeField::BIG), 1);
  std::array<BridgeChannel, 1> channel{};
  channel[0].command_m = -0.0025;
  channel[0].velocity_m_per_s = 1.5;
  channel[0].acceleration_m_per_s2 = -2.0;
  std::vector<std::byte> datagram(layout.bytes());
  std::array<std::uint64_t, 1> saturated{};
  layout.pack(BridgeFrame{0x01020304U, true, channel}, datagram, saturated);
  EXPECT_EQ(saturated[0], 0U);
  EXPECT_EQ(datagram, bytes({0x01, 0x02, 0x03, 0x04, 0xFF, 0xFF, 0xFF, 0xFD, 0x3F, 0xC0,
                             0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
}

TEST(BridgeLayout, LittleEndianBytesAreEachFieldReversed) {
  const BridgeLayout layout(four_fields(BridgeField::LITTLE), 1);
  std::array<BridgeChannel, 1> channel{};
  channel[0].command_m = -0.0025;
  channel[0].velocity_m_per_s = 1.5;
  channel[0].acceleration_m_per_s2 = -2.0;
  std::vector<std::byte> datagram(layout.bytes());
  layout.pack(BridgeFrame{0x01020304U, true, channel}, datagram);
  EXPECT_EQ(datagram, bytes({0x04, 0x03, 0x02, 0x01, 0xFD, 0xFF, 0xFF, 0xFF, 0x00, 0x00,
                             0xC0, 0x3F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0}));
}

// Every type in both orders, as the reply a target sends: values each type holds exactly come back
// exactly (scale 1000: millimetres on the wire, whole millimetres for the integer types).
TEST(BridgeLayout, EveryTypeAndByteOrderRoundTrips) {
  for (const auto order : {BridgeField::LITTLE, BridgeField::BIG}) {
    for (const auto type : {BridgeField::DOUBLE, BridgeField::FLOAT, BridgeField::INT32, BridgeField::UINT32}) {
      SCOPED_TRACE(BridgeField::Type_Name(type) + " " + BridgeField::ByteOrder_Name(order));
      const BridgeLayout layout(
          fields({field(BridgeField::PADDING, type, order), field(BridgeField::COUNTER, BridgeField::UINT32, order),
                  field(BridgeField::DISPLACEMENT, type, order, 1, 1000.0),
                  field(BridgeField::FORCE, type, order, 0, 1.0, 0.0),
                  field(BridgeField::STATUS, BridgeField::UINT32, order, 1),
                  field(BridgeField::APPLIED_COUNTER, BridgeField::UINT32, order),
                  field(BridgeField::APPLIED_COMMAND, type, order, 0, 1000.0)}),
          2);
      std::array<BridgeChannel, 2> sent{};
      sent[1].displacement_m = 0.012;  // 12 mm
      sent[0].force_n = 4096.0;
      sent[1].status = 0xDEADBEEFU;
      sent[0].applied_m = 0.007;  // 7 mm
      std::vector<std::byte> datagram(layout.bytes());
      std::array<std::uint64_t, 2> saturated{};
      layout.pack(BridgeFrame{4294967295U, true, sent, 2147483649U}, datagram, saturated);
      EXPECT_EQ(saturated, (std::array<std::uint64_t, 2>{}));
      // The padding's bytes are zeros.
      for (std::size_t i = 0; i < BridgeLayout::type_bytes(type); ++i) EXPECT_EQ(datagram[i], std::byte{0});
      std::array<BridgeChannel, 2> got{};
      BridgeFrame frame{0, false, got};
      ASSERT_TRUE(layout.unpack(datagram, frame));
      EXPECT_EQ(frame.counter, 4294967295U);
      EXPECT_EQ(got[1].displacement_m * 1000.0, 12.0);  // exact in every type: 12 on the wire
      EXPECT_EQ(got[0].force_n, 4096.0);
      EXPECT_EQ(got[1].status, 0xDEADBEEFU);
      EXPECT_EQ(frame.applied_counter, 2147483649U);
      EXPECT_EQ(got[0].applied_m * 1000.0, 7.0);
      EXPECT_EQ(got[0].displacement_m, 0.0);  // no field: untouched
    }
  }
}

// Wire value = SI value x scale + offset, both ways: a command of 12.3 mm with offset 5 goes out as
// 17.3 (17 in an int32), and a reply's 17.3 comes back as 12.3 mm.
TEST(BridgeLayout, ScaleAndOffsetAreOneRuleForBothDirections) {
  const BridgeLayout out(fields({field(BridgeField::COMMAND, BridgeField::DOUBLE, BridgeField::LITTLE, 0, 1000, 5),
                                 field(BridgeField::VELOCITY, BridgeField::INT32, BridgeField::BIG, 0, 1000, 5)}),
                         1);
  std::array<BridgeChannel, 1> channel{};
  channel[0].command_m = 0.0123;
  channel[0].velocity_m_per_s = 0.0123;
  std::vector<std::byte> datagram(out.bytes());
  out.pack(BridgeFrame{0, true, channel}, datagram);
  double wire = 0;
  std::memcpy(&wire, datagram.data(), 8);  // little endian on this host (x86, ARM)
  EXPECT_DOUBLE_EQ(wire, 0.0123 * 1000 + 5);
  EXPECT_EQ(std::vector<std::byte>(datagram.begin() + 8, datagram.end()), bytes({0, 0, 0, 17}));

  const BridgeLayout in(
      fields({field(BridgeField::DISPLACEMENT, BridgeField::DOUBLE, BridgeField::LITTLE, 0, 1000, 5)}), 1);
  std::vector<std::byte> reply(8);
  const double sent = 17.3;
  std::memcpy(reply.data(), &sent, 8);
  std::array<BridgeChannel, 1> got{};
  BridgeFrame frame{0, false, got};
  ASSERT_TRUE(in.unpack(reply, frame));
  EXPECT_DOUBLE_EQ(got[0].displacement_m, (17.3 - 5) / 1000);
}

// One int32 command per channel (the value x 1, offset 0): halves round away from zero, beyond the
// range saturates and counts (on the channel of the field), NaN becomes 0 and counts.
TEST(BridgeLayout, IntegersRoundToNearestAndSaturate) {
  struct Case {
    BridgeField::Type type;
    double value;
    std::uint32_t bits;  // expected on the wire
    bool saturated;
  };
  const std::vector<Case> cases{
      {BridgeField::INT32, 2.5, 3U, false},
      {BridgeField::INT32, -2.5, static_cast<std::uint32_t>(-3), false},
      {BridgeField::INT32, 2.4999, 2U, false},
      {BridgeField::INT32, 3e9, 0x7FFFFFFFU, true},
      {BridgeField::INT32, -3e9, 0x80000000U, true},
      {BridgeField::INT32, std::nan(""), 0U, true},
      {BridgeField::UINT32, 4294967294.6, 4294967295U, false},
      {BridgeField::UINT32, 4294967295.5, 4294967295U, true},
      {BridgeField::UINT32, -0.4, 0U, false},
      {BridgeField::UINT32, -1.0, 0U, true},
      {BridgeField::FLOAT, 1e39, std::bit_cast<std::uint32_t>(FLT_MAX), true},
      {BridgeField::FLOAT, -1e39, std::bit_cast<std::uint32_t>(-FLT_MAX), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(BridgeField::Type_Name(c.type) + " " + std::to_string(c.value));
    const BridgeLayout layout(fields({field(BridgeField::COMMAND, BridgeField::DOUBLE, BridgeField::BIG, 0),
                                      field(BridgeField::COMMAND, c.type, BridgeField::BIG, 1)}),
                              2);
    std::array<BridgeChannel, 2> channels{};
    channels[1].command_m = c.value;
    std::vector<std::byte> datagram(layout.bytes());
    std::array<std::uint64_t, 2> per_channel{};
    layout.pack(BridgeFrame{1, true, channels}, datagram, per_channel);
    EXPECT_EQ(per_channel[0], 0U);
    EXPECT_EQ(per_channel[1], c.saturated ? 1U : 0U);
    const std::uint32_t bits =
        (std::to_integer<std::uint32_t>(datagram[8]) << 24) | (std::to_integer<std::uint32_t>(datagram[9]) << 16) |
        (std::to_integer<std::uint32_t>(datagram[10]) << 8) | std::to_integer<std::uint32_t>(datagram[11]);
    EXPECT_EQ(bits, c.bits);
  }
}

TEST(BridgeLayout, DatagramOfTheWrongSizeIsRefusedWithBothSizes) {
  const BridgeLayout layout(fields({field(BridgeField::COUNTER, BridgeField::UINT32, BridgeField::LITTLE),
                                    field(BridgeField::DISPLACEMENT, BridgeField::DOUBLE, BridgeField::LITTLE),
                                    field(BridgeField::FORCE, BridgeField::DOUBLE, BridgeField::LITTLE),
                                    field(BridgeField::STATUS, BridgeField::UINT32, BridgeField::LITTLE)}),
                            1);
  ASSERT_EQ(layout.bytes(), 24U);
  std::array<BridgeChannel, 1> got{};
  got[0].displacement_m = 7.0;
  BridgeFrame frame{9, false, got};
  for (const std::size_t size : {20U, 25U, 0U}) {
    const std::vector<std::byte> datagram(size, std::byte{0x11});
    EXPECT_FALSE(layout.unpack(datagram, frame)) << size;
    EXPECT_EQ(frame.counter, 9U);  // nothing read
    EXPECT_EQ(got[0].displacement_m, 7.0);
  }
  EXPECT_EQ(layout.size_mismatch(20), "a 20-byte datagram, expected 24 bytes");
}

// The layout's one guard (a field of a channel the site does not have would index past its
// channels) agrees with the bridge's rules on its boundary: the last channel is accepted by both,
// the next refused by both. Scale and offset are the rules' alone.
TEST(BridgeLayout, TheChannelGuardAgreesWithTheRulesOnItsBoundary) {
  constexpr int kChannels = 2;
  for (const std::uint32_t channel : {0U, 1U, 2U, 3U}) {
    const Fields command = fields({field(BridgeField::COUNTER, BridgeField::UINT32, BridgeField::LITTLE),
                                   field(BridgeField::COMMAND, BridgeField::DOUBLE, BridgeField::LITTLE, channel)});
    Problems problems;
    const Checker check(problems);
    check.section([&] { check_bridge_fields(command, true, kChannels, "channel", false, check); });
    const bool refused = std::any_of(problems.lines().begin(), problems.lines().end(), [](const std::string& line) {
      return line.find("channel: is ") != std::string::npos;
    });
    EXPECT_EQ(refused, channel >= kChannels) << channel << ": " << ::testing::PrintToString(problems.lines());
    if (refused) {
      EXPECT_THROW(BridgeLayout(command, kChannels), std::invalid_argument) << channel;
    } else {
      EXPECT_NO_THROW(BridgeLayout(command, kChannels)) << channel;
    }
  }
}

// The table names each field's offset, size, type, order, quantity, channel, scale, offset and unit,
// and says what counter 0 means.
TEST(BridgeLayout, TableListsEveryFieldForTheTargetsBlocks) {
  config::UdpBridge bridge;
  bridge.set_target("192.168.7.5:47100");
  *bridge.mutable_command() = fields({field(BridgeField::COUNTER, BridgeField::UINT32, BridgeField::LITTLE),
                                      field(BridgeField::COMMAND, BridgeField::FLOAT, BridgeField::BIG, 0, 1000.0),
                                      field(BridgeField::ENABLE, BridgeField::UINT32, BridgeField::LITTLE)});
  *bridge.mutable_reply() =
      fields({field(BridgeField::COUNTER, BridgeField::UINT32, BridgeField::LITTLE),
              field(BridgeField::PADDING, BridgeField::UINT32, BridgeField::LITTLE),
              field(BridgeField::DISPLACEMENT, BridgeField::DOUBLE, BridgeField::LITTLE, 0, 1000.0),
              field(BridgeField::FORCE, BridgeField::DOUBLE, BridgeField::LITTLE, 0, 1e-3)});
  const std::string table = bridge_layout_table(bridge, "spring", 1, 1024);
  EXPECT_NE(table.find("192.168.7.5:47100"), std::string::npos) << table;
  EXPECT_NE(table.find("COUNTER 0 is a read-only probe"), std::string::npos) << table;
  EXPECT_NE(table.find("UDP bridge (protocol 2) of site \"spring\""), std::string::npos) << table;
  EXPECT_NE(table.find("do not act on its command (ENABLE 0)"), std::string::npos) << table;
  EXPECT_NE(table.find("  - Disarm: after its stop ramp the site sends ENABLE 0 with the next counter."),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  - APPLIED_COUNTER and APPLIED_COMMAND: the counter and the command the target holds"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("command (site -> target): 12 bytes"), std::string::npos) << table;
  EXPECT_NE(table.find("reply (target -> site): 24 bytes"), std::string::npos) << table;
  // offset, bytes, type, order, quantity, channel, scale, offset, unit
  EXPECT_NE(table.find("     4      4  single  big     COMMAND                 0          1000         0  mm"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("     8      4  uint32  little  ENABLE                  -             1         0  0 off, 1 on"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("    16      8  double  little  FORCE                   0         0.001         0  kN"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace rths::test_bridge_layout
