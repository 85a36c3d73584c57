// libFuzzer target: the packet decoder and the step of both nodes. A numerical node and one
// physical site run in virtual time over an in-memory link, as node_numerical/engine/experiment.cpp
// builds them, exchanging their real packets; the fuzzer adds datagrams of its own in both
// directions between the steps.
//
// Input: one options byte (hold policy, part-2 input, compensation mode, velocity limit, integrator,
// controller), then records `flags, length, payload[length]`:
//   flags bit 0    0: to the site (as if from the numerical node), 1: to the numerical node
//   flags bit 1    1: the payload as it is (anything a sender could put on the wire, which
//                  authentication rejects); 0: the payload parsed as an Envelope body and sealed
//                  with the session's keys, as a compromised peer could (make_datagram)
//   flags bit 2    the sealed frame's sequence: 1 ahead of the real sender's, 0 an old one
//   flags bits 3-5 steps to run after delivering it (0-7)
// then a few steps more, so that everything sent is received.
//
// Findings (docs/architecture.md §5: bad input is dropped and counted, never crashes a node; nothing reaches an
// actuator unchecked; a non-finite value stops the run): a crash or sanitizer report; a non-finite
// command reaching one of the site's actuators; a non-finite received value reaching the
// numerical node's force estimate without stopping the node in that step.
//
// Everything that knows today's wire format is in make_datagram() and make_rig().
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
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
#include "node_physical/controllers/actuator_controller.hpp"
#include "node_physical/plants/actuator_plant.hpp"
#include "node_physical/site/physical_node.hpp"
#include "node_physical/site/physical_substructure.hpp"
#include "smith_predictor/parts/force_estimator.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths {
namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_nodes finding: %s\n", what.c_str());
  std::abort();
}

// The seed 002 frame with a two-channel remote site: a spring behind the IISL actuator (seed 004
// Eq. 7) with a stroke limit and sensor noise under a feedforward controller, and a Bouc-Wen
// damper (seed 002 Table 3) under Horiuchi extrapolation. The prediction models differ from the
// specimens so that the model error is not zero.
constexpr const char* kConfig = R"(
name: "fuzz-nodes"
rate_hz: 1024
integrator: RK4
structure {
  dofs: 2
  mass_kg: [2701, 0, 0, 2701]
  stiffness_n_per_m: [558343, -279171, -279171, 279171]
  damping_ns_per_m { value: [3684, -1228, -1228, 2456] }
}
ground_motion {
  synthetic { seed: 1 duration_s: 1 pga_m_per_s2: 0.7 ground_frequency_hz: 2.5 ground_damping: 0.6 }
}
site {
  name: "lab"
  placement: REMOTE
  influence: [-1, 1, 0, -1]
  channel {
    specimen { spring { stiffness_n_per_m: 55834.4 } }
    prediction { spring { stiffness_n_per_m: 60000 } }
    stroke_limit_m: 0.1 velocity_limit_m_per_s: 1 force_limit_n: 1e5
    actuator {
      linear { numerator: [2.382e9] denominator: [1, 485.5, 1.317e5, 3.182e7, 2.382e9] }
      noise { displacement_sd_m: 1.24e-5 force_sd_n: 1.0 seed: 7 }
      limits { stroke_m: 0.1 }
    }
    controller { feedforward { denominator: [1, 75] } }
  }
  channel {
    specimen {
      bouc_wen {
        alpha_a_n_per_m: 2532 alpha_b_n_per_m_v: 6970 c0a_ns_per_m: 154 c0b_ns_per_m_v: 3282
        k0_n_per_m: 586 gamma_per_m2: 36200 beta_per_m2: 36200 a: 154.6 k1_n_per_m: 1.6
        c1a_ns_per_m: 9947 c1b_ns_per_m_v: 40386 eta_per_s: 60 x0_m: 0 n: 2 voltage_v: 3
      }
    }
    prediction { spring { stiffness_n_per_m: 800 } }
    controller { extrapolation { delay_s: 0.013 order: 3 } }
  }
  compensation { mode: MODIFIED_SMITH }
}
)";

constexpr std::uint64_t kSession = 0x5eed'0000'0000'0001;
constexpr std::uint32_t kSiteId = 1;
constexpr std::int64_t kMaxSteps = 1024;
constexpr std::int64_t kTrailingSteps = 4;

