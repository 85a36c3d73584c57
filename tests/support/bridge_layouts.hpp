// Bridge layouts the bridge's tests and benchmark share.
#pragma once

namespace rths::test {

// One channel behind a UDP bridge: counter, the command in mm, enable out (20 bytes); the counter's
// echo, the displacement in mm, the force, a status word, the counter and the command in mm the target
// holds in force back (36 bytes): the fields of a config::UdpBridge.
inline constexpr const char* kOneChannelBridgeLayout = R"(
  command { quantity: COUNTER type: UINT32 }
  command { quantity: COMMAND channel: 0 scale: 1000 }
  command { quantity: ENABLE type: UINT32 }
  reply { quantity: COUNTER type: UINT32 }
  reply { quantity: DISPLACEMENT channel: 0 scale: 1000 }
  reply { quantity: FORCE channel: 0 }
  reply { quantity: STATUS channel: 0 type: UINT32 }
  reply { quantity: APPLIED_COUNTER type: UINT32 }
  reply { quantity: APPLIED_COMMAND channel: 0 scale: 1000 }
)";

}  // namespace rths::test
