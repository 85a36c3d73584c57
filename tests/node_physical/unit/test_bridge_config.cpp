// A site's UDP bridge in the experiment file, as a lab engineer meets it through
// `rths-physical layout`: a valid bridge prints its table; every rule a bridge must keep refuses a
// broken one with one line naming the file, line and field, exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <string>

#include "support/process.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_bridge_config {
namespace {

namespace fs = std::filesystem;

// The driver block of bridge_config().
std::string driver_block() {
  return R"(  driver {
    udp_bridge {
      target: "127.0.0.1:47100"
      reply_timeout_s: 0.0004
      command { quantity: COUNTER type: UINT32 }
      command { quantity: COMMAND channel: 0 scale: 1000 }
      command { quantity: COMMAND channel: 1 scale: 1000 type: FLOAT }
      command { quantity: ENABLE type: UINT32 }
      reply { quantity: COUNTER type: UINT32 }
      reply { quantity: DISPLACEMENT channel: 0 scale: 1000 }
      reply { quantity: FORCE channel: 0 }
      reply { quantity: DISPLACEMENT channel: 1 scale: 1000 type: FLOAT }
      reply { quantity: FORCE channel: 1 type: FLOAT }
      reply { quantity: STATUS channel: 0 type: UINT32 }
      reply { quantity: APPLIED_COUNTER type: UINT32 }
      reply { quantity: APPLIED_COMMAND channel: 0 scale: 1000 }
      reply { quantity: APPLIED_COMMAND channel: 1 scale: 1000 type: FLOAT }
    }
  }
)";
}

// Two channels behind a bridge: the per-channel rules have a second channel to break.
std::string bridge_config() {
  return R"(name: "bridge"
structure {
  dofs: 2
  mass_kg: [2701, 0, 0, 2701]
  stiffness_n_per_m: [558343, -279171, -279171, 279171]
}
ground_motion { synthetic { seed: 3 duration_s: 2 } }
site {
  name: "lab"
  influence: [-1, 0, 0, -1]
  safe_motion { start_ramp_s: 0 }
  channel {
    specimen { spring { stiffness_n_per_m: 55834.4 } }
    stroke_limit_m: 0.1 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4
  }
  channel {
    specimen { spring { stiffness_n_per_m: 20000 } }
    stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4
  }
)" + driver_block() +
         "}\n";
}

// 175 eight-byte paddings: with the 20 bytes of the other fields, 1420 bytes.
std::string paddings() {
  std::string out;
  for (int i = 0; i < 175; ++i) out += " command { quantity: PADDING }";
  return out;
}

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Result layout(const fs::path& dir, const std::string& text) {
  const fs::path config = dir / "bridge.textproto";
  std::ofstream(config) << text;
  test::Process p("rths-physical", {"layout", config.string(), "--site", "lab"}, dir / "layout");
  Result r;
  r.exit_code = p.wait(std::chrono::seconds(20));
  r.out = p.out();
  r.err = p.err();
  return r;
}

TEST(BridgeConfig, AValidBridgePrintsItsLayoutTable) {
  const test::ScratchFolder dir("rths_bridge_config");
  const Result r = layout(dir.path(), bridge_config());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("command (site -> target): 20 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reply (target -> site): 48 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UDP bridge (protocol 2) of site \"lab\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    44      4  single  little  APPLIED_COMMAND         1          1000         0  mm"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("single  little  COMMAND                 1          1000         0  mm"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("double  little  FORCE                   0             1         0  N"), std::string::npos)
      << r.out;
}

TEST(BridgeConfig, ASiteWithoutABridgeHasNoLayout) {
  const test::ScratchFolder dir("rths_bridge_config");
  std::string text = bridge_config();
  text.erase(text.find(driver_block()), driver_block().size());
  const Result r = layout(dir.path(), text);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("site[0].driver: site \"lab\" has no driver { udp_bridge { ... } }"), std::string::npos)
      << r.err;
}