// The options byte's variants of kConfig, each parsed and validated once.
const config::Experiment& experiment_for(std::uint8_t options) {
  static std::array<std::optional<config::Experiment>, 128> cache;
  auto& slot = cache[options & 0x7FU];
  if (!slot) {
    std::vector<std::string> overrides;
    if ((options & 0x01U) != 0) overrides.emplace_back("realtime.hold=EXTRAPOLATE");
    if ((options & 0x02U) != 0) overrides.emplace_back("site[0].compensation.part2_input=MEASURED");
    switch ((options >> 2U) & 0x03U) {
      case 1:
        overrides.emplace_back("site[0].compensation.mode=CLASSIC_SMITH");
        overrides.emplace_back("site[0].compensation.assumed_round_trip_s=0.01");
        break;
      case 2:
        overrides.emplace_back("site[0].compensation.mode=NONE");
        break;
      default:
        break;
    }
    if ((options & 0x10U) != 0) overrides.emplace_back("site[0].channel[0].velocity_limit_m_per_s=0.01");
    if ((options & 0x20U) != 0) overrides.emplace_back("integrator=NEWMARK_AVERAGE_ACCELERATION");
    if ((options & 0x40U) != 0) overrides.emplace_back("site[0].channel[1].controller={ pass_through {} }");
    slot = parse_experiment(kConfig, "fuzz_nodes", overrides);
  }
  return *slot;
}

bool finite(const InterfaceMotion& m) {
  return std::isfinite(m.displacement_m) && std::isfinite(m.velocity_m_per_s) && std::isfinite(m.acceleration_m_per_s2);
}

// The site's actuator as the fuzzer watches it: every command that reaches it must be finite.
class WatchedPlant final : public Plant {
 public:
  explicit WatchedPlant(std::unique_ptr<Plant> plant) : plant_(std::move(plant)) {}
  Measurement step(const InterfaceMotion& actuator_command, double dt_s) override {
    if (!finite(actuator_command)) {
      finding("a non-finite command reached the actuator: " + std::to_string(actuator_command.displacement_m) + " m, " +
              std::to_string(actuator_command.velocity_m_per_s) + " m/s, " +
              std::to_string(actuator_command.acceleration_m_per_s2) + " m/s^2");
    }
    return plant_->step(actuator_command, dt_s);
  }
  void report(results::PlantReport& out) const override { plant_->report(out); }

 private:
  std::unique_ptr<Plant> plant_;
};

// The numerical node's use of a site's feedback: a non-finite value may reach it only to stop the
// node in that step (NumericalNode::finite(), exit code 9), before any command computed from it.
class WatchedEstimator final : public ForceEstimator {
 public:
  explicit WatchedEstimator(std::unique_ptr<ForceEstimator> estimator, bool& saw_non_finite)
      : estimator_(std::move(estimator)), saw_non_finite_(saw_non_finite) {}
  double estimate(const InterfaceMotion& motion, const ChannelFeedback& newest, double dt_s) override {
    if (!std::isfinite(newest.model_error_n) || !std::isfinite(newest.force_n) ||
        !std::isfinite(newest.displacement_m)) {
      saw_non_finite_ = true;
    }
    return estimator_->estimate(motion, newest, dt_s);
  }

 private:
  std::unique_ptr<ForceEstimator> estimator_;
  bool& saw_non_finite_;
};

// Both nodes of a virtual-time run over one in-memory link without impairment.
struct Rig {
  explicit Rig(const config::Experiment& e)
      : experiment(e),
        rate_hz(e.rate_hz()),
        clock(e.rate_hz()),
        link(clock, Impairment(), Impairment()),
        ground(make_synthetic(e.ground_motion().synthetic())) {}

  config::Experiment experiment;
  double rate_hz;
  VirtualClock clock;
  VirtualLink link;
  GroundMotion ground;
  std::unique_ptr<PhysicalNode> site;
  std::unique_ptr<NumericalNode> numerical;
  bool estimator_saw_non_finite = false;

  // As Experiment::run_hybrid_steps: the site half a period ahead of the numerical node; false once
  // the run has ended (an interlock tripped, a value went non-finite).
  bool step(std::int64_t k) {
    clock.set_site_step(k);
    site->step(k);
    if (site->tripped()) {
      return false;
    }
    clock.set_numerical_step(k);
    numerical->step(k);
    if (estimator_saw_non_finite && numerical->finite()) {
      finding("a non-finite received value reached the force estimate and the node did not stop");
    }
    return numerical->finite() && !numerical->tripped_site();
  }
};

// The session's keys as a handshake would give them (sealing): what a peer on a socket sends,
// so the fuzzer reaches the nodes through authentication as an attacker holding the key would.
SessionKeys sealing_keys() {
  SessionKeys keys = virtual_session_keys(kSession, kSiteId);
  keys.sealed = true;
  return keys;
}

