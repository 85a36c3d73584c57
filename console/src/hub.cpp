#include "rths/console/hub.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <sodium.h>

namespace rths::console {

namespace {

// A cursor over a JSON text that steps over whole values, enough to find an object's top-level
// fields; anything it does not understand ends the walk (the field is then "absent").
class JsonWalk {
 public:
  explicit JsonWalk(std::string_view text) : s_(text) {}

  // The top-level value of key in the object the text is: [begin, end) of its text.
  std::optional<std::string_view> field(std::string_view key) {
    skip_blank();
    if (!take('{')) {
      return std::nullopt;
    }
    for (int guard = 0; guard < 100000; ++guard) {
      skip_blank();
      std::string name;
      if (!string(&name)) {
        return std::nullopt;
      }
      skip_blank();
      if (!take(':')) {
        return std::nullopt;
      }
      skip_blank();
      const std::size_t begin = at_;
      if (!value(0)) {
        return std::nullopt;
      }
      if (name == key) {
        return s_.substr(begin, at_ - begin);
      }
      skip_blank();
      if (!take(',')) {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // A JSON string at the cursor, unescaped into out (nullptr: only stepped over).
  bool string(std::string* out) {
    if (!take('"')) {
      return false;
    }
    while (at_ < s_.size()) {
      const char c = s_[at_++];
      if (c == '"') {
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      if (c != '\\') {
        if (out != nullptr) out->push_back(c);
        continue;
      }
      if (at_ >= s_.size()) {
        return false;
      }
      const char e = s_[at_++];
      char plain = 0;
      switch (e) {
        case '"':
          plain = '"';
          break;
        case '\\':
          plain = '\\';
          break;
        case '/':
          plain = '/';
          break;
        case 'b':
          plain = '\b';
          break;
        case 'f':
          plain = '\f';
          break;
        case 'n':
          plain = '\n';
          break;
        case 'r':
          plain = '\r';
          break;
        case 't':
          plain = '\t';
          break;
        case 'u': {
          if (at_ + 4 > s_.size()) return false;
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = s_[at_++];
            code <<= 4U;
            if (h >= '0' && h <= '9')
              code |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
              code |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              code |= static_cast<unsigned>(h - 'A' + 10);
            else
              return false;
          }
          // The console only compares and shows these strings: a code point as UTF-8 (a lone
          // surrogate as is; the page gets the JSON itself, not this).
          if (out != nullptr) {
            if (code < 0x80) {
              out->push_back(static_cast<char>(code));
            } else if (code < 0x800) {
              out->push_back(static_cast<char>(0xC0U | (code >> 6U)));
              out->push_back(static_cast<char>(0x80U | (code & 0x3FU)));
            } else {
              out->push_back(static_cast<char>(0xE0U | (code >> 12U)));
              out->push_back(static_cast<char>(0x80U | ((code >> 6U) & 0x3FU)));
              out->push_back(static_cast<char>(0x80U | (code & 0x3FU)));
            }
          }
          continue;
        }
        default:
          return false;
      }
      if (out != nullptr) out->push_back(plain);
    }
    return false;
  }

 private:
  // Nesting is bounded: a key holder's frame is still data, and deep nesting would be a stack.
  bool value(int depth) {
    if (depth > 32 || at_ >= s_.size()) {
      return false;
    }
    const char c = s_[at_];
    if (c == '"') {
      return string(nullptr);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at_;
      skip_blank();
      if (take(close)) {
        return true;
      }
      while (true) {
        skip_blank();
        if (c == '{') {
          if (!string(nullptr)) return false;
          skip_blank();
          if (!take(':')) return false;
          skip_blank();
        }
        if (!value(depth + 1)) return false;
        skip_blank();
        if (take(close)) return true;
        if (!take(',')) return false;
      }
    }
    // A number, true, false or null: the run of characters that can make one.
    const std::size_t begin = at_;
    while (at_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[at_])) != 0 || s_[at_] == '-' ||
                               s_[at_] == '+' || s_[at_] == '.')) {
      ++at_;
    }
    return at_ > begin;
  }
  void skip_blank() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) {
      ++at_;
    }
  }
  bool take(char c) {
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  std::size_t at_ = 0;
};

// A body the page can take as one server-sent event: a JSON object of printable text (a line
// break would end the event and start a field of the stream's own).
bool printable_object(std::string_view body) {
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') {
    return false;
  }
  return std::none_of(body.begin(), body.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

std::size_t slot_of(const telemetry_frame::RunId& run, std::size_t slots) {
  std::size_t h = 0;
  std::memcpy(&h, run.data(), sizeof h);  // the run is random: its bytes are a hash already
  return h % slots;
}

}  // namespace

std::optional<std::string> json_string_field(std::string_view json, std::string_view key) {
  JsonWalk walk(json);
  const auto raw = walk.field(key);
  if (!raw || raw->empty() || raw->front() != '"') {
    return std::nullopt;
  }
  std::string out;
  JsonWalk value(*raw);
  if (!value.string(&out)) {
    return std::nullopt;
  }
  return out;
}

std::optional<double> json_number_field(std::string_view json, std::string_view key) {
  JsonWalk walk(json);
  const auto raw = walk.field(key);
  if (!raw || raw->empty()) {
    return std::nullopt;
  }
  const std::string text(*raw);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    return std::nullopt;
  }
  return v;
}

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
  }
  return "?";
}

TelemetryHub::TelemetryHub(const SecretKey& console_key, HubLimits limits, Time now)
    : keys_(telemetry_frame::derive_keys(console_key)), limits_(limits) {
  renew_challenge(now);
  renew_challenge(now);
}

