// What the nodes do with packets they must not use (docs/architecture.md §5): a numerical node and one site over
// an in-memory link, as the virtual-time runner builds them, with hand-made packets added.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "common/ground_motions/synthetic_motion.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/session_keys.hpp"
#include "common/transport/impairment.hpp"
#include "common/transport/virtual_link.hpp"
#include "node_numerical/engine/numerical_node.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"
#include "node_physical/site/physical_node.hpp"
#include "node_physical/site/physical_substructure.hpp"
#include "smith_predictor/parts/force_estimator.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths::test_nodes {
namespace {

// The seed 002 frame with a spring of 55834.4 N/m at a remote site behind an ideal actuator.
constexpr const char* kConfig = R"(
name: "nodes"
rate_hz: 1024
structure {
  dofs: 2
  mass_kg: [2701, 0, 0, 2701]
  stiffness_n_per_m: [558343, -279171, -279171, 279171]
  damping_ns_per_m { value: [3684, -1228, -1228, 2456] }
}
ground_motion { synthetic { seed: 3 duration_s: 1 } }
site {
  name: "spring"
  influence: [-1, 0]
  channel { specimen { spring { stiffness_n_per_m: 55834.4 } } }
}
)";

constexpr std::uint64_t kSession = 77;
constexpr std::uint32_t kSite = 1;
constexpr double kStiffness = 55834.4;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Nodes {
  explicit Nodes(const std::vector<std::string>& overrides = {})
      : experiment(parse_experiment(kConfig, "nodes", overrides)),
        clock(experiment.rate_hz()),
        link(clock, Impairment(), Impairment()),
        ground(make_synthetic(experiment.ground_motion().synthetic())),
        as_numerical(std::make_unique<PacketCodec>(CodecRole::kNumerical, kSite, virtual_session_keys(kSession, kSite),
                                                   experiment.rate_hz(), 0)),
        as_site(std::make_unique<PacketCodec>(CodecRole::kSite, kSite, virtual_session_keys(kSession, kSite),
                                              experiment.rate_hz(), 0)) {
    const config::Site& s = experiment.site(0);
    site = std::make_unique<PhysicalNode>(make_site_setup(experiment, s, kSite, 64),
                                          virtual_session_keys(kSession, kSite), link.site_end, clock,
                                          make_physical_substructure(s, experiment.rate_hz()), make_part2(s));
    NumericalSite remote;
    remote.name = s.name();
    remote.site_id = kSite;
    remote.influence = Eigen::MatrixXd(2, 1);
    remote.influence << -1.0, 0.0;
    remote.link = &link.numerical_end;
    remote.estimators.push_back(
        make_force_estimator(config::MODIFIED_SMITH, make_model(s.channel(0).specimen()), /*assumed_delay_steps=*/0));
    std::vector<NumericalSite> sites;
    sites.push_back(std::move(remote));
    const StructuralModel structure = make_structure(experiment.structure());
    numerical = std::make_unique<NumericalNode>(
        NumericalNode::Setup{kSession, experiment.rate_hz(), 64, {"x1", "x2"}, {}, {}, {}}, structure,
        make_rk4(structure), ground, clock, std::move(sites));
  }

  // A command to the site as the numerical node would send it, with the next sequence.
  void command(double displacement_m, double velocity_m_per_s = 0.0) {
    wire::Envelope& env = as_numerical->start(clock.now_ns());
    env.mutable_command()->set_step(as_numerical->sent_sequence() + 1);
    env.mutable_command()->add_displacement_m(displacement_m);
    env.mutable_command()->add_velocity_m_per_s(velocity_m_per_s);
    link.forward.push(as_numerical->seal());
  }
  // A feedback to the numerical node as the site would send it; echo timestamps 0: none.
  void feedback(double model_error_n, double force_n, std::int64_t echo_sent_ns = 0, std::int64_t echo_received_ns = 0,
                std::int64_t sent_ns = 0) {
    wire::Envelope& env = as_site->start(sent_ns);
    env.mutable_feedback()->add_model_error_n(model_error_n);
    env.mutable_feedback()->add_force_n(force_n);
    env.mutable_feedback()->set_echo_sent_ns(echo_sent_ns);
    env.mutable_feedback()->set_echo_received_ns(echo_received_ns);
    link.backward.push(as_site->seal());
  }
  void step_site(std::int64_t j) {
    clock.set_site_step(j);
    site->step(j);
  }
  void step_numerical(std::int64_t k) {
    clock.set_numerical_step(k);
    numerical->step(k);
  }
  [[nodiscard]] double recorded_site(const std::string& column) const {
    const Recorder& r = site->recorder();
    return r.at(r.rows() - 1, r.column_index(column));
  }

  config::Experiment experiment;
  VirtualClock clock;
  VirtualLink link;
  GroundMotion ground;
  std::unique_ptr<PacketCodec> as_numerical;  // seals the commands made here
  std::unique_ptr<PacketCodec> as_site;       // seals the feedback made here
  std::unique_ptr<PhysicalNode> site;
  std::unique_ptr<NumericalNode> numerical;
};