std::unique_ptr<Rig> make_rig(std::uint8_t options) {
  const config::Experiment& experiment = experiment_for(options);
  auto rig = std::make_unique<Rig>(experiment);
  const config::Site& site = experiment.site(0);
  const auto rows = static_cast<std::size_t>(kMaxSteps + kTrailingSteps);

  std::vector<std::unique_ptr<ActuatorController>> controllers;
  std::vector<std::unique_ptr<Plant>> plants;
  for (const auto& channel : site.channel()) {
    controllers.push_back(make_controller(channel.controller(), rig->rate_hz));
    plants.push_back(std::make_unique<WatchedPlant>(make_plant(channel, rig->rate_hz)));
  }
  rig->site = std::make_unique<PhysicalNode>(
      make_site_setup(experiment, site, kSiteId, rows), sealing_keys(), rig->link.site_end, rig->clock,
      std::make_unique<PhysicalSubstructure>(std::move(controllers),
                                             std::make_unique<SimulatedPlants>(std::move(plants)),
                                             Interlock(channel_limits(site), 1.0 / rig->rate_hz)),
      make_part2(site));

  const std::uint32_t dofs = experiment.structure().dofs();
  NumericalSite numerical_site;
  numerical_site.name = site.name();
  numerical_site.site_id = kSiteId;
  numerical_site.influence.resize(dofs, site.channel_size());
  for (Eigen::Index r = 0; r < numerical_site.influence.rows(); ++r) {
    for (Eigen::Index c = 0; c < numerical_site.influence.cols(); ++c) {
      numerical_site.influence(r, c) = site.influence(static_cast<int>(r * site.channel_size() + c));
    }
  }
  numerical_site.link = &rig->link.numerical_end;
  const int assumed_steps = static_cast<int>(std::lround(site.compensation().assumed_round_trip_s() * rig->rate_hz));
  for (const auto& channel : site.channel()) {
    numerical_site.estimators.push_back(std::make_unique<WatchedEstimator>(
        make_force_estimator(site.compensation().mode(),
                             make_model(channel.has_prediction() ? channel.prediction() : channel.specimen()),
                             assumed_steps),
        rig->estimator_saw_non_finite));
  }
  std::vector<NumericalSite> sites;
  sites.push_back(std::move(numerical_site));
  const StructuralModel structure = make_structure(experiment.structure());
  std::unique_ptr<Integrator> integrator = experiment.integrator() == config::NEWMARK_AVERAGE_ACCELERATION
                                               ? make_newmark(structure, 1.0 / rig->rate_hz)
                                               : make_rk4(structure);
  const NumericalNode::Setup setup{kSession, rig->rate_hz, rows, {"x1", "x2"}, {}, {}, {}};
  rig->numerical = std::make_unique<NumericalNode>(setup, structure, std::move(integrator), rig->ground, rig->clock,
                                                   std::move(sites));
  rig->numerical->use_session(0, sealing_keys());
  return rig;
}

// The datagram that carries `payload` to a node of this session and site. raw: the payload's bytes
// as they are. Otherwise the payload is parsed as an Envelope (when it parses) and sealed with the
// session's keys in the sender's role, so that the fuzzer's bodies (command, feedback, stop...)
// reach the nodes as a peer holding the key could send them: newer ones with a sequence ahead of
// the real sender's, older ones with one behind it.
std::vector<std::byte> make_datagram(std::span<const std::uint8_t> payload, bool raw, bool to_numerical, bool newer,
                                     std::int64_t step, std::int64_t sent_ns) {
  std::vector<std::byte> datagram;
  wire::Envelope body;
  if (!raw && body.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    const CodecRole role = to_numerical ? CodecRole::kSite : CodecRole::kNumerical;
    const auto codec = std::make_unique<PacketCodec>(role, kSiteId, sealing_keys(), 1024.0, 0);
    // The real sender is near sequence `step`: advance past it (newer) or stay at 1 (older).
    const std::int64_t target = newer ? step + 8 : 0;
    while (static_cast<std::int64_t>(codec->sent_sequence()) < target) {
      (void)codec->start(0);
      (void)codec->seal();
    }
    wire::Envelope& env = codec->start(sent_ns);
    env.CopyFrom(body);
    const auto sealed = codec->seal();
    datagram.assign(sealed.begin(), sealed.end());
    return datagram;
  }
  for (const std::uint8_t b : payload) {
    datagram.push_back(static_cast<std::byte>(b));
  }
  return datagram;
}

}  // namespace
}  // namespace rths

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::span<const std::uint8_t> input(data, size);
  const auto rig = rths::make_rig(input[0]);
  std::size_t at = 1;
  std::int64_t k = 0;
  while (at + 2 <= input.size() && k < rths::kMaxSteps) {
    const std::uint8_t flags = input[at];
    const std::size_t length = std::min<std::size_t>(input[at + 1], input.size() - at - 2);
    const auto payload = input.subspan(at + 2, length);
    at += 2 + length;
    const bool to_numerical = (flags & 0x01U) != 0;
    const bool raw = (flags & 0x02U) != 0;
    const bool newer = (flags & 0x04U) != 0;
    const auto datagram = rths::make_datagram(payload, raw, to_numerical, newer, k, rig->clock.now_ns());
    (to_numerical ? rig->link.backward : rig->link.forward).push(datagram);
    for (int s = (flags >> 3U) & 0x07U; s > 0 && k < rths::kMaxSteps; --s) {
      if (!rig->step(k++)) {
        return 0;
      }
    }
  }
  for (int s = 0; s < rths::kTrailingSteps; ++s) {
    if (!rig->step(k++)) {
      return 0;
    }
  }
  return 0;
}
