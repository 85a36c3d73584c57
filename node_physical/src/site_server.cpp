#include "rths/node_physical/site_server.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rths/common/exit_codes.hpp"
#include "rths/common/json_writer.hpp"
#include "rths/common/packet_codec.hpp"
#include "rths/common/peer_watchdog.hpp"
#include "rths/common/realtime_loop.hpp"
#include "rths/common/udp_link.hpp"
#include "rths/node_physical/physical_node.hpp"
#include "rths/node_physical/site_terms.hpp"
#include "rths/smith_predictor/modified_smith.hpp"

namespace rths {

namespace {

constexpr std::int64_t kHeartbeatNs = 100'000'000;
constexpr auto kPoll = std::chrono::microseconds(500);

struct Session {
  std::uint64_t id = 0;
  std::uint32_t site_id = 0;
  std::int64_t start_wall_ns = 0;
  std::int64_t steps = 0;
};

void send_envelope(UdpLink& link, wire::Envelope& env, std::uint64_t& sequence, const WallClock& clock) {
  env.set_version(kProtocolVersion);
  env.set_sequence(++sequence);
  env.set_sent_ns(clock.now_ns());
  const std::string bytes = env.SerializeAsString();
  link.send(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

// What ends the wait for hello and start: the session, or an exit code with its reason.
struct Handshake {
  int exit_code = kExitCompleted;
  std::string reason;
  Session session;
};

Handshake agree(UdpLink& link, const wire::SiteTerms& mine, const config::Experiment& cfg, double wait_s,
                const std::atomic<bool>& stop) {
  const WallClock clock;
  std::array<std::byte, kMaxDatagramBytes> rx{};
  std::uint64_t sequence = 0;
  bool welcomed = false;
  Handshake out;
  const std::int64_t started = monotonic_ns();
  std::int64_t last_heard = started;
  std::int64_t last_heartbeat = 0;
  const auto timeout_ns = static_cast<std::int64_t>(cfg.realtime().handshake_timeout_s() * 1e9);
  for (;;) {
    if (stop.load()) {
      return {kExitInterrupted, "interrupted before the test started", {}};
    }
    const std::int64_t now = monotonic_ns();
    if (!welcomed && wait_s > 0.0 && now - started > static_cast<std::int64_t>(wait_s * 1e9)) {
      return {kExitNoAnswer, fmt::format("no hello from a numerical node within {} s", wait_s), {}};
    }
    if (welcomed && now - last_heard > timeout_ns) {
      return {kExitPeerLost, "the numerical node went silent before the start", {}};
    }
    if (welcomed && now - last_heartbeat > kHeartbeatNs) {
      wire::Envelope hb;
      hb.set_session(out.session.id);
      hb.set_site(out.session.site_id);
      hb.mutable_heartbeat();
      send_envelope(link, hb, sequence, clock);
      last_heartbeat = now;
    }
    const std::size_t size = link.receive(rx);
    if (size == 0) {
      std::this_thread::sleep_for(kPoll);
      continue;
    }
    wire::Envelope env;
    if (!env.ParseFromArray(rx.data(), static_cast<int>(size))) {
      continue;  // not ours; counted by nobody yet (the run's counters start with the session)
    }
    if (welcomed && env.session() != out.session.id) {
      continue;
    }
    last_heard = now;
    if (env.has_hello()) {
      wire::Envelope reply;
      reply.set_session(env.session());
      reply.set_site(env.site());
      wire::Welcome* welcome = reply.mutable_welcome();
      *welcome->mutable_terms() = mine;
      std::string refusal;
      if (env.version() != kProtocolVersion) {
        refusal = fmt::format("protocol version differs: {} at the numerical node, {} at the site", env.version(),
                              kProtocolVersion);
      } else {
        refusal = terms_mismatch(env.hello().terms(), mine);
      }
      welcome->set_refusal(refusal);
      send_envelope(link, reply, sequence, clock);
      if (!refusal.empty()) {
        return {kExitRefused, refusal, {}};
      }
      if (!welcomed) {
        link.lock_peer(true);  // from now on only the numerical node that said hello is heard
        out.session.id = env.session();
        out.session.site_id = env.site();
        welcomed = true;
        spdlog::info("hello from {} accepted (session {:016x})", link.peer_description(), out.session.id);
      }
    } else if (env.has_start() && welcomed) {
      out.session.start_wall_ns = env.start().start_ns();
      out.session.steps = static_cast<std::int64_t>(env.start().steps());
      return out;
    } else if (env.has_abort() && welcomed) {
      return {kExitPeerAborted, "the numerical node aborted: " + env.abort().reason(), {}};
    }
  }
}

// The step of the site on the wall clock, with the checks that end a test safely.
class SiteTick final : public TickHandler {
 public:
  SiteTick(PhysicalNode& node, const WallClock& clock, const RealtimeLoop& loop, std::int64_t start_mono_ns,
           std::int64_t timeout_ns, std::int64_t first_heard_ns)
      : node_(node), clock_(clock), loop_(loop), start_mono_ns_(start_mono_ns), watchdog_(timeout_ns, first_heard_ns) {}

  bool tick(std::int64_t k) override {
    const std::int64_t lateness = monotonic_ns() - (start_mono_ns_ + loop_.step_offset_ns(k));
    node_.step(k);
    if (node_.peer_control() != PeerControl::kNone || node_.limit_breached()) {
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
  bool peer_lost_ = false;
};

void write_site_summary(const std::filesystem::path& path, const PhysicalNode& node, const LoopStats& loop,
                        int exit_code, const std::string& reason, std::int64_t planned_steps, double rate_hz) {
  JsonWriter json;
  json.begin_object();
  json.field("site", node.name());
  json.field("exit_code", static_cast<std::int64_t>(exit_code));
  json.field("stop_reason", reason);
  json.field("planned_steps", planned_steps);
  json.field("steps", node.stats().steps);
  json.field("held_steps", node.stats().held_steps);
  json.field("commands_used", node.stats().commands_used);
  json.key("packets");
  write_packet_counters(json, node.stats().packets);
  json.key("loop");
  write_loop_stats(json, loop);
  json.key("channels").raw(node.substructure().report_json(site_tracking(node, rate_hz)));
  json.end_object();
  std::ofstream(path) << json.str() << "\n";
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
  const wire::SiteTerms terms = site_terms(cfg, *site);

  asio::io_context io;
  UdpLink link(io, options.listen.host, options.listen.port);
  const std::string where = fmt::format("{}:{}", options.listen.host, link.local_port());
  spdlog::info("site {} listening on {}", site->name(), where);
  if (options.announce) {
    std::printf("listening on %s\n", where.c_str());
    std::fflush(stdout);
  }

  const Handshake hs = agree(link, terms, cfg, options.wait_s, stop_flag);
  if (hs.exit_code != kExitCompleted) {
    spdlog::error("{}", hs.reason);
    return hs.exit_code;
  }

  const WallClock clock;
  PhysicalNode node(
      make_site_setup(cfg, *site, hs.session.id, hs.session.site_id, static_cast<std::size_t>(hs.session.steps)), link,
      clock, make_physical_substructure(*site, cfg.rate_hz()), make_part2(*site));

  RealtimeOptions rt;
  rt.rate_hz = cfg.rate_hz();
  rt.priority = cfg.realtime().priority();
  rt.lock_memory = cfg.realtime().lock_memory();
  rt.spin_ns = static_cast<std::int64_t>(cfg.realtime().spin_s() * 1e9);
  rt.cpu = cfg.realtime().cpu();
  for (const auto& warning : acquire_realtime(rt)) {
    spdlog::warn("{}", warning);
  }
  RealtimeLoop loop(rt);
  // The site steps half a period before the numerical node (VirtualClock explains the schedule): a
  // command computed in numerical step k is applied in site step k + 1 and its feedback is back for
  // numerical step k + 1 whenever compute and network fit in half a period.
  const std::int64_t start_mono = monotonic_ns() + (hs.session.start_wall_ns - clock.now_ns()) -
                                  static_cast<std::int64_t>(std::llround(0.5e9 / cfg.rate_hz()));
  SiteTick handler(node, clock, loop, start_mono, static_cast<std::int64_t>(cfg.realtime().peer_timeout_s() * 1e9),
                   hs.session.start_wall_ns);
  spdlog::info("session {:016x}: {} steps from the agreed start", hs.session.id, hs.session.steps);
  const RunResult result = loop.run(start_mono, 0, hs.session.steps, handler, stop_flag);

  int code = kExitCompleted;
  std::string reason = "completed";
  if (node.peer_control() == PeerControl::kAbort) {
    code = kExitPeerAborted;
    reason = "the numerical node aborted: " + node.peer_reason();
  } else if (node.peer_control() == PeerControl::kStop) {
    reason = "stopped by the numerical node: " + node.peer_reason();
  } else if (node.limit_breached()) {
    code = kExitLimit;
    reason = node.refused_target() == PhysicalNode::RefusedTarget::kNotFinite
                 ? "a target that is not a finite number arrived; the actuator holds its last position"
                 : "a target beyond the stroke limit arrived; the actuator holds its last position";
    node.send_abort(reason);
  } else if (handler.peer_lost()) {
    code = kExitPeerLost;
    reason = fmt::format("no packet from the numerical node for {} s; the actuator holds its last position",
                         cfg.realtime().peer_timeout_s());
    node.send_abort(reason);
  } else if (result.end == LoopEnd::kStopFlag) {
    code = kExitInterrupted;
    reason = "interrupted; the actuator holds its last position";
    node.send_abort("site interrupted");
  }
  (code == kExitCompleted ? spdlog::info("{} after {} steps", reason, result.steps_run)
                          : spdlog::error("{} after {} steps", reason, result.steps_run));
  node.substructure().log_warnings(site->name());
  node.recorder().write_csv(options.out_dir / ("site_" + site->name() + ".csv"));
  write_site_summary(options.out_dir / ("site_" + site->name() + ".json"), node, loop.stats(), code, reason,
                     hs.session.steps, cfg.rate_hz());
  return code;
}

}  // namespace rths
