#include "node_physical/server/site_server.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/config/memory_budget.hpp"
#include "common/core/exit_codes.hpp"
#include "common/protocol/handshake.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/peer_watchdog.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/protocol/site_terms.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/records/record_writer.hpp"
#include "common/records/results.hpp"
#include "common/records/telemetry.hpp"
#include "common/transport/udp_link.hpp"
#include "node_physical/site/physical_node.hpp"
#include "node_physical/site/safe_motion.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths {

namespace {

constexpr auto kPoll = std::chrono::microseconds(500);

using Session = HandshakeResponder::Session;

// What ends the wait for hello and start: the session, or an exit code with its reason.
struct Handshake {
  int exit_code = kExitCompleted;
  std::string reason;
  Session session;
};

// The site's half of the handshake (common/protocol/handshake.hpp) on the site's socket: every
// authentic hello answered, the session the first authentic start. An answered hello that never
// starts (replayed from an earlier session, or its node gone) does not end the wait: only --wait
// does, when no answered hello is still being repeated.
Handshake agree(UdpLink& link, const wire::SiteTerms& mine, const SecretKey& psk, const config::Experiment& cfg,
                double wait_s, const std::atomic<bool>& stop, PacketCounters& counters) {
  const WallClock clock;
  HandshakeResponder handshake(psk, mine, cfg.rate_hz());
  std::array<std::byte, kMaxDatagramBytes> rx{};
  bool version_logged = false;
  const std::int64_t started = monotonic_ns();
  const auto timeout_ns = static_cast<std::int64_t>(cfg.realtime().handshake_timeout_s() * 1e9);
  for (;;) {
    if (stop.load()) {
      return {kExitInterrupted, "interrupted before the test started", {}};
    }
    const std::int64_t now = monotonic_ns();
    if (const std::size_t forgotten = handshake.forget_quiet(now, timeout_ns)) {
      spdlog::warn(
          "{} authentic hello(s) answered, then quiet for {} s: neither repeated nor followed by its start (a "
          "replayed hello, or a numerical node that stopped); still waiting for a numerical node",
          forgotten, cfg.realtime().handshake_timeout_s());
    }
    if (!handshake.still_agreeing() && wait_s > 0.0 && now - started > static_cast<std::int64_t>(wait_s * 1e9)) {
      return {kExitNoAnswer,
              handshake.answered() == 0
                  ? fmt::format("no authentic hello from a numerical node within {} s", wait_s)
                  : fmt::format("no numerical node started a session within {} s ({} authentic hello(s) "
                                "answered, none followed by its start: replayed, or from a node that "
                                "stopped)",
                                wait_s, handshake.answered()),
              {}};
    }
    const std::size_t size = link.receive(rx);
    if (size == 0) {
      std::this_thread::sleep_for(kPoll);
      continue;
    }
    const std::span<const std::byte> datagram(rx.data(), size);
    const std::optional<FrameHeader> header = read_frame_header(datagram);
    if (header && header->version != kProtocolVersion && !version_logged) {
      // Not answered (it cannot be authenticated), but said here once so that a lab can tell.
      spdlog::warn("a frame in protocol version {} from {}: this site speaks version {}; not answered", header->version,
                   link.last_source_description(), kProtocolVersion);
      version_logged = true;
    }
    const HandshakeResponder::Step step = handshake.receive(datagram, now, clock.now_ns(), counters);
    using Kind = HandshakeResponder::Step::Kind;
    switch (step.kind) {
      case Kind::kNone:
        break;
      case Kind::kAnswered:
      case Kind::kRefused:
        if (step.new_hello) {
          spdlog::info("authentic hello from {}", link.last_source_description());
        }
        link.adopt_last_source();
        link.send(step.reply);
        if (step.kind == Kind::kRefused) {
          return {kExitRefused, step.reason, {}};
        }
        break;
      case Kind::kStarted:
        link.adopt_last_source();
        link.lock_peer(true);  // from now on only the numerical node that proved the key is heard
        return {kExitCompleted, {}, step.session};
      case Kind::kAborted:
        return {kExitPeerAborted, "the numerical node aborted: " + step.reason, {}};
    }
  }
}

// Tells the numerical node (three copies: one may be lost) that this site refuses the start.
void refuse_start(UdpLink& link, const Handshake& hs, double rate_hz, const std::string& reason) {
  const WallClock clock;
  const auto codec = std::make_unique<PacketCodec>(CodecRole::kSite, hs.session.site_id, hs.session.keys, rate_hz, 0);
  for (int copy = 0; copy < 3; ++copy) {
    codec->start(clock.now_ns()).mutable_abort()->set_reason(reason);
    link.send(codec->seal());
  }
}

// The step of the site on the wall clock, with the checks that end a test safely.
// What the site's step publishes for its telemetry: atomics, never locked (the publisher's thread
// reads them).
struct SiteLive {
  std::atomic<std::int64_t> steps_done{0};
  std::atomic<std::int64_t> lateness_ns{0};
  std::atomic<std::int64_t> max_lateness_ns{0};
  std::atomic<std::int64_t> late_ticks{0};  // more than half a period late, as the numerical node counts
  std::atomic<std::int64_t> compute_ns{0};
  std::atomic<std::uint64_t> held_steps{0};
  std::atomic<std::uint64_t> dropped_packets{0};
  std::atomic<bool> tripped{false};
};

class SiteTick final : public TickHandler {
 public:
  SiteTick(PhysicalNode& node, const WallClock& clock, const RealtimeLoop& loop, std::int64_t start_mono_ns,
           std::int64_t timeout_ns, std::int64_t first_heard_ns, SiteLive& live)
      : node_(node),
        clock_(clock),
        loop_(loop),
        start_mono_ns_(start_mono_ns),
        watchdog_(timeout_ns, first_heard_ns),
        live_(live) {}

