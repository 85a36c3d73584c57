// The nodes in real time, with the real executables on 127.0.0.1: loopback exactness,
// agreement with virtual time, a killed peer on either side, and a refused handshake.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <thread>

#include <asio/io_context.hpp>

#include "common/core/exit_codes.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/transport/udp_link.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_realtime {
namespace {

using test::csv_column;
using test::max_diff;
using test::peak;
using test::Process;

class Realtime : public test::RunFolderTest {
 protected:
  // A 30 s real-time run of the spring case against a site already started with --listen 127.0.0.1:0.
  [[nodiscard]] std::unique_ptr<Process> start_numerical_against(const Process& site) const {
    const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
    if (where.empty()) {
      return nullptr;
    }
    return std::make_unique<Process>(
        "rths-numerical",
        std::vector<std::string>{"run", test::example("seed002/spring.textproto").string(), "--realtime", "--set",
                                 "duration_s=30", "--set", "site[0].address=" + where, "--set", key(), "--out",
                                 (dir_ / "run").string(), "--quiet"},
        dir_ / "numerical");
  }
  // The site's key override: the same file at both ends.
  [[nodiscard]] std::string key() const { return test::site_key_override(dir_, "spring"); }
  // rths-physical serve for the spring site on a free port, with the key and extra arguments.
  [[nodiscard]] std::unique_ptr<Process> start_site(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"serve",    test::example("seed002/spring.textproto").string(),
                                  "--site",   "spring",
                                  "--listen", "127.0.0.1:0",
                                  "--out",    (dir_ / "site").string(),
                                  "--set",    key()};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<Process>("rths-physical", args, dir_ / "site");
  }
};

// Rows at the end of a column that repeat its last value: how long the feedback was held.
std::size_t trailing_repeats(const std::vector<double>& v) {
  std::size_t n = 0;
  for (auto it = v.rbegin() + 1; it != v.rend() && *it == v.back(); ++it) {
    ++n;
  }
  return n;
}

// A node that lost its peer 2 s into a 30 s run: every step up to the stop is recorded (no row
// missing), and the stop came one peer timeout (0.1 s, 102 steps) after the peer's last packet, so
// the column that peer drives repeats its last value for that long.
void expect_stopped_one_timeout_after_the_peer(const std::filesystem::path& csv, const std::string& held_column) {
  const auto held = csv_column(csv, held_column);
  const auto t = csv_column(csv, "t_s");
  ASSERT_GT(held.size(), 1024U);
  ASSERT_LT(held.size(), 30U * 1024U);
  for (std::size_t i = 1; i < t.size(); ++i) {
    ASSERT_NEAR(t[i] - t[i - 1], 1.0 / 1024.0, 1e-9) << csv << " row " << i;
  }
  const std::size_t repeats = trailing_repeats(held);
  EXPECT_GE(repeats, 95U) << csv;
  EXPECT_LE(repeats, 150U) << csv;  // timeout + 48 ms: a loaded machine may delay the detecting step
}

const std::string kSpring = test::example("seed002/spring.textproto").string();

