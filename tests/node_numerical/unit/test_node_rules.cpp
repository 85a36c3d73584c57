// The rules each node applies to what arrives, one rule per test and each side on its own: newest
// wins, only a new authentic packet is a sign of life, a forged or replayed packet moves nothing,
// the held and extrapolated targets, and the site's interlock. Scripted links deliver exactly the
// packets a test names, in the order it names.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "common/dynamics/ground_motion.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/session_keys.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/engine/numerical_node.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"
#include "node_physical/site/physical_node.hpp"
#include "smith_predictor/parts/force_estimator.hpp"
#include "smith_predictor/site_models/site_models.hpp"
#include "support/test_support.hpp"

namespace rths::test_node_rules {
namespace {

constexpr double kRate = 1024.0;
constexpr double kDt = 1.0 / kRate;
constexpr std::uint64_t kSession = 0x5e55;
constexpr std::uint32_t kSiteId = 1;

class ManualClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override { return now_; }
  void set(std::int64_t ns) { now_ = ns; }

 private:
  std::int64_t now_ = 0;
};

// Delivers the datagrams a test queued, in that order; keeps what the node sent.
class ScriptedLink final : public Link {
 public:
  explicit ScriptedLink(const Clock& clock) : clock_(clock) {}
  void send(std::span<const std::byte> datagram) override { sent.emplace_back(datagram.begin(), datagram.end()); }
  std::size_t receive(std::span<std::byte> buffer) override {
    if (inbox.empty()) return 0;
    const std::vector<std::byte> d = inbox.front();
    inbox.pop_front();
    std::copy(d.begin(), d.end(), buffer.begin());
    return d.size();
  }
  [[nodiscard]] std::int64_t last_receive_ns() const override { return clock_.now_ns(); }

  std::deque<std::vector<std::byte>> inbox;
  std::vector<std::vector<std::byte>> sent;

