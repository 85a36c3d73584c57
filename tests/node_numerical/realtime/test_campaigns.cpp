// Campaigns with the real executables on 127.0.0.1: an on-path attacker injecting 100,000 hostile
// datagrams at each end of a running test, and links cut for 50 ms, 500 ms and 5 s. Each run must
// end in its documented state with complete records. The counts go to docs/reliability.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <set>
#include <thread>
#include <tuple>

#include "common/core/exit_codes.hpp"
#include "support/hostile_tap.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_campaigns {
namespace {

using test::csv_column;
using test::HostileTap;
using test::Process;

const std::string kSpring = test::example("seed002/spring.textproto").string();

// The arguments of the spring site's serve command: a free port, records in DIR/site, the given
// --set arguments after them.
std::vector<std::string> serve_spring_args(const std::filesystem::path& dir, const std::vector<std::string>& sets) {
  std::vector<std::string> args{"serve",   kSpring,  "--out",    (dir / "site").string(),
                                "--site",  "spring", "--listen", "127.0.0.1:0",
                                "--quiet", "--wait", "30"};
  args.insert(args.end(), sets.begin(), sets.end());
  return args;
}

class Campaign : public test::RunFolderTest {
 protected:
  struct Outcome {
    int numerical = -1;
    int site = -1;
  };

  // The spring case (exact prediction model) for duration_s, numerical node -> tap -> site.
  Outcome run(const HostileTap::Options& options, double duration_s, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> sets{"--set", test::site_key_override(dir_, "spring"), "--set",
                                  "duration_s=" + std::to_string(duration_s)};
    for (const auto& e : extra) sets.insert(sets.end(), {"--set", e});
    Process site("rths-physical", serve_spring_args(dir_, sets), dir_ / "site");
    const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
    EXPECT_FALSE(where.empty()) << site.err();
    if (where.empty()) return {};
    tap_ = std::make_unique<HostileTap>(
        "127.0.0.1", static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1))), options);
    std::vector<std::string> numerical_args{"run",
                                            kSpring,
                                            "--realtime",
                                            "--set",
                                            "site[0].address=" + tap_->address(),
                                            "--out",
                                            (dir_ / "run").string(),
                                            "--quiet"};
    numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
    Process numerical("rths-numerical", numerical_args, dir_ / "numerical");
    Outcome o;
    o.numerical = numerical.wait(std::chrono::seconds(static_cast<int>(duration_s) + 60));
    o.site = site.wait(std::chrono::seconds(30));
    tap_->stop();
    numerical_err_ = numerical.err();
    site_err_ = site.err();
    return o;
  }

  // Every row from step 0 to the stop, one period apart: nothing lost, nothing doubled.
  static void expect_contiguous(const std::filesystem::path& csv, std::size_t at_least) {
    const auto t = csv_column(csv, "t_s");
    ASSERT_GE(t.size(), at_least) << csv;
    for (std::size_t i = 0; i < t.size(); ++i) {
      ASSERT_NEAR(t[i], static_cast<double>(i) / 1024.0, 1e-9) << csv << " row " << i;
    }
  }

  std::unique_ptr<HostileTap> tap_;
  std::string numerical_err_;
  std::string site_err_;
};

// Loop timing and held steps of a run, from both summaries, for the record.
struct Timing {
  double numerical_p99_us, numerical_late, numerical_held, site_p99_us, site_late, site_held;
};

Timing timing_of(const std::filesystem::path& dir) {
  const results::RunSummary summary = test::read_summary(dir / "run/summary.json");
  const results::SiteSummary site = test::read_site_summary(dir / "site/site_spring.json");
  return {summary.loop().lateness_p99_us(),
          static_cast<double>(summary.loop().late_ticks()),
          static_cast<double>(summary.sites().at("spring").numerical_side().held_steps()),
          site.loop().lateness_p99_us(),
          static_cast<double>(site.loop().late_ticks()),
          static_cast<double>(site.held_steps())};
}