  bool tick(std::int64_t k) override {
    const std::int64_t due = start_mono_ns_ + loop_.step_offset_ns(k);
    const std::int64_t lateness = monotonic_ns() - due;
    node_.step(k);
    live_.compute_ns.store(monotonic_ns() - due - lateness, std::memory_order_relaxed);
    live_.lateness_ns.store(lateness, std::memory_order_relaxed);
    if (lateness > live_.max_lateness_ns.load(std::memory_order_relaxed)) {
      live_.max_lateness_ns.store(lateness, std::memory_order_relaxed);
    }
    if (2 * lateness > loop_.step_offset_ns(1)) {
      live_.late_ticks.fetch_add(1, std::memory_order_relaxed);
    }
    live_.held_steps.store(node_.stats().held_steps, std::memory_order_relaxed);
    live_.dropped_packets.store(node_.stats().packets.dropped(), std::memory_order_relaxed);
    live_.tripped.store(node_.tripped(), std::memory_order_relaxed);
    live_.steps_done.store(k + 1, std::memory_order_relaxed);
    if (node_.peer_control() != PeerControl::kNone || node_.tripped()) {
      return false;
    }
    const std::int64_t now = clock_.now_ns();
    watchdog_.observe_own_lateness(lateness, now);
    if (watchdog_.lost(node_.last_valid_receive_ns(), now)) {
      peer_lost_ = true;
      return false;
    }
    return true;
  }
  [[nodiscard]] bool peer_lost() const { return peer_lost_; }

 private:
  PhysicalNode& node_;
  const WallClock& clock_;
  const RealtimeLoop& loop_;
  std::int64_t start_mono_ns_;
  PeerWatchdog watchdog_;
  SiteLive& live_;
  bool peer_lost_ = false;
};

// The site's stream and figures on telemetry, started.
void publish_site_telemetry(TelemetryPublisher& telemetry, const PhysicalNode& node, const SiteLive& live) {
  telemetry.add_stream("site", node.recorder());
  telemetry.add_figure("steps_done", live.steps_done);
  telemetry.add_figure("lateness_us", live.lateness_ns, 1e-3);
  telemetry.add_figure("max_lateness_us", live.max_lateness_ns, 1e-3);
  telemetry.add_figure("late_ticks", live.late_ticks);
  telemetry.add_figure("compute_us", live.compute_ns, 1e-3);
  telemetry.add_figure("held_steps", live.held_steps);
  telemetry.add_figure("drops", live.dropped_packets);
  telemetry.add_figure("interlock_tripped", live.tripped);
  telemetry.start();
}

// A ramp of the site's safe motion (start or stop) on the wall clock: one plan step per tick,
// straight to the plants.
class RampTick final : public TickHandler {
 public:
  RampTick(PhysicalSubstructure& substructure, const RampPlan& plan, double dt_s)
      : substructure_(substructure), plan_(plan), commands_(plan.channels()), dt_s_(dt_s) {}
  bool tick(std::int64_t k) override {
    plan_.commands(k, commands_);
    if (!substructure_.move(commands_, dt_s_)) {
      failed_ = true;
      return false;
    }
    return true;
  }
  [[nodiscard]] bool failed() const { return failed_; }