 private:
  const Clock& clock_;
};

std::vector<std::byte> bytes(std::span<const std::byte> s) {
  return {s.begin(), s.end()};
}

// ---------------------------------------------------------------------------------------------
// The physical node, driven by a numerical-side codec of the same session.

class SiteRules : public ::testing::Test {
 protected:
  void make_site(const std::vector<std::string>& overrides = {}) {
    std::vector<std::string> all{"duration_s=1"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    loaded_ = std::make_unique<LoadedConfig>(test::load_example("seed002/spring.textproto", all));
    const config::Site& site = loaded_->experiment.site(0);
    link_ = std::make_unique<ScriptedLink>(clock_);
    node_ = std::make_unique<PhysicalNode>(make_site_setup(loaded_->experiment, site, kSiteId, 100),
                                           test::sealing_keys(kSession, kSiteId), *link_, clock_,
                                           make_physical_substructure(site, kRate), make_part2(site));
    numerical_ =
        std::make_unique<PacketCodec>(CodecRole::kNumerical, kSiteId, test::sealing_keys(kSession, kSiteId), kRate, 0);
  }
  std::vector<std::byte> command(double target_m, double velocity_m_per_s = 0.0) {
    wire::Envelope& env = numerical_->start(clock_.now_ns());
    env.mutable_command()->set_step(++command_step_);
    env.mutable_command()->add_displacement_m(target_m);
    env.mutable_command()->add_velocity_m_per_s(velocity_m_per_s);
    env.mutable_command()->add_acceleration_m_per_s2(0.0);
    return bytes(numerical_->seal());
  }
  // Runs step j at its time (site steps run at t_j - dt / 2).
  void step(std::int64_t j) {
    clock_.set(static_cast<std::int64_t>((static_cast<double>(j) - 0.5) * kDt * 1e9));
    node_->step(j);
  }
  [[nodiscard]] double target(std::size_t row) const {
    const Recorder& r = node_->recorder();
    return r.at(row, r.column_index("target"));
  }

  ManualClock clock_;
  std::unique_ptr<LoadedConfig> loaded_;
  std::unique_ptr<ScriptedLink> link_;
  std::unique_ptr<PhysicalNode> node_;
  std::unique_ptr<PacketCodec> numerical_;
  std::uint64_t command_step_ = 0;
};

TEST_F(SiteRules, NewestCommandWinsWhenAnOlderOneArrivesLaterInTheSameStep) {
  make_site();
  const auto older = command(0.0001);
  const auto newer = command(0.0002);
  link_->inbox = {newer, older};
  step(1);
  EXPECT_EQ(target(0), 0.0002);
  EXPECT_EQ(node_->stats().packets.stale, 1U);
  EXPECT_EQ(node_->stats().packets.accepted, 1U);
}

TEST_F(SiteRules, NewestCommandWinsWhenAnOlderOneArrivesInALaterStep) {
  make_site();
  const auto older = command(0.0001);
  const auto newer = command(0.0002);
  link_->inbox = {newer};
  step(1);
  const std::int64_t heard = node_->last_valid_receive_ns();
  link_->inbox = {older};
  step(2);
  EXPECT_EQ(target(1), 0.0002);
  EXPECT_EQ(node_->stats().held_steps, 1U);
  // A stale packet is no sign of life: the peer watchdog's clock did not move.
  EXPECT_EQ(node_->last_valid_receive_ns(), heard);
}

TEST_F(SiteRules, ReplayedCommandIsNeitherAppliedNorASignOfLife) {
  make_site();
  const auto first = command(0.0001);
  link_->inbox = {first};
  step(1);
  link_->inbox = {command(0.0002)};
  step(2);
  const std::int64_t heard = node_->last_valid_receive_ns();
  link_->inbox = {first, first};
  step(3);
  EXPECT_EQ(target(2), 0.0002);
  EXPECT_EQ(node_->last_valid_receive_ns(), heard);
  EXPECT_EQ(node_->stats().packets.stale, 2U);
}

TEST_F(SiteRules, ForgedCommandWithAHugeSequenceDoesNotWedgeTheSite) {
  make_site();
  auto forged = command(0.5);
  for (std::size_t i = 0; i < 8; ++i) forged[16 + i] = static_cast<std::byte>((1ULL << 63U) >> (8 * i));
  link_->inbox = {forged};
  step(1);
  EXPECT_EQ(target(0), 0.0);  // at rest: nothing was applied
  EXPECT_EQ(node_->last_valid_receive_ns(), -1);
  EXPECT_EQ(node_->stats().packets.unauthenticated, 1U);
  link_->inbox = {command(0.0003)};
  step(2);
  EXPECT_EQ(target(1), 0.0003);  // every genuine command after it is still taken
}

TEST_F(SiteRules, HoldKeepsTheLastTargetExactly) {
  make_site();
  link_->inbox = {command(0.0004, 0.2)};
  step(1);
  for (std::int64_t j = 2; j <= 6; ++j) step(j);
  for (std::size_t row = 0; row < 6; ++row) EXPECT_EQ(target(row), 0.0004) << row;
  EXPECT_EQ(node_->stats().held_steps, 5U);
  EXPECT_EQ(node_->stats().extrapolated_steps, 0U);
}

TEST_F(SiteRules, ExtrapolatedHoldMovesAtTheLastVelocityThenHolds) {
  // 3 steps of extrapolation at most (max_extrapolation_s = 3 dt), then the target is held.
  make_site({"realtime.hold=EXTRAPOLATE", "realtime.max_extrapolation_s=0.0029296875"});
  link_->inbox = {command(0.0004, 0.2)};
  step(1);
  for (std::int64_t j = 2; j <= 7; ++j) step(j);
  EXPECT_EQ(target(0), 0.0004);
  double expected = 0.0004;
  for (std::size_t row = 1; row <= 3; ++row) {
    expected += 0.2 * kDt;
    EXPECT_NEAR(target(row), expected, 1e-15) << row;
  }
  EXPECT_NEAR(target(3), 0.0004 + 3 * 0.2 * kDt, 1e-15);
  for (std::size_t row = 4; row <= 6; ++row) EXPECT_EQ(target(row), target(3)) << row;
  EXPECT_EQ(node_->stats().extrapolated_steps, 3U);
}

TEST_F(SiteRules, ExtrapolationIsLimitedLikeACommand) {
  // 0.4 mm moving at 0.4 m/s toward a 0.5 mm stroke: the first extrapolated step crosses it.
  make_site({"realtime.hold=EXTRAPOLATE", "site[0].channel[0].stroke_limit_m=0.0005"});
  link_->inbox = {command(0.0004, 0.4)};
  step(1);
  ASSERT_FALSE(node_->tripped());
  step(2);
  ASSERT_TRUE(node_->tripped());
  EXPECT_EQ(node_->trip().what, InterlockTrip::What::kTargetStroke);
  EXPECT_NEAR(node_->trip().value, 0.0004 + 0.4 * kDt, 1e-15);
  EXPECT_EQ(node_->recorder().rows(), 1U);  // the tripping step moved nothing and recorded nothing
}

TEST_F(SiteRules, NonFiniteCommandTripsTheInterlockAndNothingMoves) {
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    make_site();
    link_->inbox = {command(0.0001)};
    step(1);
    const std::size_t sent = link_->sent.size();
    link_->inbox = {command(bad)};
    step(2);
    ASSERT_TRUE(node_->tripped()) << bad;
    EXPECT_EQ(node_->trip().what, InterlockTrip::What::kTargetNotFinite);
    EXPECT_EQ(node_->substructure().admitted()[0].displacement_m, 0.0001);  // held
    EXPECT_EQ(link_->sent.size(), sent);                                    // no feedback left the site
    EXPECT_EQ(node_->recorder().rows(), 1U);
    EXPECT_NE(node_->trip().describe().find("not finite"), std::string::npos);
  }
}

TEST_F(SiteRules, TargetBeyondTheStrokeOrVelocityLimitTrips) {
  make_site();
  link_->inbox = {command(0.1000001)};
  step(1);
  ASSERT_TRUE(node_->tripped());
  EXPECT_EQ(node_->trip().what, InterlockTrip::What::kTargetStroke);
  EXPECT_EQ(node_->trip().limit, 0.1);
  make_site();
  link_->inbox = {command(0.0001, -0.51)};
  step(1);
  ASSERT_TRUE(node_->tripped());
  EXPECT_EQ(node_->trip().what, InterlockTrip::What::kTargetVelocity);
  EXPECT_EQ(node_->trip().value, -0.51);
}

TEST_F(SiteRules, MeasuredForceBeyondItsLimitTrips) {
  // 55834.4 N/m x 0.1 mm = 5.58 N against a 5 N limit.
  make_site({"site[0].channel[0].force_limit_n=5"});
  link_->inbox = {command(0.00005)};
  step(1);
  EXPECT_FALSE(node_->tripped());
  link_->inbox = {command(0.0001)};
  step(2);
  ASSERT_TRUE(node_->tripped());
  EXPECT_EQ(node_->trip().what, InterlockTrip::What::kMeasuredForce);
  EXPECT_NEAR(node_->trip().value, 5.58344, 1e-9);
}

TEST_F(SiteRules, AfterAGapTheTargetRampsToTheNewestCommandAtTheVelocityLimit) {
  // A jump of 10 mm (a resumed site, a burst of lost commands) at 0.5 m/s: 0.5 / 1024 m per step,
  // 21 steps to get there, never a jump.
  make_site();
  link_->inbox = {command(0.0)};
  step(1);
  link_->inbox = {command(0.010)};
  const double per_step = 0.5 * kDt;
  std::int64_t j = 2;
  for (; j < 40; ++j) {
    step(j);
    link_->inbox.clear();
  }
  ASSERT_FALSE(node_->tripped());
  const Recorder& r = node_->recorder();
  const std::size_t v = r.column_index("target_velocity");
  for (std::size_t row = 1; row <= 20; ++row) {
    EXPECT_NEAR(target(row) - target(row - 1), per_step, 1e-15) << row;
    EXPECT_NEAR(r.at(row, v), 0.5, 1e-12) << row;
  }
  EXPECT_EQ(target(21), 0.010);  // arrived: 20 x 0.488 mm = 9.77 mm, then the last 0.23 mm
  EXPECT_EQ(target(30), 0.010);
}

// The ramp limits a jump in both directions: up 10 mm, then down 20 mm to -10 mm, each step at most
// the velocity limit's 0.488 mm and toward the newest target.
TEST_F(SiteRules, AJumpDownwardRampsAtTheVelocityLimitAsAJumpUpwardDoes) {
  make_site();
  link_->inbox = {command(0.0)};
  step(1);
  link_->inbox = {command(0.010)};
  const double per_step = 0.5 * kDt;
  std::int64_t j = 2;
  for (; j < 30; ++j) {
    step(j);
    link_->inbox.clear();
  }
  ASSERT_EQ(target(28), 0.010);  // up: 21 steps (AfterAGapTheTargetRampsToTheNewestCommandAtTheVelocityLimit)
  link_->inbox = {command(-0.010)};
  for (; j < 80; ++j) {
    step(j);
    link_->inbox.clear();
  }
  ASSERT_FALSE(node_->tripped());
  const Recorder& r = node_->recorder();
  const std::size_t v = r.column_index("target_velocity");
  // Down: 20 mm at 0.488 mm per step, 40 full steps (19.53 mm), then the last 0.47 mm.
  for (std::size_t row = 29; row <= 68; ++row) {
    EXPECT_NEAR(target(row) - target(row - 1), -per_step, 1e-15) << row;
    EXPECT_NEAR(r.at(row, v), -0.5, 1e-12) << row;
  }
  EXPECT_EQ(target(69), -0.010);
  EXPECT_EQ(target(78), -0.010);
}

// A network may deliver a datagram twice. The second copy of the newest command is no new command:
// the site goes on as when nothing arrived (here it extrapolates the held target), counts a held
// step, and the copy is no sign of life. Used again, it would put the target back on the command.
TEST_F(SiteRules, ADuplicateOfTheNewestCommandIsNotUsedAgain) {
  make_site({"realtime.hold=EXTRAPOLATE"});
  const auto newest = command(0.0004, 0.2);
  link_->inbox = {newest};
  step(1);
  const std::int64_t heard = node_->last_valid_receive_ns();
  link_->inbox = {newest};
  step(2);
  EXPECT_EQ(target(0), 0.0004);
  EXPECT_NEAR(target(1), 0.0004 + 0.2 * kDt, 1e-15);  // extrapolated from the first copy
  EXPECT_EQ(node_->stats().commands_used, 1U);
  EXPECT_EQ(node_->stats().held_steps, 1U);
  EXPECT_EQ(node_->stats().extrapolated_steps, 1U);
  EXPECT_EQ(node_->stats().packets.duplicate, 1U);
  EXPECT_EQ(node_->last_valid_receive_ns(), heard);
  link_->inbox = {command(0.0005, 0.0)};
  step(3);
  EXPECT_EQ(target(2), 0.0005);  // the next genuine command is taken
}

// ---------------------------------------------------------------------------------------------
// The numerical node, driven by a site-side codec of the same session.

class NumericalRules : public ::testing::Test {
 protected:
  void SetUp() override {
    loaded_ = std::make_unique<LoadedConfig>(test::load_example("seed002/spring.textproto", {"duration_s=1"}));
    const config::Experiment& cfg = loaded_->experiment;
    ground_ = std::make_unique<GroundMotion>(load_ground_motion(cfg.ground_motion(), loaded_->base_dir));
    link_ = std::make_unique<ScriptedLink>(clock_);
    std::vector<NumericalSite> sites(1);
    sites[0].name = "spring";
    sites[0].site_id = kSiteId;
    sites[0].influence = Eigen::MatrixXd(2, 1);
    sites[0].influence << -1, 0;
    sites[0].link = link_.get();
    sites[0].estimators.push_back(
        make_force_estimator(config::MODIFIED_SMITH, make_model(cfg.site(0).channel(0).specimen()), 0));
    const StructuralModel structure = make_structure(cfg.structure());
    node_ = std::make_unique<NumericalNode>(NumericalNode::Setup{kSession, kRate, 100, {"x1", "x2"}, {}, {}, {}},
                                            structure, make_rk4(structure), *ground_, clock_, std::move(sites));
    node_->use_session(0, test::sealing_keys(kSession, kSiteId));
    site_ = std::make_unique<PacketCodec>(CodecRole::kSite, kSiteId, test::sealing_keys(kSession, kSiteId), kRate, 0);
  }
  std::vector<std::byte> feedback(double model_error_n) {
    wire::Envelope& env = site_->start(clock_.now_ns());
    env.mutable_feedback()->add_model_error_n(model_error_n);
    env.mutable_feedback()->add_force_n(0.0);
    env.mutable_feedback()->add_displacement_m(0.0);
    return bytes(site_->seal());
  }
  // A feedback whose four timestamps (NumericalNode::record_timing) make its round trip rtt_s: it
  // echoes a command sent rtt_s before now, and the site answered at once. Sealed at now.
  std::vector<std::byte> feedback_with_round_trip(double rtt_s) {
    const std::int64_t now = clock_.now_ns();
    wire::Envelope& env = site_->start(now);
    wire::Feedback* fb = env.mutable_feedback();
    fb->add_model_error_n(0.0);
    fb->add_force_n(0.0);
    fb->add_displacement_m(0.0);
    fb->set_echo_sent_ns(now - static_cast<std::int64_t>(std::llround(rtt_s * 1e9)));
    fb->set_echo_received_ns(now);
    return bytes(site_->seal());
  }
  void at_step(std::int64_t k) { clock_.set(static_cast<std::int64_t>(static_cast<double>(k) * kDt * 1e9)); }
  void step(std::int64_t k) {
    at_step(k);
    node_->step(k);
  }
  [[nodiscard]] double error_used(std::size_t row) const {
    const Recorder& r = node_->recorder();
    return r.at(row, r.column_index("e_spring"));
  }

