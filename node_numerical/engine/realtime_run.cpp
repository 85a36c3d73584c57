// The real-time mode of Experiment (docs/architecture.md §4-§5): handshake, step loop on the wall clock, safe stop.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/core/exit_codes.hpp"
#include "common/protocol/handshake.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/peer_watchdog.hpp"
#include "common/protocol/site_terms.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/engine/status_line.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths {

namespace {

constexpr auto kPoll = std::chrono::microseconds(500);
constexpr std::int64_t kHelloEveryNs = 100'000'000;

enum class TickEnd { kNone, kPeerControl, kPeerLost, kLocalInterlock, kNonFinite, kDelayBudget };

class NumericalTick final : public TickHandler {
 public:
  NumericalTick(NumericalNode& node, const std::vector<UdpHub*>& hubs, const std::vector<std::size_t>& remote,
                const RealtimeLoop& loop, std::int64_t start_mono_ns, std::int64_t timeout_ns,
                std::int64_t grace_until_wall_ns, LiveFigures& live)
      : node_(node),
        hubs_(hubs),
        remote_(remote),
        loop_(loop),
        start_mono_ns_(start_mono_ns),
        watchdog_(timeout_ns, grace_until_wall_ns),
        live_(live) {}

  bool tick(std::int64_t k) override {
    const std::int64_t lateness = monotonic_ns() - (start_mono_ns_ + loop_.step_offset_ns(k));
    if (2 * lateness > loop_.step_offset_ns(1)) {
      live_.late_ticks.fetch_add(1, std::memory_order_relaxed);
    }
    live_.lateness_ns.store(lateness, std::memory_order_relaxed);
    if (lateness > live_.max_lateness_ns.load(std::memory_order_relaxed)) {
      live_.max_lateness_ns.store(lateness, std::memory_order_relaxed);
    }
    // The sites' datagrams are read before the step and its commands sent after it, in one system
    // call each (UdpHub): the step itself makes none.
    {
      const HubStep exchange(hubs_);
      node_.step(k);
    }
    live_.compute_ns.store(monotonic_ns() - start_mono_ns_ - loop_.step_offset_ns(k) - lateness,
                           std::memory_order_relaxed);
    if (!node_.finite()) {
      end_ = TickEnd::kNonFinite;  // the step sent nothing; every site is told to abort
      return false;
    }
    if (node_.tripped_site()) {
      end_ = TickEnd::kLocalInterlock;
      return false;
    }
    if (node_.delay_exceeded_site()) {
      end_ = TickEnd::kDelayBudget;
      return false;
    }
    const std::int64_t now = wall_.now_ns();
    watchdog_.observe_own_lateness(lateness, now);
    std::uint64_t drops = 0;
    std::uint64_t held = 0;
    for (const std::size_t s : remote_) {
      const SiteStats& st = node_.site_stats()[s];
      drops += st.packets.dropped();
      held += st.held_steps;
      if (st.peer_control != PeerControl::kNone) {
        site_ = s;
        end_ = TickEnd::kPeerControl;
        return false;
      }
      if (watchdog_.lost(st.last_valid_receive_ns, now)) {
        site_ = s;
        end_ = TickEnd::kPeerLost;
        return false;
      }
    }
    if (!remote_.empty()) {
      const std::int64_t rtt = node_.site_timing(remote_.front()).last_round_trip_ns;
      if (rtt >= 0) {
        live_.add_round_trip(rtt);
      }
    }
    int warned = 0;
    double use = 0.0;
    for (const NumericalSite& site : node_.sites()) {
      const DelayGuard& g = site.delay_guard;
      if (g.enabled) {
        warned += g.warned_step >= 0 ? 1 : 0;
        use = std::max(use, g.smoothed_s > 0.0 && g.budget_s > 0.0 ? g.smoothed_s / g.budget_s : 0.0);
      }
    }
    live_.delay_guard_warned.store(warned, std::memory_order_relaxed);
    live_.delay_guard_use.store(use, std::memory_order_relaxed);
    live_.drops.store(drops, std::memory_order_relaxed);
    live_.held_steps.store(held, std::memory_order_relaxed);
    live_.steps_done.store(k + 1, std::memory_order_relaxed);
    return true;
  }

