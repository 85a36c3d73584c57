#include "console/hub/hub.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include <sodium.h>

namespace rths::console {

namespace {

// A body the page can take as one server-sent event: a JSON object of printable text (a line
// break would end the event and start a field of the stream's own).
bool printable_object(std::string_view body) {
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') {
    return false;
  }
  return std::none_of(body.begin(), body.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

}  // namespace

const char* dropped_name(Dropped d) {
  switch (d) {
    case Dropped::kMalformed:
      return "malformed";
    case Dropped::kUnauthenticated:
      return "unauthenticated";
    case Dropped::kUnchallenged:
      return "unchallenged";
    case Dropped::kReplayed:
      return "replayed";
    case Dropped::kBadBody:
      return "bad_body";
    case Dropped::kForeign:
      return "foreign";
    case Dropped::kTooFarAhead:
      return "too_far_ahead";
    case Dropped::kNewRunLimit:
      return "new_run_limit";
  }
  return "?";
}

TelemetryHub::TelemetryHub(const SecretKey& console_key, HubLimits limits, Time now)
    : keys_(telemetry_frame::derive_keys(console_key)),
      limits_(limits),
      renewed_at_(now),
      forced_at_(now - std::chrono::hours(1)),
      admissions_(static_cast<double>(limits.new_runs_burst)),
      admitted_at_(now),
      sequence_(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count())) {
  // Two secrets drawn at the start (the previous one too, so that nothing echoes a zero challenge);
  // renewals count from 0.
  randombytes_buf(previous_.data(), previous_.size());
  randombytes_buf(current_.data(), current_.size());
}

void TelemetryHub::renew_challenge(Time now) {
  previous_ = current_;
  randombytes_buf(current_.data(), current_.size());
  renewed_at_ = now;
  ++renewals_;
}

telemetry_frame::Challenge TelemetryHub::challenge_for(const Secret& secret, const telemetry_frame::RunId& run,
                                                       const std::string& source) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, secret.data(), secret.size(), telemetry_frame::kChallengeBytes);
  crypto_generichash_update(&state, run.data(), run.size());
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(source.data()),  // NOLINT
                            source.size());
  telemetry_frame::Challenge out{};
  crypto_generichash_final(&state, out.data(), out.size());
  return out;
}

std::string TelemetryHub::sealed(telemetry_frame::Kind kind, const telemetry_frame::RunId& run,
                                 const telemetry_frame::Challenge& echo, std::string_view body) {
  return telemetry_frame::seal(keys_.to_node, {kind, run, ++sequence_, echo}, body);
}

std::optional<TelemetryHub::Send> TelemetryHub::challenge(const telemetry_frame::RunId& run, const std::string& source,
                                                          Time now) {
  const telemetry_frame::Challenge fresh = challenge_for(current_, run, source);
  std::size_t slot = 0;
  std::memcpy(&slot, fresh.data(), sizeof slot);  // a keyed hash of the run and source already
  auto& [last, last_at] = challenged_[slot % challenged_.size()];
  if (last == fresh && now - last_at < limits_.rechallenge_after) {
    return std::nullopt;
  }
  last = fresh;
  last_at = now;
  return Send{source, sealed(telemetry_frame::Kind::kChallenge, run, fresh, {})};
}

void TelemetryHub::challenge_live_runs(Time now, std::vector<Send>& sends) {
  for (const NodeSeen& n : nodes_) {
    if (now - n.last_heard <= limits_.live_for) {
      sends.push_back({n.source, sealed(telemetry_frame::Kind::kChallenge, n.run_id,
                                        challenge_for(current_, n.run_id, n.source), {})});
    }
  }
}

bool TelemetryHub::admit(Time now) {
  const double refill = std::chrono::duration<double>(now - admitted_at_).count() * limits_.new_runs_per_s;
  admissions_ = std::min(static_cast<double>(limits_.new_runs_burst), admissions_ + std::max(0.0, refill));
  admitted_at_ = now;
  if (admissions_ < 1.0) {
    return false;
  }
  admissions_ -= 1.0;
  return true;
}

