// Packet loss in real time: one run of the seed 002 spring case through rths-relay on 127.0.0.1 with
// 20 % of the packets of both legs lost in Gilbert-Elliott bursts runs to the end, with the exact model
// equal to the reference and the losses counted (the virtual-time cases: acceptance/test_loss.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/core/exit_codes.hpp"
#include "support/loss.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_loss {
namespace {

using test::loss_overrides;
using test::max_diff;
using test::peak;

using test::csv_column;
using test::kSpring;
using test::Process;

class LossRealTime : public test::RunFolderTest {};

TEST_F(LossRealTime, ThroughTheRelayWith20PercentBurstyLossTheRunCompletes) {
  // Site, relay and numerical node on 127.0.0.1 (no privileges needed); 10 s of the record.
  const auto& dir = dir_;
  auto overrides = loss_overrides({"bursty", 0.20});
  overrides.push_back(test::site_key_override(dir, "spring"));
  std::vector<std::string> sets;
  for (const auto& o : overrides) {
    sets.insert(sets.end(), {"--set", o});
  }
  std::vector<std::string> site_args{
      "serve", kSpring, "--site", "spring", "--listen", "127.0.0.1:0", "--out", (dir / "site").string(), "--quiet"};
  site_args.insert(site_args.end(), sets.begin(), sets.end());
  Process site("rths-physical", site_args, dir / "site");
  const std::string site_at = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(site_at.empty()) << site.err();
  std::vector<std::string> relay_args{
      kSpring, "--site", "spring", "--listen", "127.0.0.1:0", "--to", site_at, "--out", (dir / "relay").string()};
  relay_args.insert(relay_args.end(), sets.begin(), sets.end());
  Process relay("rths-relay", relay_args, dir / "relay");
  const std::string relay_at = relay.wait_for_line("relaying on ", std::chrono::seconds(10));
  ASSERT_FALSE(relay_at.empty()) << relay.err();
  std::vector<std::string> numerical_args{
      "run",           kSpring, "--realtime",           "--set",  "site[0].address=" + relay_at, "--set",
      "duration_s=10", "--out", (dir / "run").string(), "--quiet"};
  numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
  Process numerical("rths-numerical", numerical_args, dir / "numerical");
  ASSERT_EQ(numerical.wait(std::chrono::seconds(60)), kExitCompleted) << numerical.err();
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitCompleted) << site.err();
  EXPECT_EQ(relay.wait(std::chrono::seconds(20)), kExitCompleted) << relay.err();

  // Every step ran and was recorded; the exact model kept the hybrid run on the reference.
  const auto x2 = csv_column(dir / "run/numerical.csv", "x2_m");
  const auto ref = csv_column(dir / "run/reference.csv", "x2_m");
  ASSERT_EQ(x2.size(), 10U * 1024U + 1U);
  ASSERT_EQ(ref.size(), x2.size());
  EXPECT_LE(max_diff(x2, ref), 1e-9 * peak(ref));
  const results::RelaySummary relay_summary = test::read_relay_summary(dir / "relay/relay_spring.json");
  const results::RunSite site_summary = test::read_summary(dir / "run/summary.json").sites().at("spring");
  for (const auto& [direction, counts] :
       {std::pair{"forward", &relay_summary.forward()}, std::pair{"backward", &relay_summary.backward()}}) {
    const auto received = static_cast<double>(counts->received());
    const auto lost = static_cast<double>(counts->lost());
    ASSERT_GT(received, 10.0 * 1024.0) << direction << "\n" << relay_summary.DebugString();
    EXPECT_GT(lost / received, 0.14) << direction;  // 20 % in bursts of 5: +-4 sigma is about 0.06
    EXPECT_LT(lost / received, 0.26) << direction;
    std::printf("[ measured ] real time, relay %s: %.0f of %.0f packets lost (%.1f %%)\n", direction, lost, received,
                100 * lost / received);
  }
  std::printf("[ measured ] real time, numerical node: loss rate %.3f, held steps %llu\n",
              site_summary.network().loss_rate(),
              static_cast<unsigned long long>(site_summary.numerical_side().held_steps()));
}

}  // namespace
}  // namespace rths::test_loss