  [[nodiscard]] TickEnd end() const { return end_; }
  [[nodiscard]] std::size_t site() const { return site_; }

 private:
  NumericalNode& node_;
  const std::vector<UdpHub*>& hubs_;
  const std::vector<std::size_t>& remote_;
  const RealtimeLoop& loop_;
  WallClock wall_;
  std::int64_t start_mono_ns_;
  PeerWatchdog watchdog_;
  LiveFigures& live_;
  TickEnd end_ = TickEnd::kNone;
  std::size_t site_ = 0;
};

}  // namespace

bool Experiment::handshake(std::vector<std::int64_t>& round_trip_ns, const std::atomic<bool>& stop) {
  const auto& sites = hybrid_->sites();
  std::vector<wire::SiteTerms> terms;
  for (const std::size_t s : remote_) {
    for (const auto& cfg_site : config_.site()) {
      if (cfg_site.name() == sites[s].name) {
        terms.push_back(site_terms(config_, cfg_site, describe_site_models(cfg_site)));
      }
    }
  }
  // The numerical node's half (common/protocol/handshake.hpp): the hello repeated until the site's
  // welcome, then the session keys; the start that follows proves this end holds the key.
  std::vector<HandshakeInitiator> handshakes;
  handshakes.reserve(remote_.size());
  for (std::size_t r = 0; r < remote_.size(); ++r) {
    handshakes.emplace_back(site_keys_[r], sites[remote_[r]].site_id, std::move(terms[r]));
  }
  handshake_packets_.assign(remote_.size(), PacketCounters{});
  std::vector<std::int64_t> hello_sent(remote_.size(), 0);
  std::uint64_t hello_sequence = 0;
  round_trip_ns.assign(remote_.size(), 0);
  std::array<std::byte, kMaxDatagramBytes> rx{};
  const std::int64_t started = monotonic_ns();
  std::int64_t last_hello = 0;
  const auto timeout_ns = static_cast<std::int64_t>(config_.realtime().handshake_timeout_s() * 1e9);
  const auto agreed = [](const HandshakeInitiator& h) { return h.agreed(); };
  while (!std::all_of(handshakes.begin(), handshakes.end(), agreed)) {
    if (stop.load()) {
      report_.exit_code = kExitInterrupted;
      report_.stop_reason = "interrupted during the handshake";
      return false;
    }
    const std::int64_t now = monotonic_ns();
    const bool hello_due = now - last_hello > kHelloEveryNs;
    for (std::size_t r = 0; r < remote_.size(); ++r) {
      HandshakeInitiator& handshake = handshakes[r];
      const NumericalSite& site = sites[remote_[r]];
      if (!handshake.agreed() && now - started > timeout_ns) {
        report_.exit_code = kExitNoAnswer;
        report_.stop_reason = fmt::format(
            "site \"{}\" did not answer at {} within {} s (a site answers only a hello sealed with its own key "
            "and protocol version {}; see its log)",
            site.name, udp_[r]->peer_description(), config_.realtime().handshake_timeout_s(), kProtocolVersion);
        return false;
      }
      if (hello_due) {
        // Agreed sites get it too: a site waits for its start only as long as it hears hellos.
        udp_[r]->send(handshake.hello(wall_clock_.now_ns(), ++hello_sequence));
        if (!handshake.agreed()) {
          hello_sent[r] = now;
        }
      }
      for (std::size_t size = 0; (size = udp_[r]->receive(rx)) != 0;) {
        const auto answer = handshake.answer(std::span(rx.data(), size), handshake_packets_[r]);
        if (answer == HandshakeInitiator::Answer::kRefused) {
          report_.exit_code = kExitRefused;
          report_.stop_reason = fmt::format("site \"{}\" refused the session: {}", site.name, handshake.refusal());
          return false;
        }
        if (answer == HandshakeInitiator::Answer::kAgreed) {
          round_trip_ns[r] = monotonic_ns() - hello_sent[r];
          hybrid_->use_session(remote_[r], handshake.keys());
          spdlog::info("site {} at {} agreed, session {:016x} (hello round trip {:.3f} ms)", site.name,
                       udp_[r]->peer_description(), handshake.keys().session,
                       static_cast<double>(round_trip_ns[r]) / 1e6);
        }
      }
    }
    if (hello_due) {
      last_hello = now;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return true;
}

void Experiment::stop_sites(const std::string& reason, bool abort) {
  // Three copies: a lost stop would leave a site waiting for its peer-loss timeout.
  for (int copy = 0; copy < 3; ++copy) {
    for (const std::size_t s : remote_) {
      hybrid_->send_stop(s, reason, abort);
    }
  }
}

const RunReport& Experiment::run_realtime(const std::atomic<bool>& stop, bool live_status) {
  LiveFigures live;
  std::optional<TelemetryPublisher> telemetry;
  if (!telemetry_.console.empty()) {
    telemetry.emplace("numerical", telemetry_);
    publish_numerical_telemetry(*telemetry, live);
    spdlog::info("telemetry to the console at {}, {:g} Hz", telemetry_.console, telemetry_.rate_hz);
  }
  const auto stopped = [&] {
    if (telemetry) {
      telemetry->set_state(NodeState::kStopped, fmt::format("exit {}: {}", report_.exit_code, report_.stop_reason));
    }
  };
  std::vector<std::int64_t> hello_round_trips;
  if (!handshake(hello_round_trips, stop)) {
    spdlog::error("{}", report_.stop_reason);
    stop_sites(report_.stop_reason, true);
    stopped();
    return report_;
  }
  for (const std::size_t s : remote_) {
    // Virtual time's frames are not sealed; a socket must never carry them.
    if (!hybrid_->sealed(s)) {
      throw std::logic_error(fmt::format("site {}: no session keys after the handshake", s));
    }
  }

  const RealtimeOptions rt = realtime_options(config_);
  for (const auto& warning : acquire_realtime(rt)) {
    spdlog::warn("{}", warning);
  }
  RealtimeLoop loop(rt);

  const auto start_delay_ns = static_cast<std::int64_t>(config_.realtime().start_delay_s() * 1e9);
  const std::int64_t start_wall = wall_clock_.now_ns() + start_delay_ns;
  const std::int64_t start_mono = monotonic_ns() + start_delay_ns;
  for (int copy = 0; copy < 3; ++copy) {
    for (const std::size_t s : remote_) {
      wire::Envelope start;
      start.mutable_start()->set_start_ns(start_wall);
      start.mutable_start()->set_steps(static_cast<std::uint64_t>(steps_));
      hybrid_->send_to_site(s, start);
    }
  }
  // Before the first feedback can arrive a site is silent for a round trip: not a lost peer.
  const std::int64_t longest_hello =
      hello_round_trips.empty() ? 0 : *std::max_element(hello_round_trips.begin(), hello_round_trips.end());
  const auto timeout_ns = static_cast<std::int64_t>(config_.realtime().peer_timeout_s() * 1e9);
  if (telemetry) {
    telemetry->set_state(NodeState::kRunning);
  }
  NumericalTick handler(*hybrid_, hubs_, remote_, loop, start_mono, timeout_ns, start_wall + 2 * longest_hello, live);
  spdlog::info("{} steps at {} Hz from the agreed start", steps_, rate_hz_);
  RunResult result;
  const auto began = std::chrono::steady_clock::now();
  {
    const StatusLine status(live, steps_, rate_hz_, live_status && isatty(STDERR_FILENO) == 1 ? stderr : nullptr);
    result = loop.run(start_mono, 0, steps_, handler, stop);
  }
  report_.run_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (telemetry) {
    telemetry->set_state(NodeState::kStopping);
  }
  report_.steps = result.steps_run;
  report_.duration_s = static_cast<double>(std::max<std::int64_t>(result.steps_run - 1, 0)) / rate_hz_;
  report_.loop = loop.stats();
  report_.has_loop_stats = true;

  const auto& sites = hybrid_->sites();
  const std::optional<std::size_t> tripped = hybrid_->tripped_site();
  const std::optional<std::size_t> late = hybrid_->delay_exceeded_site();
  if (handler.end() == TickEnd::kLocalInterlock && tripped) {
    stop_on_site(result.steps_run, sites[*tripped].name, *sites[*tripped].local);
    stop_sites(report_.stop_reason, true);
  } else if (handler.end() == TickEnd::kDelayBudget && late) {
    stop_on_delay(result.steps_run, *late);
    stop_sites(report_.stop_reason, true);
  } else if (handler.end() == TickEnd::kPeerControl) {
    const std::size_t s = handler.site();
    const bool aborted = hybrid_->site_stats()[s].peer_control == PeerControl::kAbort;
    report_.exit_code = aborted ? kExitPeerAborted : kExitCompleted;
    report_.stop_reason =
        fmt::format("site \"{}\" {}: {}", sites[s].name, aborted ? "aborted" : "stopped", hybrid_->site_reason(s));
    stop_sites(report_.stop_reason, true);
  } else if (handler.end() == TickEnd::kPeerLost) {
    report_.exit_code = kExitPeerLost;
    report_.stop_reason = fmt::format("site \"{}\" lost: no packet for {} s; every site told to hold and stop",
                                      sites[handler.site()].name, config_.realtime().peer_timeout_s());
    stop_sites(report_.stop_reason, true);
  } else if (handler.end() == TickEnd::kNonFinite) {
    stop_non_finite();
    stop_sites(report_.stop_reason, true);
  } else if (result.end == LoopEnd::kStopFlag) {
    report_.exit_code = kExitInterrupted;
    report_.stop_reason = "interrupted; every site told to hold and stop";
    stop_sites("numerical node interrupted", true);
  } else {
    stop_sites("test completed", false);
  }
  if (report_.exit_code == kExitCompleted) {
    spdlog::info("{} after {} steps", report_.stop_reason, result.steps_run);
  } else {
    spdlog::error("{} after {} of {} steps", report_.stop_reason, result.steps_run, steps_);
  }
  // The sites are told; the reference run, evaluation, outputs and plots are not real-time work.
  release_realtime();
  run_reference(result.steps_run);
  evaluate();
  stopped();
  return report_;
}

void Experiment::publish_numerical_telemetry(TelemetryPublisher& telemetry, const LiveFigures& live) const {
  telemetry.add_stream("numerical", hybrid_->recorder());
  telemetry.add_figure("steps_done", live.steps_done);
  telemetry.add_figure("late_ticks", live.late_ticks);
  telemetry.add_figure("drops", live.drops);
  telemetry.add_figure("held_steps", live.held_steps);
  telemetry.add_figure("lateness_us", live.lateness_ns, 1e-3);
  telemetry.add_figure("max_lateness_us", live.max_lateness_ns, 1e-3);
  telemetry.add_figure("compute_us", live.compute_ns, 1e-3);
  telemetry.add_figure("round_trip_p50_ms", [&live] { return live.round_trip_p50_ms(); });
  telemetry.add_figure("rate_hz", [rate = rate_hz_] { return rate; });
  telemetry.add_figure("steps", [steps = steps_] { return static_cast<double>(steps); });
  telemetry.add_figure("delay_guard_warned", live.delay_guard_warned);
  telemetry.add_figure("delay_guard_use", live.delay_guard_use);
  telemetry.set_experiment(report_.name);
  telemetry.on_stop([this] {
    spdlog::warn("stop requested by the console: stopping as on SIGINT");
    if (telemetry_stop_) {
      telemetry_stop_();
    }
  });
  telemetry.start();
}

}  // namespace rths