void TelemetryHub::retire(std::list<NodeSeen>::iterator it, Time now, std::vector<Send>& sends) {
  // Forget the oldest retired runs while the memory is full, each only once the challenge was
  // renewed twice since it left: every frame it ever sent is then stale. Runs leaving faster than
  // that force a renewal, at most one a second, and the live runs get their new challenge at once.
  while (retired_.size() >= limits_.retired) {
    const Retired& old = retired_.front();
    if (renewals_ < old.epoch + 2) {
      if (now - forced_at_ < std::chrono::seconds(1)) {
        // Remembered a little longer: at most the runs admitted in the two seconds before it can go
        // (the new-run rate bounds them).
        break;
      }
      forced_at_ = now;
      ++forced_renewals_;
      renew_challenge(now);
      challenge_live_runs(now, sends);
      continue;
    }
    if (auto r = retired_by_run_.find(old.run); r != retired_by_run_.end() && r->second == &old) {
      retired_by_run_.erase(r);
    }
    retired_.pop_front();
  }
  retired_.push_back({it->run_id, it->sequence, it->source, renewals_, now});
  retired_by_run_[it->run_id] = &retired_.back();
  by_run_.erase(it->run_id);
  nodes_.erase(it);
  ++table_version_;
}

TelemetryHub::Outcome TelemetryHub::accept(std::string_view datagram, const std::string& source, Time now) {
  Outcome out;
  const auto drop = [&](Dropped why) {
    ++dropped_[static_cast<std::size_t>(why)];
    out.dropped = why;
    return std::move(out);
  };
  if (!telemetry_frame::looks_like_frame(datagram)) {
    return drop(Dropped::kMalformed);
  }
  auto opened = telemetry_frame::open(keys_.to_console, datagram);
  if (!opened) {
    return drop(Dropped::kUnauthenticated);
  }
  const telemetry_frame::Header& h = opened->header;
  if (h.kind != telemetry_frame::Kind::kTelemetry) {
    return drop(Dropped::kMalformed);
  }
  auto found = by_run_.find(h.run);
  const auto retired = found == by_run_.end() ? retired_by_run_.find(h.run) : retired_by_run_.end();
  const Retired* gone = retired != retired_by_run_.end() ? retired->second : nullptr;
  // A run is held to the address of its first taken frame: nothing from another address is its,
  // and nothing from another address is answered with its challenge.
  if (found != by_run_.end() ? source != found->second->source : gone != nullptr && source != gone->source) {
    return drop(Dropped::kForeign);
  }
  if (h.echo != challenge_for(current_, h.run, source) && h.echo != challenge_for(previous_, h.run, source)) {
    if (auto reply = challenge(h.run, source, now)) out.sends.push_back(std::move(*reply));
    return drop(Dropped::kUnchallenged);
  }
  if (found != by_run_.end() || gone != nullptr) {
    const std::uint64_t last = found != by_run_.end() ? found->second->sequence : gone->sequence;
    const Time last_at = found != by_run_.end() ? found->second->last_heard : gone->at;
    if (h.sequence <= last) {
      return drop(Dropped::kReplayed);
    }
    const double since_s = std::max(0.0, std::chrono::duration<double>(now - last_at).count());
    if (static_cast<double>(h.sequence - last) >
        static_cast<double>(kSequenceSlack) + 2.0 * kMaxFramesPerSecond * since_s) {
      return drop(Dropped::kTooFarAhead);
    }
  }
  std::string& body = opened->body;
  const bool readable = body.size() <= limits_.max_body && printable_object(body) && strict_json_object(body);
  const auto node = readable ? json_string_field(body, "node") : std::nullopt;
  const auto state = node ? json_string_field(body, "state") : std::nullopt;
  if (!node || !state || node->empty()) {
    return drop(Dropped::kBadBody);
  }
  if (found == by_run_.end()) {
    if (!admit(now)) {
      return drop(Dropped::kNewRunLimit);
    }
    if (*node == "numerical") {
      // A new test: the nodes of the one before (stopped, or silent) leave the table.
      for (auto it = nodes_.begin(); it != nodes_.end();) {
        auto next = std::next(it);
        if (it->state == "stopped" || now - it->last_heard > limits_.live_for) {
          retire(it, now, out.sends);
        }
        it = next;
      }
    }
    while (nodes_.size() >= limits_.max_nodes && !nodes_.empty()) {
      retire(nodes_.begin(), now, out.sends);
    }
    NodeSeen seen;
    seen.run_id = h.run;
    seen.run = telemetry_frame::hex(h.run);
    seen.source = source;
    seen.first_heard = now;
    nodes_.push_back(std::move(seen));
    found = by_run_.emplace(h.run, std::prev(nodes_.end())).first;
    ++table_version_;
  } else {
    nodes_.splice(nodes_.end(), nodes_, found->second);  // most recently heard last
  }
  NodeSeen& seen = *found->second;
  seen.node = *node;
  seen.state = *state;
  seen.sequence = h.sequence;
  seen.echo = h.echo;
  seen.last_heard = now;
  ++seen.datagrams;
  if (const auto ack = json_whole_field(body, "stop_ack"); ack && *ack >= seen.stop_sent) {
    seen.stop_acked = seen.stop_sent;
  }
  const std::string stream = json_string_field(body, "stream").value_or("");
  if (seen.latest.size() < TelemetryPublisher::kMaxStreams || seen.latest.contains(stream)) {
    seen.latest[stream] = body;
  }
  ++accepted_;
  out.body = std::move(body);
  return out;
}

