// The rules of a site (proto/site.proto, Site): its name, influence and channels (specimen and
// prediction models, actuator, interlock and tracking limits, controller), its setup, address, safe
// motion, compensation, link, driver, delay guard and multi-axial parts. The config validator
// (config_validate.cpp) runs them as one section per site; each component's own rules are asked
// through the registry.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config/config.hpp"
#include "common/config/frame_force_checks.hpp"
#include "common/config/setup_checks.hpp"
#include "common/core/address.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "config_checks.hpp"

namespace rths::validation {
namespace {

// Safe-motion bounds (proto/site.proto, SafeMotion): the longest start delay
// (realtime.start_delay_s, config_validate.cpp) is 10 s.
constexpr double kMaxStartRampS = 9.9;     // a start ramp ends within the longest start delay
constexpr double kStartRampMarginS = 0.1;  // between the end of the start ramp and the earliest start
constexpr double kMaxStopHoldS = 60.0;
// Delay guard bounds (proto/site.proto, DelayGuard): a model ten times off is no model, and a
// smoothing longer than 10 s would watch a delay long after it destabilised the test.
constexpr double kMaxGuardModelError = 10.0;
constexpr double kMaxGuardSmoothingS = 10.0;

// The models a channel may hold, as an error spells them ("spring { ... } or bouc_wen { ... }"): from
// the registry, so that the sentence stays true as models are added.
std::string model_kinds() {
  return registry::member_sketches(*config::Model::descriptor(), "kind");
}

// A channel's specimen or prediction model (config::Model): its rules are the registered model's
// (smith_predictor/models/, docs/architecture.md §9).
void check_model(const config::Experiment& experiment, const config::Site& site, const config::Model& model,
                 const std::string& path, const Checker& check) {
  const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
  if (!check_component(model, "kind", context, check.at(path))) {
    check.fail(path, fmt::format("has no model; expected {}", model_kinds()));
  }
}

// One direction of a link: its delay and loss models by the rules registered for them
// (common/impairments/), the rules across them here.
void check_impairment(const config::Impairment& impairment, const std::string& path, const Checker& check) {
  check.expect(impairment.delay_s() >= 0, child(path, "delay_s"),
               fmt::format("is {}, expected a delay >= 0 s", impairment.delay_s()));
  const bool jitter_ok = check.expect(impairment.jitter_s() >= 0, child(path, "jitter_s"),
                                      fmt::format("is {}, expected a jitter >= 0 s", impairment.jitter_s()));
  if (const std::string model = registry::member_name(impairment, "jitter_model"); jitter_ok && !model.empty()) {
    check.expect(impairment.jitter_s() == 0, child(path, "jitter_s"),
                 fmt::format("is {}, but {} {{ ... }} is given too; expected 0 (jitter_s is the uniform jitter, "
                             "used only when no other delay model is given)",
                             impairment.jitter_s(), model));
  }
  const ComponentContext context;
  check_component(impairment, "jitter_model", context, check.at(path));
  if (impairment.has_loss() && !check_component(impairment.loss(), "model", context, check.at(child(path, "loss")))) {
    check.expect(false, child(path, "loss"),
                 "has no model; expected loss { probability: p } or loss { gilbert_elliott { ... } }");
  }
  const double duplicate = impairment.duplicate_probability();
  check.expect(duplicate >= 0 && duplicate <= 1, child(path, "duplicate_probability"),
               fmt::format("is {}, expected a duplication probability in [0, 1]", duplicate));
}

// A channel's actuator: its dynamics by the rules its model registered (node_physical/actuators/),
// its noise and limits.
void check_actuator(const config::Experiment& experiment, const config::Site& site, const config::Channel& channel,
                    const std::string& path, const Checker& check) {
  const config::Actuator& actuator = channel.actuator();
  const ComponentContext context{
      .rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site, .channel = &channel};
  if (!check_component(actuator, "dynamics", context, check.at(path))) {
    check.fail(path, fmt::format("has no dynamics; expected {}",
                                 registry::member_sketches(*config::Actuator::descriptor(), "dynamics")));
  }
  const auto& noise = actuator.noise();
  check.require(noise.displacement_sd_m() >= 0, child(path, "noise.displacement_sd_m"),
                fmt::format("is {}, expected a standard deviation >= 0 m", noise.displacement_sd_m()));
  check.require(noise.force_sd_n() >= 0, child(path, "noise.force_sd_n"),
                fmt::format("is {}, expected a standard deviation >= 0 N", noise.force_sd_n()));
  const auto& limits = actuator.limits();
  check.require(limits.stroke_m() >= 0, child(path, "limits.stroke_m"),
                fmt::format("is {}, expected >= 0 m (0: none)", limits.stroke_m()));
  check.require(limits.velocity_m_per_s() >= 0, child(path, "limits.velocity_m_per_s"),
                fmt::format("is {}, expected >= 0 m/s (0: none)", limits.velocity_m_per_s()));
  check.require(limits.force_n() >= 0, child(path, "limits.force_n"),
                fmt::format("is {}, expected >= 0 N (0: none)", limits.force_n()));
}

// A channel's or an actuator's controller, by the rules its component registered.
void check_controller(const config::Experiment& experiment, const config::Site& site,
                      const config::Controller& controller, const std::string& path, const Checker& check) {
  const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
  check_component(controller, "kind", context, check.at(path));
}

// A limit is given and positive, or absent (none); a channel with an actuator needs all three, since
// a real or emulated actuator must never run without its interlock.
void check_interlock_limits(const config::Channel& channel, const std::string& path, const Checker& check) {
  struct Limit {
    bool given;
    double value;
    std::string_view field;
    std::string_view unit;
  };
  const std::array<Limit, 3> limits{{
      {channel.has_stroke_limit_m(), channel.stroke_limit_m(), "stroke_limit_m", "m"},
      {channel.has_velocity_limit_m_per_s(), channel.velocity_limit_m_per_s(), "velocity_limit_m_per_s", "m/s"},
      {channel.has_force_limit_n(), channel.force_limit_n(), "force_limit_n", "N"},
  }};
  for (const Limit& l : limits) {
    if (l.given) {
      check.require(l.value > 0, child(path, l.field),
                    fmt::format("is {}, expected a positive limit ({}); leave it out for none", l.value, l.unit));
    } else {
      check.require(!channel.has_actuator(), child(path, l.field),
                    fmt::format("missing; a channel with an actuator needs its interlock limits stroke_limit_m, "
                                "velocity_limit_m_per_s and force_limit_n (> 0, {})",
                                l.unit));
    }
  }
}

// The tracking interlock: a positive limit, over 1 to one second of steps.
void check_tracking_limit(const config::Channel& channel, const std::string& path, double rate_hz,
                          const Checker& check) {
  if (channel.has_tracking_limit_m()) {
    check.require(
        channel.tracking_limit_m() > 0 && std::isfinite(channel.tracking_limit_m()), child(path, "tracking_limit_m"),
        fmt::format("is {}, expected a positive limit (m); leave it out for none", channel.tracking_limit_m()));
  }
  const auto max_steps = static_cast<std::uint32_t>(std::ceil(rate_hz));
  check.require(channel.tracking_limit_steps() >= 1 && channel.tracking_limit_steps() <= max_steps,
                child(path, "tracking_limit_steps"),
                fmt::format("is {}, expected 1 to {} (one second of steps at {:g} Hz)", channel.tracking_limit_steps(),
                            max_steps, rate_hz));
  check.require(channel.has_tracking_limit_m() || !channel.has_tracking_limit_steps(),
                child(path, "tracking_limit_steps"), "is given without tracking_limit_m; expected both, or neither");
}

// The start ramp must end before step 0 and move within the velocity limits; the stop ramp's safe
// positions must be inside the strokes.
void check_safe_motion(const config::Experiment& experiment, const config::Site& site, const std::string& path,
                       const Checker& check) {
  const config::SafeMotion& m = site.safe_motion();
  // (With a driver, the driver's own rule names the placement.)
  check.require(site.placement() == config::REMOTE || site.has_driver(), path,
                fmt::format("site \"{}\" is LOCAL; expected safe_motion only on a REMOTE site (rths-physical runs "
                            "the ramps)",
                            site.name()));
  check.require(m.start_ramp_s() >= 0 && m.start_ramp_s() <= kMaxStartRampS, child(path, "start_ramp_s"),
                fmt::format("is {:g}, expected 0 to {:g} s", m.start_ramp_s(), kMaxStartRampS));
  const double start_delay = experiment.realtime().start_delay_s();
  check.require(m.start_ramp_s() == 0 || start_delay >= m.start_ramp_s() + kStartRampMarginS,
                child(path, "start_ramp_s"),
                fmt::format("is {:g} s but realtime.start_delay_s is {:g} s; expected a start delay of at least the "
                            "ramp plus {:g} s (the ramp ends before step 0)",
                            m.start_ramp_s(), start_delay, kStartRampMarginS));
  check.require(m.stop_hold_s() >= 0 && m.stop_hold_s() <= kMaxStopHoldS, child(path, "stop_hold_s"),
                fmt::format("is {:g}, expected 0 to {:g} s", m.stop_hold_s(), kMaxStopHoldS));
  check.require(m.stop_velocity_m_per_s() > 0, child(path, "stop_velocity_m_per_s"),
                fmt::format("is {:g}, expected a velocity > 0 m/s", m.stop_velocity_m_per_s()));
  check.require(m.safe_position_m_size() == 0 || m.safe_position_m_size() == site.channel_size(),
                child(path, "safe_position_m"),
                fmt::format("has {} values, expected none (0 for every channel) or one per channel ({})",
                            m.safe_position_m_size(), site.channel_size()));
  for (int c = 0; c < site.channel_size() && c < m.safe_position_m_size(); ++c) {
    const double stroke = site.channel(c).stroke_limit_m();
    check.require(stroke == 0 || std::abs(m.safe_position_m(c)) < stroke, element(child(path, "safe_position_m"), c),
                  fmt::format("is {:g} m, expected a position inside channel {}'s stroke limit {:g} m",
                              m.safe_position_m(c), c, stroke));
  }
  for (int c = 0; c < site.channel_size(); ++c) {
    const double limit = site.channel(c).velocity_limit_m_per_s();
    check.require(limit == 0 || m.stop_velocity_m_per_s() <= limit, child(path, "stop_velocity_m_per_s"),
                  fmt::format("is {:g} m/s, expected at most channel {}'s velocity_limit_m_per_s {:g}",
                              m.stop_velocity_m_per_s(), c, limit));
  }
}

// The site's driver: the equipment behind its channels.
void check_driver(const config::Site& site, const std::string& path, double rate_hz, const Checker& check) {
  // Real equipment starts and stops on ramps, never by a jump.
  check.require(site.has_safe_motion(), child(path, "safe_motion"),
                fmt::format("missing; site \"{}\" drives equipment, expected safe_motion {{ start_ramp_s: ... "
                            "stop_hold_s: ... stop_velocity_m_per_s: ... }} (docs/running.md: start and stop ramps)",
                            site.name()));
  const std::string at = child(path, "driver");
  check.require(site.placement() != config::LOCAL, at,
                fmt::format("site \"{}\" is LOCAL (in the numerical node's process, which also runs in virtual time "
                            "and cannot keep equipment in step); expected placement: REMOTE, served by rths-physical "
                            "(on the numerical node's own host for a local specimen)",
                            site.name()));
  if (site.driver().kind_case() == config::Driver::KIND_NOT_SET) {
    check.fail(at, "has no kind; expected udp_bridge { target: \"host:port\" command { ... } reply { ... } }");
  }
  for (int c = 0; c < site.channel_size(); ++c) {
    const auto& channel = site.channel(c);
    const std::string channel_path = element(child(path, "channel"), c);
    for (const auto& [given, field] : {std::pair{channel.has_stroke_limit_m(), "stroke_limit_m"},
                                       std::pair{channel.has_velocity_limit_m_per_s(), "velocity_limit_m_per_s"},
                                       std::pair{channel.has_force_limit_n(), "force_limit_n"}}) {
      check.require(given, child(channel_path, field),
                    "missing; a site with a driver moves real actuators, which need their interlock limits "
                    "stroke_limit_m, velocity_limit_m_per_s and force_limit_n (> 0)");
    }
  }
  // With a setup transformation the datagrams carry its actuators, each with its own stroke limit.
  if (site.has_setup()) {
    const auto carried = static_cast<int>(driven_channels(site));
    check.require(site.setup().stroke_limit_m_size() == carried, child(path, "setup.stroke_limit_m"),
                  fmt::format("has {} values; a site with a driver moves real actuators, expected each one's stroke "
                              "limit ({} values, m, > 0)",
                              site.setup().stroke_limit_m_size(), carried));
  }
  // The driver's own rules, by the registry (node_physical/drivers/).
  check_component(site.driver(), "kind", ComponentContext{rate_hz, nullptr, &site}, check.at(child(path, "driver")));
}

// The run-time delay guard's settings (the budget itself is planned when the run starts).
void check_delay_guard(const config::Site& site, const std::string& path, const Checker& check) {
  const config::DelayGuard& g = site.delay_guard();
  check.require(site.placement() == config::REMOTE, path,
                fmt::format("site \"{}\" is LOCAL (in the numerical node's process: no network delays its "
                            "force); expected delay_guard only on a REMOTE site",
                            site.name()));
  check.require(
      g.model_error() >= 0 && g.model_error() <= kMaxGuardModelError, child(path, "model_error"),
      fmt::format("is {:g}, expected a relative model error from 0 to {:g}", g.model_error(), kMaxGuardModelError));
  check.require(g.warn_fraction() > 0 && g.warn_fraction() <= 1, child(path, "warn_fraction"),
                fmt::format("is {:g}, expected a fraction of the budget above 0 and at most 1", g.warn_fraction()));
  check.require(g.transfer_delay_s() >= 0 && std::isfinite(g.transfer_delay_s()), child(path, "transfer_delay_s"),
                fmt::format("is {:g}, expected a delay >= 0 s", g.transfer_delay_s()));
  check.require(g.smoothing_s() > 0 && g.smoothing_s() <= kMaxGuardSmoothingS, child(path, "smoothing_s"),
                fmt::format("is {:g}, expected a time constant above 0 and at most {:g} s", g.smoothing_s(),
                            kMaxGuardSmoothingS));
}

// A frame model of all a site's channels as its modified Smith predictor's prediction model.
void check_frame_prediction(const config::Site& site, const std::string& path, const Checker& check) {
  const std::string at = child(path, "compensation.frame_prediction");
  check.require(site.placement() == config::REMOTE, at,
                "is given on a LOCAL site, whose force needs no prediction; expected it only on a REMOTE site");
  check.require(site.compensation().mode() == config::MODIFIED_SMITH, at,
                fmt::format("is given with compensation.mode {}; a frame prediction model is the modified Smith "
                            "predictor's: expected mode: MODIFIED_SMITH",
                            config::CompensationMode_Name(site.compensation().mode())));
  for (int c = 0; c < site.channel_size(); ++c) {
    check.require(!site.channel(c).has_prediction(), child(element(child(path, "channel"), c), "prediction"),
                  "is given with compensation.frame_prediction, which predicts every channel; expected one or the "
                  "other");
  }
  if (const auto problem = frame_force_model_problem(site.compensation().frame_prediction(),
                                                     static_cast<std::size_t>(site.channel_size()))) {
    check.fail(problem->field.empty() ? at : child(at, problem->field), problem->what);
  }
}

void check_multi_axial(const config::Experiment& experiment, const config::Site& site, const std::string& path,
                       const Checker& check) {
  for (const auto& [name, given] : {std::pair{"actuator_plant", site.has_actuator_plant()},
                                    std::pair{"actuator_controller", site.has_actuator_controller()},
                                    std::pair{"force_model", site.has_force_model()}}) {
    check.require(!given || site.has_setup(), child(path, name),
                  "needs the site's setup { ... }: it works on the setup's actuators");
  }
  for (int i = 0; i < site.evaluation_dof_size(); ++i) {
    const std::string& dof = site.evaluation_dof(i);
    const std::vector<std::string> names = dof_names(experiment.structure());
    check.require(std::find(names.begin(), names.end(), dof) != names.end(), element(child(path, "evaluation_dof"), i),
                  fmt::format("\"{}\" is not a DOF of the structure; expected one of its dof_name", dof));
    check.require(site.has_actuator_plant(), element(child(path, "evaluation_dof"), i),
                  "is given on a site without an actuator_plant; the benchmark criteria are a multi-axial site's");
  }
  if (!site.has_setup()) return;
  const std::size_t actuators = setup_actuators(site.setup());
  if (site.has_actuator_plant()) {
    const std::string at = child(path, "actuator_plant");
    check.require(site.actuator_plant().has_two_actuator_frame(), at,
                  "has no plant; expected two_actuator_frame { ... } (seed 000 Eqs. 19-26)");
    check.require(actuators == 2, at,
                  fmt::format("two_actuator_frame drives two actuators, the setup has {}", actuators));
    check_component(site.actuator_plant(), "kind",
                    ComponentContext{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site},
                    check.at(at));
    const double sd = site.actuator_plant().noise().displacement_sd_m();
    check.require(std::isfinite(sd) && sd >= 0, child(at, "noise.displacement_sd_m"),
                  fmt::format("is {}, expected a standard deviation >= 0 m", sd));
    check.require(site.actuator_plant().noise().force_sd_n() == 0, child(at, "noise.force_sd_n"),
                  "is given, but the actuator plant measures no force (the force model gives it); expected none");
    check.require(site.has_force_model(), child(path, "force_model"),
                  "missing; a site with an actuator_plant has no load cells: expected force_model { ... }");
  }
  if (site.has_actuator_controller()) {
    const std::string at = child(path, "actuator_controller");
    for (int c = 0; c < site.channel_size(); ++c) {
      check.require(!site.channel(c).has_controller(), child(element(child(path, "channel"), c), "controller"),
                    "is given with the site's actuator_controller; expected one or the other");
    }
    const config::SiteController& controller = site.actuator_controller();
    // One controller per actuator of the setup: the site's rule; each controller's are its own.
    check.require(!controller.has_decentralised() ||
                      static_cast<std::size_t>(controller.decentralised().actuator_size()) == actuators,
                  child(at, "decentralised.actuator"),
                  fmt::format("has {} controller(s), expected one per actuator of the setup ({})",
                              controller.decentralised().actuator_size(), actuators));
    const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
    if (!check_component(controller, "kind", context, check.at(at))) {
      check.fail(at, "has no controller; expected decentralised { actuator { ... } ... } or ukf { ... }");
    }
  }
  if (site.has_force_model()) {
    const std::string at = child(path, "force_model");
    // A remote multi-axial site's channels have no model each: its Smith predictor needs one of them all.
    const config::CompensationMode mode = site.compensation().mode();
    if (site.placement() == config::REMOTE) {
      check.require(mode != config::MODIFIED_SMITH || site.compensation().has_frame_prediction(),
                    child(path, "compensation.frame_prediction"),
                    "missing; a REMOTE multi-axial site's modified Smith predictor needs a frame model of all its "
                    "channels: expected frame_prediction { dofs: ... } (or mode: NONE, no compensation)");
      check.require(mode != config::CLASSIC_SMITH, child(path, "compensation.mode"),
                    "is CLASSIC_SMITH on a multi-axial site, which has no per-channel model to predict with; "
                    "expected MODIFIED_SMITH with a frame_prediction, or NONE");
      check.require(!site.has_delay_guard(), child(path, "delay_guard"),
                    "is given on a multi-axial site; its delay budget is planned from per-channel models, which "
                    "such a site has not: expected no delay_guard");
    }
    if (const auto problem =
            frame_force_model_problem(site.force_model(), static_cast<std::size_t>(site.channel_size()))) {
      check.fail(problem->field.empty() ? at : child(at, problem->field), problem->what);
    }
  }
}

}  // namespace

void check_site(const config::Experiment& experiment, int index, const Checker& check) {
  const auto& site = experiment.site(index);
  const std::string path = element("site", index);
  const std::string name_path = child(path, "name");
  const std::string& name = site.name();
  if (const std::string problem = site_name_problem(name); !problem.empty()) check.fail(name_path, problem);
  for (int other = 0; other < index; ++other) {
    check.require(experiment.site(other).name() != name, name_path,
                  fmt::format("\"{}\" is also the name of site[{}]; expected unique site names", name, other));
  }

  // The multi-axial evaluation reads the reference's whole motion from its records.
  check.require(!site.has_setup() || experiment.structure().record_dof_size() == 0, "structure.record_dof",
                fmt::format("names {} DOFs, but site \"{}\" has a setup, whose evaluation needs every DOF recorded; "
                            "expected no record_dof",
                            experiment.structure().record_dof_size(), name));

  const int channels = site.channel_size();
  check.require(channels >= 1, child(path, "channel"),
                fmt::format("missing; site \"{}\" needs at least one channel {{ specimen {{ ... }} }}", name));
  const std::uint64_t dofs = experiment.structure().dofs();
  const int influence = site.influence_size();
  check.require(static_cast<std::uint64_t>(influence) == dofs * static_cast<std::uint64_t>(channels),
                child(path, "influence"),
                fmt::format("site \"{}\": influence has {} entries, structure has {} DOF{} and the site {} channel{} "
                            "(expected dofs x channels = {}, row-major)",
                            name, influence, dofs, dofs == 1 ? "" : "s", channels, channels == 1 ? "" : "s",
                            dofs * static_cast<std::uint64_t>(channels)));
  // A channel moves one quantity (its records are in m or in rad): its DOFs are all of one kind.
  const std::vector<DofKind> kinds = dof_kinds(experiment.structure());
  for (int c = 0; c < channels; ++c) {
    std::optional<std::size_t> translation;
    std::optional<std::size_t> rotation;
    for (std::size_t d = 0; d < kinds.size(); ++d) {
      if (site.influence(static_cast<int>(d) * channels + c) == 0.0) continue;
      (kinds[d] == DofKind::kRotation ? rotation : translation) = d;
    }
    if (translation && rotation) {
      const std::vector<std::string> names = dof_names(experiment.structure());
      check.fail(child(path, "influence"),
                 fmt::format("site \"{}\" channel {} acts on {} (a translation) and {} (a rotation); expected the "
                             "DOFs of one channel all of one kind (structure.dof_kind, docs/models.md)",
                             name, c, names[*translation], names[*rotation]));
    }
  }

  // A multi-axial site's force comes from its force model, and the monolithic reference is then the
  // whole structure with the specimen in it: its channels have no specimen of their own.
  const bool modelled_force = site.has_force_model() || site.has_actuator_plant();
  for (int c = 0; c < channels; ++c) {
    const auto& channel = site.channel(c);
    const std::string channel_path = element(child(path, "channel"), c);
    if (modelled_force) {
      check.require(!channel.has_specimen(), child(channel_path, "specimen"),
                    "is given, but the site's force_model gives its forces; expected no specimen");
      check.require(!channel.has_actuator(), child(channel_path, "actuator"),
                    "is given, but the site's actuator_plant simulates its actuators; expected no actuator");
    } else {
      check.require(channel.has_specimen(), child(channel_path, "specimen"),
                    fmt::format("missing; expected specimen {{ {} }}", model_kinds()));
      check_model(experiment, site, channel.specimen(), child(channel_path, "specimen"), check);
    }
    if (channel.has_prediction()) {
      check_model(experiment, site, channel.prediction(), child(channel_path, "prediction"), check);
    }
    if (channel.has_actuator()) check_actuator(experiment, site, channel, child(channel_path, "actuator"), check);
    check_interlock_limits(channel, channel_path, check);
    check_tracking_limit(channel, channel_path, experiment.rate_hz(), check);
    if (channel.has_controller()) {
      check_controller(experiment, site, channel.controller(), child(channel_path, "controller"), check);
    }
  }

  if (site.has_setup()) {
    // The setup's DOFs are the site's channels. Both nodes validate the same file, so a setup the site
    // could not build is refused at the numerical node too, before anything moves. The site's rules
    // below count the setup's actuators: they wait for a setup without problems.
    const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment, .site = &site};
    if (!check_setup(site.setup(), context, check.at(child(path, "setup")))) return;
  }