TEST_F(Realtime, LoopbackWithExactModelEqualsReference) {
  Process numerical("rths-numerical",
                    {"loopback", kSpring, "--set", "duration_s=4", "--out", (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  ASSERT_EQ(numerical.wait(std::chrono::seconds(60)), kExitCompleted) << numerical.err();
  for (const char* dof : {"x1_m", "x2_m"}) {
    const auto rt = csv_column(dir_ / "run/numerical.csv", dof);
    const auto ref = csv_column(dir_ / "run/reference.csv", dof);
    ASSERT_EQ(rt.size(), 4097U);
    ASSERT_EQ(ref.size(), rt.size());
    EXPECT_LE(max_diff(rt, ref), 1e-9 * peak(ref)) << dof;
  }
  // The site ran as its own process and wrote its own files into the same folder.
  EXPECT_EQ(csv_column(dir_ / "run/site_spring.csv", "force_N").size(), 4097U);
  EXPECT_EQ(test::read_site_summary(dir_ / "run/site_spring.json").exit_code(), 0);
  const results::RunSite spring = test::read_summary(dir_ / "run/summary.json").sites().at("spring");
  ASSERT_TRUE(spring.has_network());
  EXPECT_GT(spring.network().round_trip_p50_us(), 0.0);
}

TEST_F(Realtime, LoopbackWithModelErrorMatchesVirtualTimeAtTheMeasuredDelay) {
  // 20 % model error. On loopback the measured one-way delay is far below half a period, which is
  // zero steps of lag in virtual time (VirtualClock): the same run with zero link delay.
  const std::vector<std::string> common{"--set", "duration_s=8", "--set",
                                        "site[0].channel[0].prediction.spring.stiffness_n_per_m=67001.28", "--quiet"};
  std::vector<std::string> rt_args{"loopback", kSpring, "--out", (dir_ / "rt").string()};
  rt_args.insert(rt_args.end(), common.begin(), common.end());
  Process rt("rths-numerical", rt_args, dir_ / "rt");
  ASSERT_EQ(rt.wait(std::chrono::seconds(60)), kExitCompleted) << rt.err();
  std::vector<std::string> vt_args{"run", kSpring, "--out", (dir_ / "vt").string(), "--set", "site[0].link="};
  vt_args.insert(vt_args.end(), common.begin(), common.end());
  Process vt("rths-numerical", vt_args, dir_ / "vt");
  ASSERT_EQ(vt.wait(std::chrono::seconds(60)), kExitCompleted) << vt.err();
  const double rt_peak = peak(csv_column(dir_ / "rt/numerical.csv", "x2_m"));
  const double vt_peak = peak(csv_column(dir_ / "vt/numerical.csv", "x2_m"));
  EXPECT_NEAR(rt_peak, vt_peak, 0.005 * vt_peak);
  std::printf("[ measured ] x2 peak real time %.6f mm, virtual time %.6f mm\n", rt_peak * 1e3, vt_peak * 1e3);
}

TEST_F(Realtime, KilledSiteStopsTheNumericalNodeWithinTheTimeout) {
  const auto site_process = start_site();
  Process& site = *site_process;
  const auto numerical = start_numerical_against(site);
  ASSERT_TRUE(numerical) << site.err();
  // 1.5 s into the test, however late a loaded machine started it: the record must hold more than 1 s.
  ASSERT_TRUE(test::wait_for_rows(dir_ / "run/numerical.csv", 1536, std::chrono::seconds(30))) << numerical->err();
  site.signal(SIGKILL);
  EXPECT_EQ(numerical->wait(std::chrono::seconds(20)), kExitPeerLost) << numerical->err();
  EXPECT_NE(numerical->err().find("lost"), std::string::npos) << numerical->err();
  // The measured force from the site is held from its last packet to the stop.
  expect_stopped_one_timeout_after_the_peer(dir_ / "run/numerical.csv", "fm_spring_N");
  EXPECT_EQ(test::read_summary(dir_ / "run/summary.json").exit_code(), kExitPeerLost);
}

TEST_F(Realtime, KilledNumericalNodeStopsTheSiteWhichHoldsAndWritesItsRecord) {
  const auto site_process = start_site();
  Process& site = *site_process;
  const auto numerical = start_numerical_against(site);
  ASSERT_TRUE(numerical) << site.err();
  ASSERT_TRUE(test::wait_for_rows(dir_ / "site/site_spring.csv", 1536, std::chrono::seconds(30))) << site.err();
  numerical->signal(SIGKILL);
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitPeerLost) << site.err();
  // The actuator held its last target from the last command to the stop.
  expect_stopped_one_timeout_after_the_peer(dir_ / "site/site_spring.csv", "target_m");
  EXPECT_EQ(test::read_site_summary(dir_ / "site/site_spring.json").exit_code(), kExitPeerLost);
}

TEST_F(Realtime, InterruptedNumericalNodeStopsEverySiteSafely) {
  Process numerical("rths-numerical",
                    {"loopback", kSpring, "--set", "duration_s=30", "--out", (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  ASSERT_TRUE(test::wait_for_rows(dir_ / "run/numerical.csv", 1536, std::chrono::seconds(30))) << numerical.err();
  numerical.signal(SIGINT);
  EXPECT_EQ(numerical.wait(std::chrono::seconds(20)), kExitInterrupted) << numerical.err();
  const auto x = csv_column(dir_ / "run/numerical.csv", "x2_m");
  EXPECT_GT(x.size(), 1024U);
  EXPECT_LT(x.size(), 30U * 1024U);
  // The site was told to abort: it stopped too and wrote its record.
  EXPECT_EQ(test::read_site_summary(dir_ / "run/site_spring.json").exit_code(), kExitPeerAborted);
}

TEST_F(Realtime, MismatchedPredictionModelIsRefusedBeforeMotion) {
  const auto site_process = start_site({"--set", "site[0].channel[0].prediction.spring.stiffness_n_per_m=60000"});
  Process& site = *site_process;
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  Process numerical("rths-numerical",
                    {"run", kSpring, "--realtime", "--set", "site[0].address=" + where, "--set", key(), "--out",
                     (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  EXPECT_EQ(numerical.wait(std::chrono::seconds(20)), kExitRefused);
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitRefused);
  EXPECT_NE(numerical.err().find("stiffness_n_per_m"), std::string::npos) << numerical.err();
  EXPECT_NE(numerical.err().find("55834.4"), std::string::npos) << numerical.err();
  // Refused before motion: no step ran.
  EXPECT_EQ(csv_column(dir_ / "run/numerical.csv", "x1_m").size(), 0U);
}

// A datagram to the site's port from anyone without the key: a hello sealed with another key, a
// hello in another protocol version, garbage. None is answered (nothing about the site is
// disclosed), none becomes the site's peer, and the genuine numerical node is then served.
TEST_F(Realtime, UnauthenticatedHellosAreNotAnsweredAndTheSiteStillServesItsNode) {
  const auto site_process = start_site();
  Process& site = *site_process;
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  asio::io_context io;
  UdpLink intruder(io, "127.0.0.1", 0);
  intruder.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1))));

  const std::array<unsigned char, SecretKey::kBytes> guessed{42};
  const HandshakeCodec wrong_key(SecretKey{std::span<const unsigned char, SecretKey::kBytes>(guessed)});
  wire::Envelope hello;
  hello.mutable_hello()->mutable_terms()->set_site_name("spring");
  hello.mutable_hello()->set_numerical_nonce(std::string(32, 'x'));
  intruder.send(wrong_key.seal(hello, 1, 1));
  auto other_version = HandshakeCodec(insecure_key()).seal(hello, 1, 2);
  other_version[2] = std::byte{kProtocolVersion + 1};
  intruder.send(other_version);
  const std::vector<std::byte> garbage(200, std::byte{0x5a});
  intruder.send(garbage);

  std::array<std::byte, kMaxDatagramBytes> rx{};
  std::size_t n = 0;
  for (int i = 0; i < 500 && n == 0; ++i) {
    n = intruder.receive(rx);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(n, 0U) << "the site answered a hello it could not authenticate";

  // The genuine node still gets its session: a short run that completes on both ends.
  Process numerical("rths-numerical",
                    {"run", kSpring, "--realtime", "--set", "site[0].address=" + where, "--set", key(), "--set",
                     "duration_s=2", "--out", (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  EXPECT_EQ(numerical.wait(std::chrono::seconds(30)), kExitCompleted) << numerical.err();
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitCompleted) << site.err();
  const results::PacketCounters handshake = test::read_site_summary(dir_ / "site/site_spring.json").handshake_packets();
  EXPECT_EQ(handshake.unauthenticated(), 1U) << handshake.DebugString();
  EXPECT_EQ(handshake.wrong_version(), 1U) << handshake.DebugString();
  EXPECT_EQ(handshake.undecodable(), 1U) << handshake.DebugString();
  EXPECT_NE(test::slurp(dir_ / "site/site_spring.log").find("protocol version"), std::string::npos);
}

// A datagram within `timeout` on link ({} when none came).
std::vector<std::byte> receive_within(UdpLink& link, std::chrono::seconds timeout) {
  std::array<std::byte, kMaxDatagramBytes> rx{};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const std::size_t n = link.receive(rx); n > 0) return {rx.begin(), rx.begin() + static_cast<std::ptrdiff_t>(n)};
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

// A hello of an earlier session, recorded off the wire: a numerical node with the site's key says
// hello to a socket of the test's, which keeps the first datagram (the node then gives up).
std::vector<std::byte> recorded_hello(const std::filesystem::path& dir, const std::string& key,
                                      const std::vector<std::string>& sets) {
  asio::io_context io;
  UdpLink tap(io, "127.0.0.1", 0);
  std::vector<std::string> args{"run",
                                kSpring,
                                "--realtime",
                                "--set",
                                "site[0].address=127.0.0.1:" + std::to_string(tap.local_port()),
                                "--set",
                                key,
                                "--out",
                                (dir / "earlier").string(),
                                "--quiet"};
  for (const auto& set : sets) args.insert(args.end(), {"--set", set});
  Process earlier("rths-numerical", args, dir / "earlier");
  std::vector<std::byte> hello = receive_within(tap, std::chrono::seconds(10));
  EXPECT_EQ(earlier.wait(std::chrono::seconds(20)), kExitNoAnswer) << earlier.err();
  return hello;
}

// A recorded hello replayed to a waiting site authenticates (the key is the same) and is answered,
// but its sender cannot start the session: the site forgets it after realtime.handshake_timeout_s
// and goes on waiting, so the genuine numerical node that comes later runs its test with the site.
TEST_F(Realtime, AReplayedHelloDoesNotConsumeTheWaitingSite) {
  const std::vector<std::string> sets{"realtime.handshake_timeout_s=1"};
  const std::vector<std::byte> hello = recorded_hello(dir_, key(), sets);
  ASSERT_FALSE(hello.empty()) << "no hello recorded";
  const auto site_process = start_site({"--set", sets[0], "--wait", "60"});
  Process& site = *site_process;
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  asio::io_context io;
  UdpLink replayer(io, "127.0.0.1", 0);
  replayer.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1))));
  replayer.send(hello);
  EXPECT_FALSE(receive_within(replayer, std::chrono::seconds(5)).empty()) << "the replayed hello was not answered";
  // Twice the handshake timeout: the site has given the replayed hello up (it used to exit 4 here).
  std::this_thread::sleep_for(std::chrono::seconds(2));

  Process numerical("rths-numerical",
                    {"run", kSpring, "--realtime", "--set", "site[0].address=" + where, "--set", key(), "--set",
                     sets[0], "--set", "duration_s=2", "--out", (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  EXPECT_EQ(numerical.wait(std::chrono::seconds(30)), kExitCompleted) << numerical.err();
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitCompleted) << site.err();
  EXPECT_NE(test::slurp(dir_ / "site/site_spring.log").find("neither repeated nor followed by its start"),
            std::string::npos);
  EXPECT_EQ(csv_column(dir_ / "run/numerical.csv", "x1_m").size(), 2049U);
}

// With nothing but a replayed hello, the site waits until --wait ends and says so (exit 7, no
// answer), not that a peer was lost.
TEST_F(Realtime, ASiteThatOnlyHeardAReplayedHelloEndsWhenItsWaitEnds) {
  const std::vector<std::string> sets{"realtime.handshake_timeout_s=1"};
  const std::vector<std::byte> hello = recorded_hello(dir_, key(), sets);
  ASSERT_FALSE(hello.empty()) << "no hello recorded";
  const auto site_process = start_site({"--set", sets[0], "--wait", "3"});
  Process& site = *site_process;
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  asio::io_context io;
  UdpLink replayer(io, "127.0.0.1", 0);
  replayer.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1))));
  replayer.send(hello);
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitNoAnswer) << site.err();
  EXPECT_NE(site.err().find("no numerical node started a session within 3 s (1 authentic hello(s) answered"),
            std::string::npos)
      << site.err();
}