void TelemetryHub::renew_challenge(Time now) {
  previous_ = current_;
  randombytes_buf(current_.data(), current_.size());
  renewed_at_ = now;
}

std::string TelemetryHub::sealed(telemetry_frame::Kind kind, const telemetry_frame::RunId& run,
                                 const telemetry_frame::Challenge& echo, std::string_view body) {
  return telemetry_frame::seal(keys_.to_node, {kind, run, ++sequence_, echo}, body);
}

std::optional<TelemetryHub::Send> TelemetryHub::challenge(const telemetry_frame::RunId& run, const std::string& source,
                                                          Time now) {
  auto& [last_run, last_at] = challenged_[slot_of(run, challenged_.size())];
  if (last_run == run && now - last_at < limits_.rechallenge_after) {
    return std::nullopt;
  }
  last_run = run;
  last_at = now;
  return Send{source, sealed(telemetry_frame::Kind::kChallenge, run, current_, {})};
}

void TelemetryHub::retire(std::list<NodeSeen>::iterator it, Time now) {
  if (retired_.size() >= limits_.retired) {
    // Forgetting a run that left less than two challenge periods ago would let its frames in
    // again: make every frame echoing the challenges so far stale first.
    if (now - retired_.front().at < 2 * limits_.challenge_every) {
      renew_challenge(now);
      renew_challenge(now);
    }
    const Retired& old = retired_.front();
    if (auto r = retired_sequence_.find(old.run); r != retired_sequence_.end() && r->second == old.sequence) {
      retired_sequence_.erase(r);
    }
    retired_.pop_front();
  }
  retired_.push_back({it->run_id, it->sequence, now});
  retired_sequence_[it->run_id] = it->sequence;
  by_run_.erase(it->run_id);
  nodes_.erase(it);
  ++table_version_;
}

TelemetryHub::Outcome TelemetryHub::accept(std::string_view datagram, const std::string& source, Time now) {
  Outcome out;
  const auto drop = [&](Dropped why) {
    ++dropped_[static_cast<std::size_t>(why)];
    out.dropped = why;
    return out;
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
  if (h.echo != current_ && h.echo != previous_) {
    out.reply = challenge(h.run, source, now);
    return drop(Dropped::kUnchallenged);
  }
  auto found = by_run_.find(h.run);
  if (found != by_run_.end() ? h.sequence <= found->second->sequence
                             : retired_sequence_.contains(h.run) && h.sequence <= retired_sequence_.at(h.run)) {
    return drop(Dropped::kReplayed);
  }
  std::string& body = opened->body;
  const auto node = printable_object(body) ? json_string_field(body, "node") : std::nullopt;
  const auto state = node ? json_string_field(body, "state") : std::nullopt;
  if (!node || !state || node->empty()) {
    return drop(Dropped::kBadBody);
  }
  if (found == by_run_.end()) {
    if (*node == "numerical") {
      // A new test: the nodes of the one before (stopped, or silent) leave the table.
      for (auto it = nodes_.begin(); it != nodes_.end();) {
        auto next = std::next(it);
        if (it->state == "stopped" || now - it->last_heard > limits_.live_for) {
          retire(it, now);
        }
        it = next;
      }
    }
    while (nodes_.size() >= limits_.max_nodes && !nodes_.empty()) {
      retire(nodes_.begin(), now);
    }
    NodeSeen seen;
    seen.run_id = h.run;
    seen.run = telemetry_frame::hex(h.run);
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
  seen.source = source;
  seen.sequence = h.sequence;
  seen.echo = h.echo;
  seen.last_heard = now;
  ++seen.datagrams;
  if (const auto ack = json_number_field(body, "stop_ack"); ack && *ack >= static_cast<double>(seen.stop_sent)) {
    seen.stop_acked = seen.stop_sent;
  }
  const std::string stream = json_string_field(body, "stream").value_or("");
  if (seen.latest.size() < 8 || seen.latest.contains(stream)) {
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
    for (const NodeSeen& n : nodes_) {
      if (now - n.last_heard <= limits_.live_for) {
        sends.push_back({n.source, sealed(telemetry_frame::Kind::kChallenge, n.run_id, current_, {})});
      }
    }
  }
  for (const NodeSeen& n : nodes_) {
    if (n.stop_sent != 0 && n.stop_acked != n.stop_sent && now - n.stop_sent_at <= limits_.stop_resend_for) {
      sends.push_back(
          {n.source, telemetry_frame::seal(keys_.to_node, {telemetry_frame::Kind::kStop, n.run_id, n.stop_sent, n.echo},
                                           R"({"stop":"operator"})")});
    }
  }
  return sends;
}

std::vector<TelemetryHub::Send> TelemetryHub::request_stop(Time now, std::vector<StopTarget>& targets) {
  std::vector<Send> sends;
  for (NodeSeen& n : nodes_) {
    if (n.node != "numerical" || n.state == "stopped" || now - n.last_heard > limits_.live_for) {
      continue;  // the numerical node stops the sites, as on SIGINT
    }
    // Sealed for this run and echoing the challenge it echoes: it opens at this run's node only,
    // now; a recording of it names this run, which no later test has.
    n.stop_sent = ++sequence_;
    n.stop_sent_at = now;
    const std::string frame = telemetry_frame::seal(
        keys_.to_node, {telemetry_frame::Kind::kStop, n.run_id, n.stop_sent, n.echo}, R"({"stop":"operator"})");
    for (int copy = 0; copy < 3; ++copy) {  // a lost datagram must not leave the test running
      sends.push_back({n.source, frame});
    }
    targets.push_back({n.node, n.run, n.source});
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
