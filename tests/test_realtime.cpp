// The real-time issue's acceptance, with the real executables on 127.0.0.1: loopback exactness,
// agreement with virtual time, a killed peer on either side, and a refused handshake.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include <asio/io_context.hpp>

#include "process.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/common/packet_codec.hpp"
#include "rths/common/udp_link.hpp"
#include "test_support.hpp"

namespace rths {
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
                                 "duration_s=30", "--set", "site[0].address=" + where, "--out", (dir_ / "run").string(),
                                 "--quiet"},
        dir_ / "numerical");
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
  EXPECT_NE(test::slurp(dir_ / "run/site_spring.json").find("\"exit_code\": 0"), std::string::npos);
  EXPECT_NE(test::slurp(dir_ / "run/summary.json").find("\"round_trip_p50_us\""), std::string::npos);
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
  Process site("rths-physical",
               {"serve", kSpring, "--site", "spring", "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string()},
               dir_ / "site");
  const auto numerical = start_numerical_against(site);
  ASSERT_TRUE(numerical) << site.err();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  site.signal(SIGKILL);
  EXPECT_EQ(numerical->wait(std::chrono::seconds(20)), kExitPeerLost) << numerical->err();
  EXPECT_NE(numerical->err().find("lost"), std::string::npos) << numerical->err();
  // The measured force from the site is held from its last packet to the stop.
  expect_stopped_one_timeout_after_the_peer(dir_ / "run/numerical.csv", "fm_spring_N");
  EXPECT_NE(test::slurp(dir_ / "run/summary.json").find("\"exit_code\": 4"), std::string::npos);
}

TEST_F(Realtime, KilledNumericalNodeStopsTheSiteWhichHoldsAndWritesItsRecord) {
  Process site("rths-physical",
               {"serve", kSpring, "--site", "spring", "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string()},
               dir_ / "site");
  const auto numerical = start_numerical_against(site);
  ASSERT_TRUE(numerical) << site.err();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  numerical->signal(SIGKILL);
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitPeerLost) << site.err();
  // The actuator held its last target from the last command to the stop.
  expect_stopped_one_timeout_after_the_peer(dir_ / "site/site_spring.csv", "target_m");
  EXPECT_NE(test::slurp(dir_ / "site/site_spring.json").find("\"exit_code\": 4"), std::string::npos);
}

TEST_F(Realtime, InterruptedNumericalNodeStopsEverySiteSafely) {
  Process numerical("rths-numerical",
                    {"loopback", kSpring, "--set", "duration_s=30", "--out", (dir_ / "run").string(), "--quiet"},
                    dir_ / "numerical");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  numerical.signal(SIGINT);
  EXPECT_EQ(numerical.wait(std::chrono::seconds(20)), kExitInterrupted) << numerical.err();
  const auto x = csv_column(dir_ / "run/numerical.csv", "x2_m");
  EXPECT_GT(x.size(), 1024U);
  EXPECT_LT(x.size(), 30U * 1024U);
  // The site was told to abort: it stopped too and wrote its record.
  EXPECT_NE(test::slurp(dir_ / "run/site_spring.json").find("\"exit_code\": 5"), std::string::npos);
}

TEST_F(Realtime, MismatchedPredictionModelIsRefusedBeforeMotion) {
  Process site("rths-physical",
               {"serve", kSpring, "--site", "spring", "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string(),
                "--set", "site[0].channel[0].prediction.spring.stiffness_n_per_m=60000"},
               dir_ / "site");
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  Process numerical(
      "rths-numerical",
      {"run", kSpring, "--realtime", "--set", "site[0].address=" + where, "--out", (dir_ / "run").string(), "--quiet"},
      dir_ / "numerical");
  EXPECT_EQ(numerical.wait(std::chrono::seconds(20)), kExitRefused);
  EXPECT_EQ(site.wait(std::chrono::seconds(20)), kExitRefused);
  EXPECT_NE(numerical.err().find("stiffness_n_per_m"), std::string::npos) << numerical.err();
  EXPECT_NE(numerical.err().find("55834.4"), std::string::npos) << numerical.err();
  // Refused before motion: no step ran.
  EXPECT_EQ(csv_column(dir_ / "run/numerical.csv", "x1_m").size(), 0U);
}

TEST_F(Realtime, OtherProtocolVersionIsRefusedWithTheFieldNamed) {
  Process site("rths-physical",
               {"serve", kSpring, "--site", "spring", "--listen", "127.0.0.1:0", "--out", (dir_ / "site").string()},
               dir_ / "site");
  const std::string where = site.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(where.empty()) << site.err();
  asio::io_context io;
  UdpLink link(io, "127.0.0.1", 0);
  link.set_peer("127.0.0.1", static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1))));
  wire::Envelope hello;
  hello.set_version(kProtocolVersion + 1);
  hello.set_session(7);
  hello.set_site(1);
  hello.mutable_hello()->mutable_terms()->set_site_name("spring");
  const std::string bytes = hello.SerializeAsString();
  link.send(std::as_bytes(std::span(bytes.data(), bytes.size())));
  std::array<std::byte, kMaxDatagramBytes> rx{};
  std::size_t n = 0;
  for (int i = 0; i < 2000 && n == 0; ++i) {
    n = link.receive(rx);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(n, 0U);
  wire::Envelope reply;
  ASSERT_TRUE(reply.ParseFromArray(rx.data(), static_cast<int>(n)));
  ASSERT_TRUE(reply.has_welcome());
  EXPECT_NE(reply.welcome().refusal().find("protocol version"), std::string::npos) << reply.welcome().refusal();
  EXPECT_EQ(site.wait(std::chrono::seconds(10)), kExitRefused);
}

}  // namespace
}  // namespace rths