 private:
  PhysicalSubstructure& substructure_;
  const RampPlan& plan_;
  std::vector<InterfaceMotion> commands_;
  double dt_s_;
  bool failed_ = false;
};

// The displacements of a site's measurements or commands, one per channel.
template <typename Motion>
std::vector<double> displacements(std::span<const Motion> motions) {
  std::vector<double> x;
  for (const Motion& m : motions) x.push_back(m.displacement_m);
  return x;
}

}  // namespace

// On a loop of its own: the test's loop timing stays the test's. Not interruptible: a second signal
// must not leave the actuator mid-way (kill -9 leaves it to the target's own watchdog).
std::optional<StopRampFault> run_stop_ramp(PhysicalSubstructure& substructure, const config::Site& site,
                                           const RealtimeOptions& rt, results::SafeMotionReport& report) {
  if (substructure.driver_failed()) {
    report.set_stop_ramp("not run: " + substructure.stop_reason());
    spdlog::error("site {}: no stop ramp ({})", site.name(), substructure.stop_reason());
    return StopRampFault{kExitEquipment, "no stop ramp: " + substructure.stop_reason()};
  }
  const RampPlan plan = stop_ramp(site.safe_motion(), displacements(substructure.commands()), rt.rate_hz);
  RealtimeLoop loop(rt);
  RampTick ramp(substructure, plan, 1.0 / rt.rate_hz);
  const std::atomic<bool> never{false};
  const RunResult done = loop.run(monotonic_ns() + loop.step_offset_ns(1), 0, plan.steps(), ramp, never);
  // The disarm at once (site_server.hpp says why): a log line waits for the log file's lock, which
  // the logger's flushing thread holds while the kernel makes it wait for a loaded disk. A failed
  // ramp: the actuators are not where the site put them, the equipment's watchdog takes over.
  // Simulated plants: nothing to disarm.
  const bool disarming = !ramp.failed() && site.has_driver();
  const std::string disarm_failure = disarming ? substructure.disarm() : std::string();
  report.set_stop_ramp_steps(done.steps_run);
  *report.mutable_stop_ramp_loop() = to_results(loop.stats());
  for (const double x : displacements(substructure.measured())) report.add_final_position_m(x);
  report.set_stop_ramp(ramp.failed() ? "stopped: " + substructure.stop_reason() : std::string("completed"));
  spdlog::info("site {}: held {:g} s, then to the safe position at {:g} m/s: {} steps", site.name(),
               site.safe_motion().stop_hold_s(), site.safe_motion().stop_velocity_m_per_s(), done.steps_run);
  if (ramp.failed()) {
    spdlog::error("site {}: stop ramp {}", site.name(), report.stop_ramp());
    return StopRampFault{substructure.driver_failed() ? kExitEquipment : kExitLimit,
                         "the stop ramp " + report.stop_ramp()};
  }
  spdlog::info("site {}: at the safe position after {} steps", site.name(), done.steps_run);
  if (!disarming) return std::nullopt;  // simulated plants
  if (!disarm_failure.empty()) {
    spdlog::error("site {}: the equipment's disarm was {}; expect its watchdog to trip", site.name(), disarm_failure);
    return StopRampFault{kExitEquipment, "the equipment's disarm after the stop ramp was " + disarm_failure};
  }
  spdlog::info("site {}: the equipment is disarmed (it holds the safe position)", site.name());
  return std::nullopt;
}