// A setup transformation between the two channels and two actuators at +-45 degrees, linearised.
const std::string kSafeMotion = "  safe_motion { start_ramp_s: 0 }\n";
const std::string kTwoActuators =
    "  setup { matrix { actuators: 2 value: [0.7071, 0.7071, -0.7071, 0.7071] } stroke_limit_m: [0.1, 0.08] }\n";

TEST(BridgeConfig, WithASetupTheDatagramsCarryTheActuators) {
  const test::ScratchFolder dir("rths_bridge_config");
  std::string text = bridge_config();
  text.replace(text.find(kSafeMotion), kSafeMotion.size(), kSafeMotion + kTwoActuators);
  const Result r = layout(dir.path(), text);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the datagrams carry its actuators"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("quantity         actuator"), std::string::npos) << r.out;
}

struct BadBridge {
  const char* label;
  std::string from;  // text replaced in the valid config
  std::string to;
  const char* expected;  // in the one error line: the field and what was expected
};

void PrintTo(const BadBridge& bad, std::ostream* os) {
  *os << bad.label;
}

class BadBridgeConfig : public ::testing::TestWithParam<BadBridge> {};

TEST_P(BadBridgeConfig, RefusedWithOneLineNamingFileLineAndField) {
  const BadBridge& bad = GetParam();
  const test::ScratchFolder dir("rths_bridge_config");
  std::string text = bridge_config();
  const auto at = text.find(bad.from);
  ASSERT_NE(at, std::string::npos) << bad.from;
  text.replace(at, bad.from.size(), bad.to);
  const Result r = layout(dir.path(), text);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(^rths-physical: error: .*bridge\.textproto:\d+: site\[0\])")))
      << r.err;
  EXPECT_NE(r.err.find(bad.expected), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

const std::string kCounter = "command { quantity: COUNTER type: UINT32 }";
const std::string kEcho = "reply { quantity: COUNTER type: UINT32 }";
const std::string kCommand1 = "command { quantity: COMMAND channel: 1 scale: 1000 type: FLOAT }";
const std::string kForce0 = "reply { quantity: FORCE channel: 0 }";
const std::string kStatus = "reply { quantity: STATUS channel: 0 type: UINT32 }";
const std::string kTimeout = "reply_timeout_s: 0.0004";
const std::string kTarget = "target: \"127.0.0.1:47100\"";

INSTANTIATE_TEST_SUITE_P(
    BridgeConfig, BadBridgeConfig,
    ::testing::Values(
        BadBridge{"no counter", kCounter, "", "udp_bridge.command: has no COUNTER; expected one UINT32 field"},
        BadBridge{"second counter", kCommand1, kCommand1 + " " + kCounter,
                  "udp_bridge.command[3].quantity: is a second COUNTER (also command[0])"},
        BadBridge{"counter not uint32", kCounter, "command { quantity: COUNTER type: INT32 }",
                  "udp_bridge.command[0].type: is INT32; COUNTER is UINT32"},
        BadBridge{"counter scaled", kCounter, "command { quantity: COUNTER type: UINT32 scale: 2 }",
                  "udp_bridge.command[0].scale: is given; COUNTER is carried as it is"},
        BadBridge{"no counter echo", kEcho, "", "udp_bridge.reply: has no COUNTER; expected one UINT32 field echoing"},
        BadBridge{"no enable", "command { quantity: ENABLE type: UINT32 }", "",
                  "udp_bridge.command: has no ENABLE; expected one (1 in every step, 0 in a probe and in the disarm"},
        BadBridge{"no applied counter", "reply { quantity: APPLIED_COUNTER type: UINT32 }", "",
                  "udp_bridge.reply: has no APPLIED_COUNTER; expected one UINT32 field with the counter of the command "
                  "the target holds in force"},
        BadBridge{"applied counter not uint32", "reply { quantity: APPLIED_COUNTER type: UINT32 }",
                  "reply { quantity: APPLIED_COUNTER type: DOUBLE }",
                  "udp_bridge.reply[6].type: is DOUBLE; APPLIED_COUNTER is UINT32"},
        BadBridge{"no applied command of a channel",
                  "reply { quantity: APPLIED_COMMAND channel: 1 scale: 1000 type: FLOAT }", "",
                  "udp_bridge.reply: has no APPLIED_COMMAND of channel 1; expected one per channel (the command the "
                  "target holds in force"},
        BadBridge{"applied command in the command", kCommand1, kCommand1 + " command { quantity: APPLIED_COMMAND }",
                  "udp_bridge.command[3].quantity: is APPLIED_COMMAND, which the command datagram does not carry"},
        BadBridge{"tracking limit zero", "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4",
                  "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4 tracking_limit_m: 0",
                  "site[0].channel[1].tracking_limit_m: is 0, expected a positive limit (m)"},
        BadBridge{"tracking steps zero", "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4",
                  "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4 tracking_limit_m: 0.005 "
                  "tracking_limit_steps: 0",
                  "site[0].channel[1].tracking_limit_steps: is 0, expected 1 to 1024 (one second of steps"},
        BadBridge{"tracking steps beyond a second",
                  "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4",
                  "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4 tracking_limit_m: 0.005 "
                  "tracking_limit_steps: 1025",
                  "site[0].channel[1].tracking_limit_steps: is 1025, expected 1 to 1024"},
        BadBridge{"tracking steps without a limit",
                  "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4",
                  "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4 tracking_limit_steps: 5",
                  "site[0].channel[1].tracking_limit_steps: is given without tracking_limit_m"},
        BadBridge{"no command of a channel", kCommand1, "",
                  "udp_bridge.command: has no COMMAND of channel 1; expected one per channel"},
        BadBridge{"second command of a channel", kCommand1, "command { quantity: COMMAND channel: 0 }",
                  "udp_bridge.command[2].quantity: is a second COMMAND of channel 0 (also command[1])"},
        BadBridge{"no force of a channel", kForce0, "",
                  "udp_bridge.reply: has no FORCE of channel 0; expected one per channel"},
        BadBridge{"no displacement of a channel", "reply { quantity: DISPLACEMENT channel: 1 scale: 1000 type: FLOAT }",
                  "", "udp_bridge.reply: has no DISPLACEMENT of channel 1"},
        BadBridge{"channel beyond the site", kCommand1, "command { quantity: COMMAND channel: 2 }",
                  "udp_bridge.command[2].channel: is 2, expected a channel of the site, 0 to 1"},
        BadBridge{"channel on the counter", kCounter, "command { quantity: COUNTER type: UINT32 channel: 0 }",
                  "udp_bridge.command[0].channel: is given, but COUNTER belongs to the datagram"},
        BadBridge{"incoming quantity in the command", kCommand1, kCommand1 + " command { quantity: FORCE }",
                  "udp_bridge.command[3].quantity: is FORCE, which the command datagram does not carry"},
        BadBridge{"outgoing quantity in the reply", kStatus, "reply { quantity: ACCELERATION }",
                  "udp_bridge.reply[5].quantity: is ACCELERATION, which the reply datagram does not carry"},
        BadBridge{"scale zero", kForce0, "reply { quantity: FORCE channel: 0 scale: 0 }",
                  "udp_bridge.reply[2].scale: is 0; expected a finite, non-zero factor"},
        BadBridge{"scale not finite", kForce0, "reply { quantity: FORCE channel: 0 scale: inf }",
                  "udp_bridge.reply[2].scale: is inf, expected a finite number"},
        BadBridge{"second status of a channel", kStatus, kStatus + " " + kStatus,
                  "udp_bridge.reply[6].quantity: is a second STATUS of channel 0 (also reply[5])"},
        BadBridge{"status not an integer", kStatus, "reply { quantity: STATUS channel: 0 type: DOUBLE }",
                  "udp_bridge.reply[5].type: is DOUBLE; a status word is a bit field"},
        BadBridge{"enable beyond its type", "command { quantity: ENABLE type: UINT32 }",
                  "command { quantity: ENABLE type: UINT32 offset: -1 }",
                  "udp_bridge.command[3].offset: puts ENABLE's wire value -1 outside UINT32"},
        BadBridge{"reply timeout over half a step", kTimeout, "reply_timeout_s: 0.0005",
                  "udp_bridge.reply_timeout_s: is 0.0005, expected above 0 and at most half a step (0.000488281 s"},
        BadBridge{"reply timeout zero", kTimeout, "reply_timeout_s: 0", "udp_bridge.reply_timeout_s: is 0, expected"},
        BadBridge{"no missed reply allowed", kTimeout, kTimeout + " max_missed_replies: 0",
                  "udp_bridge.max_missed_replies: is 0, expected 1 to 1024"},
        BadBridge{"missed replies beyond a second", kTimeout, kTimeout + " max_missed_replies: 1025",
                  "udp_bridge.max_missed_replies: is 1025, expected 1 to 1024"},
        BadBridge{"open timeout zero", kTimeout, kTimeout + " open_timeout_s: 0",
                  "udp_bridge.open_timeout_s: is 0, expected above 0 and at most 60 s"},
        BadBridge{"open timeout beyond a minute", kTimeout, kTimeout + " open_timeout_s: 61",
                  "udp_bridge.open_timeout_s: is 61, expected above 0 and at most 60 s"},
        BadBridge{"no target", kTarget, "", "udp_bridge.target: missing; expected the real-time target's"},
        BadBridge{"target port zero", kTarget, "target: \"127.0.0.1:0\"",
                  "udp_bridge.target: \"127.0.0.1:0\" has port 0"},
        BadBridge{"target not an address", kTarget, "target: \"127.0.0.1\"", "udp_bridge.target: "},
        BadBridge{"bind not an address", kTarget, kTarget + " bind: \"300.1.1.1:5\"", "udp_bridge.bind: "},
        BadBridge{"local site", "  name: \"lab\"\n", "  name: \"lab\"\n  placement: LOCAL\n",
                  "site[0].driver: site \"lab\" is LOCAL"},
        BadBridge{"no interlock limit", "stroke_limit_m: 0.05 velocity_limit_m_per_s: 0.5 force_limit_n: 1e4",
                  "stroke_limit_m: 0.05 force_limit_n: 1e4",
                  "site[0].channel[1].velocity_limit_m_per_s: missing; a site with a driver moves real actuators"},
        BadBridge{"driver without kind", driver_block(), "  driver {}\n",
                  "site[0].driver: has no kind; expected udp_bridge {"},
        BadBridge{"setup without stroke limits", kSafeMotion,
                  kSafeMotion + "  setup { matrix { actuators: 2 value: [0.7071, 0.7071, -0.7071, 0.7071] } }\n",
                  "site[0].setup.stroke_limit_m: has 0 values; a site with a driver moves real actuators, expected "
                  "each one's stroke limit (2 values"},
        BadBridge{"datagram beyond 1400 bytes", kCommand1, kCommand1 + paddings(),
                  "udp_bridge.command: lays out 1420 bytes; expected at most 1400"}),
    [](const ::testing::TestParamInfo<BadBridge>& p) { return test::camel_case(p.param.label); });

// A third actuator in the setup that neither datagram carries: both directions' problems in one run,
// each on its own line (the bridge's rules go on past the first).
TEST(BridgeConfig, AnActuatorMissingFromBothDatagramsIsReportedForEach) {
  const test::ScratchFolder dir("rths_bridge_config");
  std::string text = bridge_config();
  const auto at = text.find(kSafeMotion);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, kSafeMotion.size(),
               kSafeMotion +
                   "  setup { matrix { actuators: 3 value: [1, 0, 0, 1, 0.7071, 0.7071] } stroke_limit_m: [0.1, 0.1, "
                   "0.1] }\n");
  const Result r = layout(dir.path(), text);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("rths-physical: error: 2 problems:\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("udp_bridge.command: has no COMMAND of actuator 2; expected one per actuator (the stroke "
                       "command)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("udp_bridge.reply: has no DISPLACEMENT of actuator 2; expected one per actuator (the measured "
                       "stroke)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace rths::test_bridge_config