TEST_F(Campaign, HundredThousandHostileDatagramsAtEachEndAreAllRejectedAndChangeNothing) {
  constexpr std::uint64_t kHostile = 100000;
  constexpr double kSeconds = 12.0;
  const auto rows = static_cast<std::size_t>(kSeconds * 1024) + 1;
  // A velocity limit that never ramps, so that every applied target must be a command as sent.
  const std::vector<std::string> limits{"site[0].channel[0].velocity_limit_m_per_s=5"};

  // The same test without an attacker first, for the timing it keeps.
  ASSERT_EQ(run({}, kSeconds, limits).numerical, kExitCompleted) << numerical_err_;
  const Timing clean = timing_of(dir_);

  HostileTap::Options options;
  options.hostile_per_direction = kHostile;
  options.inject_over_s = kSeconds - 2.0;  // about 10,000 a second at each end
  const Outcome o = run(options, kSeconds, limits);
  ASSERT_EQ(o.numerical, kExitCompleted) << numerical_err_;
  ASSERT_EQ(o.site, kExitCompleted) << site_err_;
  ASSERT_EQ(tap_->injected_total(0), kHostile);
  ASSERT_EQ(tap_->injected_total(1), kHostile);

  // The exact model keeps the hybrid run on the monolithic reference to the last bit: a single
  // accepted forged feedback would move it.
  const auto x2 = csv_column(dir_ / "run/numerical.csv", "x2_m");
  const auto ref = csv_column(dir_ / "run/reference.csv", "x2_m");
  ASSERT_EQ(x2.size(), rows);
  ASSERT_EQ(ref.size(), rows);
  EXPECT_EQ(test::max_diff(x2, ref), 0.0);
  // Every target the site applied is a command the numerical node sent: a single accepted forged
  // command would not be.
  const auto sent = csv_column(dir_ / "run/numerical.csv", "u_spring_m");
  const std::set<double> commands(sent.begin(), sent.end());
  const auto applied = csv_column(dir_ / "site/site_spring.csv", "target_m");
  ASSERT_EQ(applied.size(), rows);
  std::size_t foreign_targets = 0;
  for (const double a : applied) foreign_targets += (a == 0.0 || commands.contains(a)) ? 0U : 1U;
  EXPECT_EQ(foreign_targets, 0U);

  // Counted at both ends: every hostile datagram rejected, every genuine one taken (a few late
  // copies of the start and stop aside).
  const results::SiteSummary site = test::read_site_summary(dir_ / "site/site_spring.json");
  const results::RunSummary summary = test::read_summary(dir_ / "run/summary.json");
  const results::PacketCounters& numerical = summary.sites().at("spring").numerical_side().packets();
  const std::uint64_t site_accepted = site.packets().accepted() + site.handshake_packets().accepted();
  const std::uint64_t site_rejected = site.packets().received() - site.packets().accepted();
  const std::uint64_t numerical_rejected = numerical.received() - numerical.accepted();
  EXPECT_GE(site_rejected, kHostile);
  EXPECT_LE(site_rejected, kHostile + 10);
  EXPECT_GE(numerical_rejected, kHostile);
  EXPECT_LE(numerical_rejected, kHostile + 10);
  EXPECT_GE(site_accepted + 10, tap_->genuine[0]);
  for (std::size_t k = 0; k < test::kHostileNames.size(); ++k) {
    std::printf("[ measured ] injected %s: %llu toward the site, %llu toward the numerical node\n",
                test::kHostileNames[k], static_cast<unsigned long long>(tap_->injected[0][k]),
                static_cast<unsigned long long>(tap_->injected[1][k]));
  }
  for (const auto& [end, c] : {std::pair{"site", &site.packets()}, std::pair{"numerical node", &numerical}}) {
    std::printf(
        "[ measured ] %s: accepted %llu; rejected undecodable %llu, unauthenticated %llu, wrong session %llu, "
        "wrong site %llu, wrong version %llu, stale %llu, duplicate %llu, too far ahead %llu\n",
        end, static_cast<unsigned long long>(c->accepted()), static_cast<unsigned long long>(c->undecodable()),
        static_cast<unsigned long long>(c->unauthenticated()), static_cast<unsigned long long>(c->wrong_session()),
        static_cast<unsigned long long>(c->wrong_site()), static_cast<unsigned long long>(c->wrong_version()),
        static_cast<unsigned long long>(c->stale()), static_cast<unsigned long long>(c->duplicate()),
        static_cast<unsigned long long>(c->too_far_ahead()));
  }
  const Timing attacked = timing_of(dir_);
  std::printf(
      "[ measured ] timing clean / attacked: numerical lateness p99 %.1f / %.1f us, late ticks %.0f / %.0f, "
      "held steps %.0f / %.0f; site lateness p99 %.1f / %.1f us, late ticks %.0f / %.0f, held steps %.0f / "
      "%.0f\n",
      clean.numerical_p99_us, attacked.numerical_p99_us, clean.numerical_late, attacked.numerical_late,
      clean.numerical_held, attacked.numerical_held, clean.site_p99_us, attacked.site_p99_us, clean.site_late,
      attacked.site_late, clean.site_held, attacked.site_held);
}