namespace {

// Why a site refuses to start after the handshake, and its exit code.
struct Refusal {
  int exit_code = kExitRefused;
  std::string reason;
};

// The start ramp (SafeMotion): reads the actuators, then moves them from there to the initial
// position, its last step one period before step 0. Empty when it ran to its end; else why the site
// refuses the start. moved says whether any ramp command was written.
std::optional<Refusal> run_start_ramp(PhysicalSubstructure& plants, const config::Site& site, RealtimeLoop& loop,
                                      std::int64_t start_mono, const std::atomic<bool>& stop_flag,
                                      results::SafeMotionReport& report, bool& moved) {
  try {
    plants.open();
  } catch (const DriverError& e) {
    return Refusal{kExitEquipment, fmt::format("equipment: {}; refused before motion", e.what())};
  }
  const std::vector<double> from = displacements(plants.measured());
  for (const double x : from) report.add_start_position_m(x);
  const double rate_hz = loop.options().rate_hz;
  const RampPlan plan = start_ramp(site.safe_motion(), from, rate_hz);
  if (std::string why = start_ramp_refusal(site, plan, from); !why.empty()) {
    return Refusal{kExitLimit, std::move(why)};
  }
  const std::int64_t ramp_start = start_mono - loop.step_offset_ns(plan.steps());
  if (const std::int64_t now = monotonic_ns(); ramp_start < now) {
    return Refusal{kExitRefused,
                   fmt::format("the start leaves {:.3f} s before step 0 but the start ramp takes {:g} s; expected a "
                               "longer realtime.start_delay_s; refused before motion",
                               static_cast<double>(start_mono - now) * 1e-9, site.safe_motion().start_ramp_s())};
  }
  spdlog::info("site {}: start ramp from the measured position to the initial position over {} steps", site.name(),
               plan.steps());
  RampTick ramp(plants, plan, 1.0 / rate_hz);
  const RunResult done = loop.run(ramp_start, 0, plan.steps(), ramp, stop_flag);
  report.set_start_ramp_steps(done.steps_run);
  *report.mutable_start_ramp_loop() = to_results(loop.stats());
  moved = done.steps_run > 0;
  if (ramp.failed()) {
    const bool told = plants.driver_failed() || plants.interlock().tripped();
    return Refusal{plants.driver_failed() ? kExitEquipment : kExitLimit,
                   told ? plants.stop_reason() + " during the start ramp"
                        : std::string("a start ramp command was not finite, beyond a channel's stroke limit or "
                                      "(with a setup) beyond an actuator's")};
  }
  if (done.end == LoopEnd::kStopFlag) {
    return Refusal{kExitInterrupted, "interrupted during the start ramp"};
  }
  return std::nullopt;
}

// What the site writes beside its record: why it stopped, its packets (handshake and session, the
// socket's own drops), the loop timing and each channel's tracking and plant counters.
struct SiteOutcome {
  int exit_code = kExitCompleted;
  std::string reason;
  std::int64_t planned_steps = 0;
  bool insecure = false;
};

void write_site_summary(const std::filesystem::path& path, const PhysicalNode& node, const LoopStats& loop,
                        const SiteOutcome& outcome, const PacketCounters& handshake, const UdpLink& link,
                        double rate_hz, const results::SafeMotionReport* safe_motion) {
  results::SiteSummary summary;
  summary.set_site(node.name());
  summary.set_exit_code(outcome.exit_code);
  summary.set_stop_reason(outcome.reason);
  summary.set_insecure(outcome.insecure);
  summary.set_planned_steps(outcome.planned_steps);
  summary.set_steps(node.stats().steps);
  summary.set_held_steps(node.stats().held_steps);
  summary.set_extrapolated_steps(node.stats().extrapolated_steps);
  summary.set_commands_used(node.stats().commands_used);
  summary.set_interlock(node.trip().tripped() ? node.trip().describe() : std::string("not tripped"));
  *summary.mutable_packets() = to_results(node.stats().packets);
  *summary.mutable_handshake_packets() = to_results(handshake);
  *summary.mutable_socket() = to_results(link.counters());
  *summary.mutable_loop() = to_results(loop);
  *summary.mutable_channels() = node.substructure().report(site_tracking(node, rate_hz));
  *summary.mutable_actuators() = site_actuators(node, rate_hz);
  if (safe_motion != nullptr) *summary.mutable_safe_motion() = *safe_motion;
  write_results_json(path, summary);
}

// Why the session ended, from the node's state after the loop; tells the numerical node when the
// site stops on its own.
SiteOutcome session_outcome(PhysicalNode& node, const SiteTick& handler, const RunResult& result,
                            const config::Experiment& cfg, SiteOutcome outcome) {
  if (node.peer_control() == PeerControl::kAbort) {
    outcome.exit_code = kExitPeerAborted;
    outcome.reason = "the numerical node aborted: " + node.peer_reason();
  } else if (node.tripped()) {
    outcome.exit_code = node.trip().tripped() ? kExitLimit : kExitEquipment;
    outcome.reason = node.stop_reason() + "; the actuator holds its last admitted target";
    node.send_abort(outcome.reason);
  } else if (node.peer_control() == PeerControl::kStop) {
    outcome.reason = "stopped by the numerical node: " + node.peer_reason();
  } else if (handler.peer_lost()) {
    outcome.exit_code = kExitPeerLost;
    outcome.reason = fmt::format("no packet from the numerical node for {} s; the actuator holds its last position",
                                 cfg.realtime().peer_timeout_s());
    node.send_abort(outcome.reason);
  } else if (result.end == LoopEnd::kStopFlag) {
    outcome.exit_code = kExitInterrupted;
    outcome.reason = "interrupted; the actuator holds its last position";
    node.send_abort("site interrupted");
  }
  return outcome;
}

}  // namespace

