// The peer-loss rule both real-time nodes apply (docs/architecture.md §5), on synthetic times: no clock involved.
#include <gtest/gtest.h>

#include "common/protocol/peer_watchdog.hpp"

namespace rths::test_peer_watchdog {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(PeerWatchdog, LostOnlyAfterTheWholeTimeoutOfSilence) {
  const PeerWatchdog dog(100 * kMs, 0);
  EXPECT_FALSE(dog.lost(50 * kMs, 150 * kMs));  // exactly the timeout: not yet
  EXPECT_TRUE(dog.lost(50 * kMs, 150 * kMs + 1));
  EXPECT_FALSE(dog.lost(-1, 100 * kMs));  // never heard: counted from the grace start
  EXPECT_TRUE(dog.lost(-1, 100 * kMs + 1));
}

TEST(PeerWatchdog, OwnStallRestartsTheGrace) {
  PeerWatchdog dog(100 * kMs, 0);
  // Late by 40 ms (under half the timeout): a slow step, not a stall; the peer is judged as usual.
  dog.observe_own_lateness(40 * kMs, 500 * kMs);
  EXPECT_TRUE(dog.lost(300 * kMs, 500 * kMs));
  // Late by 150 ms: this node was paused itself, so the peer gets a whole timeout from now.
  dog.observe_own_lateness(150 * kMs, 500 * kMs);
  EXPECT_FALSE(dog.lost(300 * kMs, 600 * kMs));
  EXPECT_TRUE(dog.lost(300 * kMs, 600 * kMs + 1));
  // A packet after the stall counts as usual.
  EXPECT_FALSE(dog.lost(650 * kMs, 700 * kMs));
}

// A pause inside a step's work (the process stopped after its lateness was taken): the step's own
// lateness is small, but 200 ms passed since the previous step's observation, so the peer gets a
// whole timeout from now. Steps a millisecond apart restart nothing.
TEST(PeerWatchdog, APauseBetweenTwoStepsRestartsTheGrace) {
  PeerWatchdog dog(100 * kMs, 0);
  dog.observe_own_lateness(0, 499 * kMs);
  dog.observe_own_lateness(0, 500 * kMs);
  EXPECT_TRUE(dog.lost(300 * kMs, 500 * kMs));  // steps 1 ms apart: judged as usual
  dog.observe_own_lateness(0, 700 * kMs);       // 200 ms since the last step, lateness 0
  EXPECT_FALSE(dog.lost(300 * kMs, 800 * kMs));
  EXPECT_TRUE(dog.lost(300 * kMs, 800 * kMs + 1));
  // 50 ms between two steps is half the timeout, not more: no restart.
  PeerWatchdog other(100 * kMs, 0);
  other.observe_own_lateness(0, 500 * kMs);
  other.observe_own_lateness(0, 550 * kMs);
  EXPECT_TRUE(other.lost(300 * kMs, 550 * kMs));
}

}  // namespace
}  // namespace rths::test_peer_watchdog