struct OutageCase {
  const char* name;
  double outage_s;
  int expected_exit;  // both ends
};

// gtest prints a parameter with this (--gtest_list_tests, failures): the case, not its bytes.
void PrintTo(const OutageCase& c, std::ostream* os) {
  *os << c.outage_s << " s outage, exit " << c.expected_exit << " at both ends";
}

class LinkOutage : public Campaign, public ::testing::WithParamInterface<OutageCase> {};

TEST_P(LinkOutage, EndsInItsDocumentedStateWithCompleteRecords) {
  const OutageCase c = GetParam();
  HostileTap::Options options;
  options.outage_after_s = 2.0;
  options.outage_s = c.outage_s;
  const double duration = 5.0 + c.outage_s;
  const Outcome o = run(options, duration);
  EXPECT_EQ(o.numerical, c.expected_exit) << numerical_err_;
  EXPECT_EQ(o.site, c.expected_exit) << site_err_;
  const auto rows = static_cast<std::size_t>(duration * 1024) + 1;
  if (c.expected_exit == kExitCompleted) {
    expect_contiguous(dir_ / "run/numerical.csv", rows);
    expect_contiguous(dir_ / "site/site_spring.csv", rows);
  } else {
    // Stopped one peer timeout (0.1 s) into the outage, every step up to it recorded on both ends.
    expect_contiguous(dir_ / "run/numerical.csv", std::size_t{2} * 1024);
    expect_contiguous(dir_ / "site/site_spring.csv", std::size_t{2} * 1024);
    EXPECT_LT(csv_column(dir_ / "run/numerical.csv", "t_s").size(), static_cast<std::size_t>(2.5 * 1024));
    EXPECT_NE(numerical_err_.find("lost"), std::string::npos) << numerical_err_;
  }
  EXPECT_EQ(test::read_summary(dir_ / "run/summary.json").exit_code(), c.expected_exit);
  EXPECT_EQ(test::read_site_summary(dir_ / "site/site_spring.json").exit_code(), c.expected_exit);
  std::printf("[ measured ] link cut for %.3f s: exit codes numerical %d, site %d; datagrams dropped %llu / %llu\n",
              c.outage_s, o.numerical, o.site, static_cast<unsigned long long>(tap_->dropped_in_outage[0]),
              static_cast<unsigned long long>(tap_->dropped_in_outage[1]));
}

// Shorter than the peer timeout (0.1 s): both ends hold their last values and carry on. Longer:
// both ends call the other lost and stop safely (exit 4).
INSTANTIATE_TEST_SUITE_P(Outages, LinkOutage,
                         ::testing::Values(OutageCase{"50ms", 0.05, kExitCompleted},
                                           OutageCase{"500ms", 0.5, kExitPeerLost},
                                           OutageCase{"5s", 5.0, kExitPeerLost}),
                         [](const ::testing::TestParamInfo<OutageCase>& p) { return p.param.name; });

// ---------------------------------------------------------------------------------------------
// Signals to each process of a test through the relay: what each end does and what it leaves.

enum class Victim { kNumerical, kSite, kRelay };
enum class Action { kKill, kStop200ms, kStop3s, kInterrupt };

struct SignalCase {
  const char* name;
  Victim victim;
  Action action;
  int numerical_exit;  // documented outcome (-1: killed, no exit code)
  int site_exit;
};

void PrintTo(const SignalCase& c, std::ostream* os) {
  *os << c.name << ": numerical node exits " << c.numerical_exit << ", site " << c.site_exit;
}