  if (site.placement() == config::REMOTE) {
    // Where the numerical node sends in real time: checked here so a bad one never waits for a run.
    const std::string at = child(path, "address");
    HostPort peer;
    try {
      peer = parse_host_port(site.address());
    } catch (const std::invalid_argument& e) {
      check.fail(at, e.what());
    }
    check.require(peer.port != 0, at,
                  fmt::format("\"{}\" has port 0; expected the port the site's rths-physical listens on (1..65535)",
                              site.address()));
  }
  if (site.has_safe_motion()) check_safe_motion(experiment, site, child(path, "safe_motion"), check);
  if (site.has_compensation()) {
    const double assumed = site.compensation().assumed_round_trip_s();
    check.require(assumed >= 0, child(path, "compensation.assumed_round_trip_s"),
                  fmt::format("is {}, expected a round-trip delay >= 0 s", assumed));
  }
  if (site.compensation().has_frame_prediction()) check_frame_prediction(site, path, check);
  if (site.has_link()) {
    check.require(site.placement() != config::LOCAL, child(path, "link"),
                  fmt::format("site \"{}\" is LOCAL (in the numerical node's process); expected no link, or "
                              "placement: REMOTE",
                              name));
    if (site.link().has_forward()) check_impairment(site.link().forward(), child(path, "link.forward"), check);
    if (site.link().has_backward()) check_impairment(site.link().backward(), child(path, "link.backward"), check);
  }
  if (site.has_driver()) check_driver(site, path, experiment.rate_hz(), check);
  if (site.has_delay_guard()) check_delay_guard(site, child(path, "delay_guard"), check);
  check_multi_axial(experiment, site, path, check);
}

}  // namespace rths::validation