TEST_F(Realtime, NodesWithDifferentKeysNeverStartASession) {
  const auto site_process = start_site({"--wait", "4"});
  Process& site = *site_process;
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  std::filesystem::create_directories(dir_ / "other");
  Process numerical("rths-numerical",
                    {"run", kSpring, "--realtime", "--set", "site[0].address=" + where, "--set",
                     test::site_key_override(dir_ / "other", "spring"), "--set", "realtime.handshake_timeout_s=2",
                     "--out", (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  EXPECT_EQ(numerical.wait(std::chrono::seconds(20)), kExitNoAnswer) << numerical.err();
  EXPECT_NE(numerical.err().find("did not answer"), std::string::npos) << numerical.err();
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitNoAnswer) << site.err();
  EXPECT_EQ(csv_column(dir_ / "run/numerical.csv", "x1_m").size(), 0U);
}

TEST_F(Realtime, RealTimeWithoutAKeyIsAConfigErrorUnlessInsecureOnLoopback) {
  const std::vector<std::string> base{"serve",  kSpring, "--site", "spring", "--out", (dir_ / "site").string(),
                                      "--wait", "1"};
  std::vector<std::string> no_key = base;
  no_key.insert(no_key.end(), {"--listen", "127.0.0.1:0"});
  Process keyless("rths-physical", no_key, dir_ / "keyless");
  EXPECT_EQ(keyless.wait(std::chrono::seconds(20)), kExitBadInput);
  EXPECT_NE(keyless.err().find("site[0].key_file"), std::string::npos) << keyless.err();
  EXPECT_NE(keyless.err().find("keygen"), std::string::npos) << keyless.err();

  std::vector<std::string> exposed = base;
  exposed.insert(exposed.end(), {"--listen", "0.0.0.0:0", "--set", "realtime.insecure=true"});
  Process wide("rths-physical", exposed, dir_ / "wide");
  EXPECT_EQ(wide.wait(std::chrono::seconds(20)), kExitBadInput);
  EXPECT_NE(wide.err().find("realtime.insecure"), std::string::npos) << wide.err();

  // Insecure on loopback is allowed, with a warning; here it waits 1 s for a hello and gives up.
  std::vector<std::string> local = base;
  local.insert(local.end(), {"--listen", "127.0.0.1:0", "--set", "realtime.insecure=true"});
  Process insecure("rths-physical", local, dir_ / "insecure");
  EXPECT_EQ(insecure.wait(std::chrono::seconds(20)), kExitNoAnswer) << insecure.err();
  EXPECT_NE(insecure.err().find("anyone who can reach"), std::string::npos) << insecure.err();
}

}  // namespace
}  // namespace rths::test_realtime