  ManualClock clock_;
  std::unique_ptr<LoadedConfig> loaded_;
  std::unique_ptr<GroundMotion> ground_;
  std::unique_ptr<ScriptedLink> link_;
  std::unique_ptr<NumericalNode> node_;
  std::unique_ptr<PacketCodec> site_;
};

TEST_F(NumericalRules, NewestFeedbackWinsWhenAnOlderOneArrivesLaterInTheSameStep) {
  const auto older = feedback(50.0);
  const auto newer = feedback(100.0);
  link_->inbox = {newer, older};
  step(0);
  EXPECT_EQ(error_used(0), 100.0);
  // At rest the prediction model's force is 0: the force used is the newest model error.
  const Recorder& r = node_->recorder();
  EXPECT_EQ(r.at(0, r.column_index("f_spring")), 100.0);
  EXPECT_EQ(node_->site_stats()[0].packets.stale, 1U);
}

TEST_F(NumericalRules, NewestFeedbackWinsWhenAnOlderOneArrivesInALaterStep) {
  const auto older = feedback(50.0);
  const auto newer = feedback(100.0);
  link_->inbox = {newer};
  step(0);
  const std::int64_t heard = node_->site_stats()[0].last_valid_receive_ns;
  link_->inbox = {older};
  step(1);
  EXPECT_EQ(error_used(1), 100.0);
  EXPECT_EQ(node_->site_stats()[0].held_steps, 1U);
  EXPECT_EQ(node_->site_stats()[0].last_valid_receive_ns, heard);
}

TEST_F(NumericalRules, ForgedOrReplayedFeedbackIsNotUsed) {
  const auto first = feedback(10.0);
  link_->inbox = {first};
  step(0);
  auto forged = feedback(1e6);
  forged[forged.size() - 1] ^= std::byte{1};  // a corrupted tag: forged or damaged in flight
  link_->inbox = {forged, first};
  step(1);
  EXPECT_EQ(error_used(1), 10.0);
  EXPECT_EQ(node_->site_stats()[0].packets.unauthenticated, 1U);
  EXPECT_EQ(node_->site_stats()[0].packets.duplicate, 1U);
  link_->inbox = {feedback(20.0)};
  step(2);
  EXPECT_EQ(error_used(2), 20.0);
}

TEST_F(NumericalRules, AStopFromTheSiteIsHonouredEvenFromALateCopy) {
  const auto stop = [&] {
    wire::Envelope& env = site_->start(0);
    env.mutable_abort()->set_reason("interlock");
    return bytes(site_->seal());
  }();
  link_->inbox = {feedback(1.0)};  // newer than the abort
  step(0);
  link_->inbox = {stop};
  step(1);
  EXPECT_EQ(node_->site_stats()[0].peer_control, PeerControl::kAbort);
  EXPECT_EQ(node_->site_reason(0), "interlock");
}

// The numerical node's side of a duplicated datagram: the second copy of the newest feedback is no new
// feedback. The step holds (a held step, not a feedback used), the copy is no sign of life for the
// peer watchdog, and it times no round trip (used again, it would time one a step longer than the
// first copy's, which the delay guard would smooth in).
TEST_F(NumericalRules, ADuplicateOfTheNewestFeedbackIsNotUsedAgain) {
  at_step(1);
  const auto newest = feedback_with_round_trip(0.02);
  link_->inbox = {newest};
  step(1);
  const SiteStats& stats = node_->site_stats()[0];
  ASSERT_EQ(stats.feedback_used, 1U);
  ASSERT_EQ(node_->site_timing(0).round_trip.count(), 1U);
  const std::int64_t heard = stats.last_valid_receive_ns;
  const std::uint64_t held = stats.held_steps;
  link_->inbox = {newest};
  step(2);
  EXPECT_EQ(stats.feedback_used, 1U);
  EXPECT_EQ(stats.held_steps, held + 1);
  EXPECT_EQ(stats.packets.duplicate, 1U);
  EXPECT_EQ(stats.last_valid_receive_ns, heard);
  EXPECT_EQ(node_->site_timing(0).round_trip.count(), 1U);
  EXPECT_EQ(node_->site_timing(0).last_round_trip_ns, 20'000'000);
}

// ---------------------------------------------------------------------------------------------
// The delay guard (docs/stability.md): it acts on the smoothed round trip, never on the newest one.

class DelayGuardRule : public NumericalRules {
 protected:
  // A 100 ms budget, warned at 80 ms, smoothed over 0.1 s: each feedback moves the smoothed round
  // trip by a = dt / 0.1 s = 0.009765625 of its difference from it.
  static constexpr double kBudgetS = 0.1;
  static constexpr double kSmoothingS = 0.1;
  void SetUp() override {
    NumericalRules::SetUp();
    loaded_ = std::make_unique<LoadedConfig>(test::load_example("seed002/spring.textproto", {"duration_s=1"}));
    const config::Experiment& cfg = loaded_->experiment;
    std::vector<NumericalSite> sites(1);
    sites[0].name = "spring";
    sites[0].site_id = kSiteId;
    sites[0].influence = Eigen::MatrixXd(2, 1);
    sites[0].influence << -1, 0;
    sites[0].link = link_.get();
    sites[0].estimators.push_back(
        make_force_estimator(config::MODIFIED_SMITH, make_model(cfg.site(0).channel(0).specimen()), 0));
    sites[0].delay_guard.enabled = true;
    sites[0].delay_guard.budget_s = kBudgetS;
    sites[0].delay_guard.warn_s = 0.8 * kBudgetS;
    sites[0].delay_guard.smoothing_s = kSmoothingS;
    const StructuralModel structure = make_structure(cfg.structure());
    node_ = std::make_unique<NumericalNode>(NumericalNode::Setup{kSession, kRate, 2000, {"x1", "x2"}, {}, {}, {}},
                                            structure, make_rk4(structure), *ground_, clock_, std::move(sites));
    node_->use_session(0, test::sealing_keys(kSession, kSiteId));
    site_ = std::make_unique<PacketCodec>(CodecRole::kSite, kSiteId, test::sealing_keys(kSession, kSiteId), kRate, 0);
  }
  // Steps from..to-1, each with one feedback of the round trip rtt(k).
  template <typename Rtt>
  void run(std::int64_t from, std::int64_t to, Rtt rtt) {
    for (std::int64_t k = from; k < to; ++k) {
      at_step(k);
      link_->inbox = {feedback_with_round_trip(rtt(k))};
      node_->step(k);
    }
  }
  [[nodiscard]] const DelayGuard& guard() const { return node_->sites()[0].delay_guard; }
};

// One round trip of 500 ms among 20 ms ones (a packet delayed behind a burst): five times the budget,
// but it moves the smoothed round trip by a x 480 ms = 4.7 ms. The guard stays quiet.
TEST_F(DelayGuardRule, ASingleSpikeDoesNotTripIt) {
  run(1, 300, [](std::int64_t k) { return k == 200 ? 0.5 : 0.02; });
  EXPECT_FALSE(node_->delay_exceeded_site().has_value());
  EXPECT_EQ(guard().exceeded_step, -1);
  EXPECT_EQ(guard().warned_step, -1);
  // 20 ms + a (500 - 20) ms, less what one more step of 20 ms took back: the largest it reached.
  const double a = kDt / kSmoothingS;
  EXPECT_NEAR(guard().smoothed_max_s, 0.02 + a * 0.48, 1e-9);
}

// A rise from 20 ms to 150 ms that stays: the smoothed round trip is 150 - 130 (1 - a)^n ms after n
// feedbacks of 150 ms, past the 100 ms budget first at n = 98 (ln(50/130) / ln(1 - a) = 97.4) and
// past the 80 ms warning at n = 64 (ln(70/130) / ln(1 - a) = 63.1): not on the rise's first feedback.
TEST_F(DelayGuardRule, ASustainedRiseTripsItWhenTheSmoothedRoundTripPassesTheBudget) {
  constexpr std::int64_t kRise = 200;
  run(1, 600, [](std::int64_t k) { return k < kRise ? 0.02 : 0.15; });
  const double a = kDt / kSmoothingS;
  const auto first_past = [a](double level) {
    return static_cast<std::int64_t>(std::floor(std::log((0.15 - level) / 0.13) / std::log(1.0 - a))) + 1;
  };
  ASSERT_TRUE(node_->delay_exceeded_site().has_value());
  EXPECT_EQ(*node_->delay_exceeded_site(), 0U);
  EXPECT_EQ(first_past(kBudgetS), 98);
  EXPECT_EQ(guard().exceeded_step, kRise + first_past(kBudgetS) - 1);
  EXPECT_EQ(guard().warned_step, kRise + first_past(0.8 * kBudgetS) - 1);
  EXPECT_GT(guard().warned_step, kRise);  // not on the first feedback of the rise
}

// ---------------------------------------------------------------------------------------------
// The one-way delay estimates: jitter on one leg shows in that leg's estimate only.

struct LegEstimates {
  double forward_spread_us;  // p99 - p50
  double backward_spread_us;
  double forward_p50_us;
  double backward_p50_us;
};

// 20 ms each way, +-5 ms uniform jitter (independent per packet) on one leg, in virtual time.
LegEstimates estimates_with_jitter_on(const std::string& leg) {
  std::vector<std::string> overrides{"duration_s=10", "site[0].link.forward.delay_s=0.02",
                                     "site[0].link.backward.delay_s=0.02", "site[0].link." + leg + ".jitter_s=0.005",
                                     "site[0].link." + leg + ".allow_reorder=true"};
  Experiment ex(test::load_example("seed002/spring.textproto", overrides));
  const RunReport& r = ex.run();
  const SiteTimingReport& t = r.sites.at(0).timing;
  std::printf("[ measured ] jitter on the %s leg: forward p50 %.0f p99 %.0f us, backward p50 %.0f p99 %.0f us\n",
              leg.c_str(), t.forward_p50_us, t.forward_p99_us, t.backward_p50_us, t.backward_p99_us);
  return {t.forward_p99_us - t.forward_p50_us, t.backward_p99_us - t.backward_p50_us, t.forward_p50_us,
          t.backward_p50_us};
}

// Uniform +-5 ms: p99 - p50 = 4.9 ms on the jittered leg, less at most a step of quantisation; the
// steady leg spreads by less than a step. The clocks are one in virtual time, but the estimate
// cannot know it: the offset comes from the exchange with the shortest round trip (NTP), whose
// jittered leg took about 15 ms, so the steady leg reads (20 + 15) / 2 = 17.5 ms, within a step.
constexpr double kStepUs = 1e6 / kRate;

TEST(DelayEstimates, JitterOnTheForwardLegShowsOnlyInTheForwardEstimate) {
  const LegEstimates e = estimates_with_jitter_on("forward");
  EXPECT_GT(e.forward_spread_us, 4900.0 - kStepUs);
  EXPECT_LE(e.backward_spread_us, kStepUs);
  EXPECT_NEAR(e.backward_p50_us, 17500.0, kStepUs);
}

TEST(DelayEstimates, JitterOnTheBackwardLegShowsOnlyInTheBackwardEstimate) {
  const LegEstimates e = estimates_with_jitter_on("backward");
  EXPECT_GT(e.backward_spread_us, 4900.0 - kStepUs);
  EXPECT_LE(e.forward_spread_us, kStepUs);
  EXPECT_NEAR(e.forward_p50_us, 17500.0, kStepUs);
}

}  // namespace
}  // namespace rths::test_node_rules