class SignalCampaign : public test::RunFolderTest, public ::testing::WithParamInterface<SignalCase> {};

// 128 + N for a process ended by signal N (Process::wait).
constexpr int kKilled = 128 + SIGKILL;

TEST_P(SignalCampaign, EndsInItsDocumentedStateWithCompleteRecords) {
  const SignalCase c = GetParam();
  const std::vector<std::string> sets{"--set", test::site_key_override(dir_, "spring"), "--set", "duration_s=30"};
  Process site("rths-physical", serve_spring_args(dir_, sets), dir_ / "site");
  const std::string site_at = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(site_at.empty()) << site.err();
  std::vector<std::string> relay_args{
      kSpring,       "--site", "spring", "--listen", "127.0.0.1:0", "--to", site_at, "--out", (dir_ / "relay").string(),
      "--idle-exit", "0"};
  relay_args.insert(relay_args.end(), sets.begin(), sets.end());
  Process relay("rths-relay", relay_args, dir_ / "relay");
  const std::string relay_at = relay.wait_for_line("relaying on ", std::chrono::seconds(10));
  ASSERT_FALSE(relay_at.empty()) << relay.err();
  std::vector<std::string> numerical_args{
      "run",    kSpring, "--realtime", "--set", "site[0].address=" + relay_at, "--out", (dir_ / "run").string(),
      "--quiet"};
  numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
  Process numerical("rths-numerical", numerical_args, dir_ / "numerical");
  // The signal lands 2.3 s into the test however long this build takes to start (sanitizers).
  ASSERT_TRUE(test::wait_for_rows(dir_ / "site/site_spring.csv", static_cast<std::size_t>(2.3 * 1024),
                                  std::chrono::seconds(30)))
      << numerical.err() << site.err();

  Process& victim = c.victim == Victim::kNumerical ? numerical : c.victim == Victim::kSite ? site : relay;
  switch (c.action) {
    case Action::kKill:
      victim.signal(SIGKILL);
      break;
    case Action::kInterrupt:
      victim.signal(SIGINT);
      break;
    case Action::kStop200ms:
    case Action::kStop3s:
      victim.signal(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(c.action == Action::kStop3s ? 3000 : 200));
      victim.signal(SIGCONT);
      break;
  }
  const int numerical_exit = numerical.wait(std::chrono::seconds(40));
  const int site_exit = site.wait(std::chrono::seconds(40));
  relay.signal(SIGINT);
  const int relay_exit = relay.wait(std::chrono::seconds(20));
  EXPECT_EQ(numerical_exit, c.numerical_exit) << numerical.err();
  EXPECT_EQ(site_exit, c.site_exit) << site.err();
  EXPECT_EQ(relay_exit, c.victim == Victim::kRelay && c.action == Action::kKill ? kKilled : kExitCompleted)
      << relay.err();
  std::printf("[ measured ] %s: exit codes numerical %d, site %d, relay %d\n", c.name, numerical_exit, site_exit,
              relay_exit);

  // Every process that ended by itself wrote every step up to its stop, and its summary; a killed
  // one lost at most its last second (it ran at least 2.3 s: more than 1.2 s of rows are there).
  for (const auto& [exit, csv, json, is_summary] :
       {std::tuple{numerical_exit, dir_ / "run/numerical.csv", dir_ / "run/summary.json", true},
        std::tuple{site_exit, dir_ / "site/site_spring.csv", dir_ / "site/site_spring.json", false}}) {
    const auto t = csv_column(csv, "t_s");
    ASSERT_GT(t.size(), exit == kKilled ? 1200U : 2U * 1024U) << csv;
    ASSERT_LT(t.size(), 30U * 1024U) << csv;
    for (std::size_t i = 0; i < t.size(); ++i) ASSERT_NEAR(t[i], static_cast<double>(i) / 1024.0, 1e-9) << csv << i;
    if (exit != kKilled) {
      EXPECT_EQ(is_summary ? test::read_summary(json).exit_code() : test::read_site_summary(json).exit_code(), exit)
          << json;
    }
  }
}

