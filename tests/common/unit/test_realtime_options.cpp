// The real-time options of a node's step loop from its config (common/realtime/realtime_loop.hpp), built once
// for both nodes and the relay.
#include <gtest/gtest.h>

#include "common/realtime/realtime_loop.hpp"
#include "support/test_support.hpp"

namespace rths::test_realtime_options {
namespace {

TEST(RealtimeOptions, AreTheConfigsRateAndRealtimeBlock) {
  LoadedConfig loaded = test::load_example("seed002/spring.textproto");
  config::Experiment& cfg = loaded.experiment;
  cfg.set_rate_hz(512);
  cfg.mutable_realtime()->set_priority(42);
  cfg.mutable_realtime()->set_lock_memory(false);
  cfg.mutable_realtime()->set_spin_s(0.0002);
  cfg.mutable_realtime()->set_cpu(1);
  const RealtimeOptions rt = realtime_options(cfg);
  EXPECT_EQ(rt.rate_hz, 512.0);
  EXPECT_EQ(rt.priority, 42);
  EXPECT_FALSE(rt.lock_memory);
  EXPECT_EQ(rt.spin_ns, 200'000);
  EXPECT_EQ(rt.cpu, 1);
  EXPECT_TRUE(rt.min_timer_slack);
}

}  // namespace
}  // namespace rths::test_realtime_options