int serve_site(const LoadedConfig& loaded, const SiteServerOptions& options, const std::atomic<bool>& stop_flag) {
  const config::Experiment& cfg = loaded.experiment;
  const config::Site* site = nullptr;
  for (const auto& s : cfg.site()) {
    if (s.name() == options.site_name) {
      site = &s;
    }
  }
  if (site == nullptr) {
    throw ConfigError(fmt::format("{}: no site named \"{}\"", loaded.source.string(), options.site_name));
  }
  const SiteKey key = site_key(cfg, *site, loaded.base_dir, loaded.source.string(), options.listen.host);
  const wire::SiteTerms terms = site_terms(cfg, *site, describe_site_models(*site));

  // The equipment is reached first: a site whose actuators cannot be read never accepts a test.
  std::unique_ptr<PhysicalSubstructure> substructure =
      make_physical_substructure(*site, cfg.rate_hz(), Plants::kEquipment);
  try {
    substructure->open();
  } catch (const DriverError& e) {
    spdlog::error("site {}: {}; refused to start", site->name(), e.what());
    return kExitEquipment;
  }

  asio::io_context io;
  UdpLink link(io, options.listen.host, options.listen.port);
  const std::string where = fmt::format("{}:{}", options.listen.host, link.local_port());
  spdlog::info("site {} listening on {}", site->name(), where);
  if (key.insecure) {
    spdlog::warn(
        "realtime.insecure: the packets are sealed with a public key; anyone who can reach {} can forge "
        "them (a test on this machine only)",
        where);
  }
  if (options.announce) {
    std::printf("listening on %s\n", where.c_str());
    std::fflush(stdout);
  }

  PacketCounters handshake_packets;
  const Handshake hs = agree(link, terms, key.key, cfg, options.wait_s, stop_flag, handshake_packets);
  if (hs.exit_code != kExitCompleted) {
    spdlog::error("{}", hs.reason);
    return hs.exit_code;
  }
  // A start whose record would not fit this machine is refused before anything moves.
  if (const std::string refusal = site_start_refusal(cfg, *site, hs.session.steps); !refusal.empty()) {
    spdlog::error("{}", refusal);
    refuse_start(link, hs, cfg.rate_hz(), refusal);
    return kExitRefused;
  }

  const WallClock clock;
  PhysicalSubstructure& plants = *substructure;
  PhysicalNode node(make_site_setup(cfg, *site, hs.session.site_id, static_cast<std::size_t>(hs.session.steps)),
                    hs.session.keys, link, clock, std::move(substructure), make_part2(*site), make_frame_part2(*site));
  // Started before acquire_realtime, so its thread has the process's normal scheduling and CPUs.
  RecordWriter csv(node.recorder(), options.out_dir / ("site_" + site->name() + ".csv"));
  SiteLive live;
  std::optional<TelemetryPublisher> telemetry;
  if (!options.telemetry.console.empty()) {
    telemetry.emplace("site " + site->name(), options.telemetry);
    telemetry->set_experiment(cfg.name());
    publish_site_telemetry(*telemetry, node, live);
    telemetry->set_state(NodeState::kRunning);
  }

  const RealtimeOptions rt = realtime_options(cfg);
  for (const auto& warning : acquire_realtime(rt)) {
    spdlog::warn("{}", warning);
  }
  RealtimeLoop loop(rt);
  // The site steps half a period before the numerical node (VirtualClock explains the schedule): a
  // command computed in numerical step k is applied in site step k + 1 and its feedback is back for
  // numerical step k + 1 whenever compute and network fit in half a period.
  const std::int64_t start_mono = monotonic_ns() + (hs.session.start_wall_ns - clock.now_ns()) -
                                  static_cast<std::int64_t>(std::llround(0.5e9 / cfg.rate_hz()));
  results::SafeMotionReport motion;
  bool moved = false;  // the actuators were commanded (a stop ramp then follows every stop)
  std::optional<Refusal> refused;
  if (site->has_safe_motion()) {
    refused = run_start_ramp(plants, *site, loop, start_mono, stop_flag, motion, moved);
  }
  SiteTick handler(node, clock, loop, start_mono, static_cast<std::int64_t>(cfg.realtime().peer_timeout_s() * 1e9),
                   hs.session.start_wall_ns, live);
  SiteOutcome outcome{kExitCompleted, "completed", hs.session.steps, key.insecure};
  RunResult result;
  if (refused) {
    outcome.exit_code = refused->exit_code;
    outcome.reason = refused->reason;
    refuse_start(link, hs, cfg.rate_hz(), refused->reason);
  } else {
    spdlog::info("session {:016x} with {}: {} steps from the agreed start", hs.session.keys.session,
                 link.peer_description(), hs.session.steps);
    result = loop.run(start_mono, 0, hs.session.steps, handler, stop_flag);
    moved = moved || result.steps_run > 0;
    outcome = session_outcome(node, handler, result, cfg, outcome);
  }
  if (telemetry) {
    telemetry->set_state(NodeState::kStopping, outcome.reason);
  }
  // At once: the equipment's own watchdog stops an actuator whose commands pause for milliseconds.
  if (site->has_safe_motion() && moved) {
    const std::optional<StopRampFault> fault = run_stop_ramp(plants, *site, rt, motion);
    if (fault && outcome.exit_code == kExitCompleted) {
      outcome.exit_code = fault->exit_code;
      outcome.reason = "the test completed, but " + fault->reason;
    }
  } else if (site->has_safe_motion()) {
    motion.set_stop_ramp("not run: nothing moved");
  }
  release_realtime();  // the actuators are at rest and disarmed: what is left is writing the records
  (outcome.exit_code == kExitCompleted ? spdlog::info("{} after {} steps", outcome.reason, result.steps_run)
                                       : spdlog::error("{} after {} steps", outcome.reason, result.steps_run));
  node.substructure().log_warnings(site->name());
  csv.finish();
  write_site_summary(options.out_dir / ("site_" + site->name() + ".json"), node, loop.stats(), outcome,
                     handshake_packets, link, cfg.rate_hz(), site->has_safe_motion() ? &motion : nullptr);
  if (telemetry) {
    telemetry->set_state(NodeState::kStopped, fmt::format("exit {}: {}", outcome.exit_code, outcome.reason));
  }
  return outcome.exit_code;
}

}  // namespace rths