TEST(PhysicalNode, TargetThatIsNotFiniteNeverReachesTheActuatorAndStopsTheTest) {
  // Found by fuzzing: NaN passed the stroke-limit comparison and went to the actuator. With or
  // without a stroke limit, and in any of the three motions, the interlock trips and the last good
  // target is held.
  for (const char* limit : {"site[0].channel[0].stroke_limit_m=0.1", "site[0].channel[0].stroke_limit_m="}) {
    for (const bool in_velocity : {false, true}) {
      SCOPED_TRACE(std::string(limit) + (in_velocity ? ", infinite velocity" : ", NaN displacement"));
      Nodes n({limit});
      n.command(0.01);
      n.step_site(1);
      ASSERT_FALSE(n.site->tripped());
      EXPECT_EQ(n.recorded_site("force"), kStiffness * 0.01);
      in_velocity ? n.command(0.02, kInf) : n.command(kNaN);
      n.step_site(2);
      EXPECT_TRUE(n.site->tripped());
      EXPECT_EQ(n.site->trip().what, InterlockTrip::What::kTargetNotFinite);
      EXPECT_EQ(n.site->stats().packets.accepted, 2U);  // authentic: the interlock, not the codec, refuses it
      EXPECT_EQ(n.site->recorder().rows(), 1U);
      EXPECT_EQ(n.recorded_site("target"), 0.01);  // held: the spring feels exactly the last target
      EXPECT_EQ(n.recorded_site("force"), kStiffness * 0.01);
    }
  }
}

TEST(PhysicalNode, TargetBeyondTheStrokeLimitIsHeldAndNamedAsSuch) {
  Nodes n({"site[0].channel[0].stroke_limit_m=0.1"});
  n.command(0.05);
  n.step_site(1);
  n.command(-0.2);
  n.step_site(2);
  EXPECT_EQ(n.site->trip().what, InterlockTrip::What::kTargetStroke);
  EXPECT_EQ(n.recorded_site("target"), 0.05);
  // A later non-finite target does not change why the test stops.
  n.command(kNaN);
  n.step_site(3);
  EXPECT_EQ(n.site->trip().what, InterlockTrip::What::kTargetStroke);
  EXPECT_EQ(n.site->trip().value, -0.2);
}

TEST(NumericalNode, AFeedbackValueThatIsNotFiniteStopsTheNodeEvenWhereTheForceDoesNotUseIt) {
  // Found by fuzzing: under the modified Smith predictor the measured force is recorded, not used;
  // a NaN there left the state finite and the run went on. A site that sends one is broken.
  for (const auto& [error, force] : {std::pair{1.0, kNaN}, std::pair{kInf, 2.0}}) {
    Nodes n;
    n.feedback(error, force);
    n.step_numerical(1);
    EXPECT_FALSE(n.numerical->finite());
    EXPECT_EQ(n.numerical->non_finite_step(), 1);
    EXPECT_NE(n.numerical->non_finite_description().find("not finite from site \"spring\""), std::string::npos)
        << n.numerical->non_finite_description();
  }
}

TEST(NumericalNode, SealsOnlyOnceAHandshakesKeysAreInUse) {
  // Virtual time's frames are clear; a real-time run gives every remote site a handshake's keys
  // and refuses to step without them.
  Nodes n;
  EXPECT_FALSE(n.numerical->sealed(0));
  HandshakeNonce a{};
  HandshakeNonce b{};
  b.fill(1);
  n.numerical->use_session(0, derive_session_keys(insecure_key(), kSite, a, b));
  EXPECT_TRUE(n.numerical->sealed(0));
}

TEST(NumericalNode, EchoedTimestampsThatNoClockGivesAreNotTimed) {
  // Found by the sanitizers on a hand-made fuzz input: a feedback echoing a send time of -2^63 ns
  // made (t4 - t1) overflow (undefined). Its force is still used; the exchange is not timed.
  Nodes n;
  n.feedback(1.0, 2.0, std::numeric_limits<std::int64_t>::min(), 1, 5);
  n.step_numerical(1);
  EXPECT_EQ(n.numerical->site_stats()[0].packets.accepted, 1U);
  EXPECT_EQ(n.numerical->site_timing(0).round_trip.count(), 0U);
  EXPECT_EQ(n.numerical->site_timing(0).last_round_trip_ns, -1);

  // A real exchange: sent at 1 us here, received at 100 us and answered at 200 us on the site's
  // clock, back at numerical step 2 (2 half periods of 1/1024 s: 1953125 ns, rounded).
  n.feedback(1.0, 2.0, 1'000, 100'000, 200'000);
  n.step_numerical(2);
  EXPECT_EQ(n.numerical->site_timing(0).round_trip.count(), 1U);
  EXPECT_EQ(n.numerical->site_timing(0).last_round_trip_ns, (1'953'125 - 1'000) - (200'000 - 100'000));
}

}  // namespace
}  // namespace rths::test_nodes