std::vector<TelemetryHub::Send> TelemetryHub::tick(Time now) {
  std::vector<Send> sends;
  if (now - renewed_at_ >= limits_.challenge_every) {
    renew_challenge(now);
    challenge_live_runs(now, sends);
  }
  for (NodeSeen& n : nodes_) {
    if (n.stop_sent != 0 && n.stop_acked != n.stop_sent && now - n.stop_sent_at <= limits_.stop_resend_for) {
      // Each copy a number of its own: the publisher takes the console's frames only in increasing order.
      sends.push_back({n.source, sealed(telemetry_frame::Kind::kStop, n.run_id, n.echo, R"({"stop":"operator"})")});
    }
  }
  return sends;
}

std::vector<TelemetryHub::Send> TelemetryHub::request_stop(Time now, std::vector<StopTarget>& targets) {
  std::vector<Send> sends;
  for (NodeSeen& n : nodes_) {
    if (n.node != "numerical" || n.state == "stopped" || now - n.last_heard > limits_.stop_reach_for) {
      continue;  // the numerical node stops the sites, as on SIGINT
    }
    // Sealed for this run and echoing the challenge it echoes: it opens at this run's node only,
    // now; a recording of it names this run, which no later test has.
    n.stop_sent_at = now;
    const std::string frame = sealed(telemetry_frame::Kind::kStop, n.run_id, n.echo, R"({"stop":"operator"})");
    n.stop_sent = sequence_;
    for (int copy = 0; copy < 3; ++copy) {  // a lost datagram must not leave the test running
      sends.push_back({n.source, frame});
    }
    targets.push_back({n.node, n.run, n.source, std::chrono::duration<double>(now - n.last_heard).count()});
  }
  return sends;
}

bool TelemetryHub::stop_acknowledged(const std::string& run) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const NodeSeen& n) {
    return n.run == run && n.stop_sent != 0 && n.stop_acked == n.stop_sent;
  });
}

std::vector<std::string> TelemetryHub::latest() const {
  std::vector<std::string> out;
  for (const NodeSeen& n : nodes_) {
    for (const auto& [stream, body] : n.latest) {
      out.push_back(body);
    }
  }
  return out;
}

std::uint64_t TelemetryHub::dropped_total() const {
  std::uint64_t total = 0;
  for (const std::uint64_t d : dropped_) {
    total += d;
  }
  return total;
}

}  // namespace rths::console