// The documented outcomes (docs/reliability.md): a killed, stopped or silent peer is lost after
// realtime.peer_timeout_s (exit 4) and told to abort; a peer that resumes finds the abort (exit 5);
// SIGINT stops its node safely (exit 6) and the other end is told to abort (exit 5).
INSTANTIATE_TEST_SUITE_P(
    Signals, SignalCampaign,
    ::testing::Values(
        SignalCase{"KillNumerical", Victim::kNumerical, Action::kKill, kKilled, kExitPeerLost},
        SignalCase{"KillSite", Victim::kSite, Action::kKill, kExitPeerLost, kKilled},
        SignalCase{"KillRelay", Victim::kRelay, Action::kKill, kExitPeerLost, kExitPeerLost},
        SignalCase{"StopNumerical200ms", Victim::kNumerical, Action::kStop200ms, kExitPeerAborted, kExitPeerLost},
        SignalCase{"StopNumerical3s", Victim::kNumerical, Action::kStop3s, kExitPeerAborted, kExitPeerLost},
        SignalCase{"StopSite200ms", Victim::kSite, Action::kStop200ms, kExitPeerLost, kExitPeerAborted},
        SignalCase{"StopSite3s", Victim::kSite, Action::kStop3s, kExitPeerLost, kExitPeerAborted},
        SignalCase{"StopRelay200ms", Victim::kRelay, Action::kStop200ms, kExitPeerLost, kExitPeerLost},
        SignalCase{"StopRelay3s", Victim::kRelay, Action::kStop3s, kExitPeerLost, kExitPeerLost},
        SignalCase{"InterruptNumerical", Victim::kNumerical, Action::kInterrupt, kExitInterrupted, kExitPeerAborted},
        SignalCase{"InterruptSite", Victim::kSite, Action::kInterrupt, kExitPeerAborted, kExitInterrupted},
        SignalCase{"InterruptRelay", Victim::kRelay, Action::kInterrupt, kExitPeerLost, kExitPeerLost}),
    [](const ::testing::TestParamInfo<SignalCase>& p) { return p.param.name; });

// With a peer timeout longer than the stall, a site stopped for 0.5 s is not lost: it resumes, runs
// its overdue steps back to back and finds the numerical node's command half a second ahead. It
// must ramp there at the velocity limit, not jump (it used to jump 3.5 mm in one step).
TEST_F(Campaign, ASiteResumedAfterAStallRampsToTheNewestCommand) {
  const std::vector<std::string> sets{
      "--set", test::site_key_override(dir_, "spring"), "--set", "duration_s=8", "--set", "realtime.peer_timeout_s=5"};
  Process site("rths-physical", serve_spring_args(dir_, sets), dir_ / "site");
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  std::vector<std::string> numerical_args{
      "run", kSpring, "--realtime", "--set", "site[0].address=" + where, "--out", (dir_ / "run").string(), "--quiet"};
  numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
  Process numerical("rths-numerical", numerical_args, dir_ / "numerical");
  // 1 s into the test, where the frame is moving, however late a loaded machine started it: a stall in
  // the start ramp would leave the rule untried.
  ASSERT_TRUE(test::wait_for_rows(dir_ / "site/site_spring.csv", 1024, std::chrono::seconds(30))) << site.err();
  site.signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  site.signal(SIGCONT);
  ASSERT_EQ(numerical.wait(std::chrono::seconds(40)), kExitCompleted) << numerical.err();
  ASSERT_EQ(site.wait(std::chrono::seconds(40)), kExitCompleted) << site.err();
  const auto target = csv_column(dir_ / "site/site_spring.csv", "target_m");
  ASSERT_EQ(target.size(), 8U * 1024U + 1U);
  double largest_step = 0.0;
  for (std::size_t i = 1; i < target.size(); ++i)
    largest_step = std::max(largest_step, std::abs(target[i] - target[i - 1]));
  const double limit = 0.5 / 1024.0;  // the example's 0.5 m/s
  EXPECT_LE(largest_step, limit * (1 + 1e-9));
  std::printf("[ measured ] site resumed after 0.5 s: largest target change in one step %.4f mm (limit %.4f mm)\n",
              largest_step * 1e3, limit * 1e3);
}

}  // namespace
}  // namespace rths::test_campaigns
