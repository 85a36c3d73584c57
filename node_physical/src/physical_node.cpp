#include "rths/node_physical/physical_node.hpp"

#include <cmath>

namespace rths {

namespace {
// Suffix of channel c (from 1) in the site's columns: none when the site has one channel.
std::string site_suffix(std::size_t channels, std::size_t c) {
  return channels == 1 ? "" : std::to_string(c);
}

std::vector<Column> site_columns(std::size_t channels) {
  std::vector<Column> cols{{"t", "s"}, {"command_step", "1"}};
  for (std::size_t c = 1; c <= channels; ++c) {
    const std::string n = site_suffix(channels, c);
    cols.push_back({"target" + n, "m"});
    cols.push_back({"target_velocity" + n, "m_per_s"});
    cols.push_back({"measured" + n, "m"});
    cols.push_back({"force" + n, "N"});
    cols.push_back({"model_error" + n, "N"});
  }
  return cols;
}
}  // namespace

PhysicalNode::PhysicalNode(Setup setup, Link& link, const Clock& clock,
                           std::unique_ptr<PhysicalSubstructure> substructure,
                           std::vector<std::unique_ptr<ModifiedSmithPart2>> part2)
    : setup_(std::move(setup)),
      link_(link),
      clock_(clock),
      substructure_(std::move(substructure)),
      part2_(std::move(part2)),
      codec_(setup_.session, setup_.site_id),
      recorder_(site_columns(substructure_->channels()), setup_.max_rows),
      dt_s_(1.0 / setup_.rate_hz),
      targets_(substructure_->channels()),
      measured_(substructure_->channels()),
      errors_(substructure_->channels(), 0.0),
      row_(recorder_.columns(), 0.0) {}

bool PhysicalNode::drain() {
  bool fresh = false;
  while (const std::size_t size = link_.receive(rx_)) {
    const DecodeStatus status = codec_.decode(std::span(rx_.data(), size));
    stats_.packets.count(status);
    if (status != DecodeStatus::kOk) {
      continue;
    }
    last_valid_receive_ns_ = link_.last_receive_ns();
    const wire::Envelope& env = codec_.received();
    if (env.has_stop() || env.has_abort()) {
      // The end of the test: copying the reason may allocate, but no step follows in steady state.
      ++stats_.packets.accepted;
      peer_control_ = env.has_stop() ? PeerControl::kStop : PeerControl::kAbort;
      peer_reason_ = env.has_stop() ? env.stop().reason() : env.abort().reason();
      continue;
    }
    if (env.has_hello() || env.has_heartbeat() || env.has_start()) {
      ++stats_.packets.accepted;  // session traffic that crossed with the first steps
      continue;
    }
    if (!env.has_command() || static_cast<std::size_t>(env.command().displacement_m_size()) != targets_.size()) {
      ++stats_.packets.unexpected;
      continue;
    }
    // Newest wins (DESIGN §3 physical step 1): the sender's sequence orders its packets.
    if (have_command_ && env.sequence() <= newest_sequence_) {
      ++(env.sequence() == newest_sequence_ ? stats_.packets.duplicate : stats_.packets.stale);
      continue;
    }
    const wire::Command& cmd = env.command();
    if (!finite_targets(cmd)) {
      // Bad input, never applied (DESIGN §5); and the numerical node that sent it has failed.
      ++stats_.packets.non_finite;
      refuse(RefusedTarget::kNotFinite);
      continue;
    }
    ++stats_.packets.accepted;
    if (beyond_limits(cmd)) {
      refuse(RefusedTarget::kBeyondStrokeLimit);
      continue;
    }
    for (std::size_t c = 0; c < targets_.size(); ++c) {
      const int i = static_cast<int>(c);
      targets_[c].displacement_m = cmd.displacement_m(i);
      targets_[c].velocity_m_per_s = i < cmd.velocity_m_per_s_size() ? cmd.velocity_m_per_s(i) : 0.0;
      targets_[c].acceleration_m_per_s2 = i < cmd.acceleration_m_per_s2_size() ? cmd.acceleration_m_per_s2(i) : 0.0;
    }
    newest_sequence_ = env.sequence();
    command_step_ = cmd.step();
    command_sent_ns_ = env.sent_ns();
    command_received_ns_ = link_.last_receive_ns();
    have_command_ = true;
    fresh = true;
  }
  return fresh;
}

bool PhysicalNode::beyond_limits(const wire::Command& cmd) const {
  for (std::size_t c = 0; c < setup_.stroke_limit_m.size() && c < targets_.size(); ++c) {
    const double limit = setup_.stroke_limit_m[c];
    if (limit > 0.0 && std::abs(cmd.displacement_m(static_cast<int>(c))) > limit) {
      return true;
    }
  }
  return false;
}

// What the actuator channels take of a command: every channel's displacement, and its velocity and
// acceleration where given. NaN would pass any comparison with a limit, so it is refused first.
bool PhysicalNode::finite_targets(const wire::Command& cmd) const {
  for (std::size_t c = 0; c < targets_.size(); ++c) {
    const int i = static_cast<int>(c);
    if (!std::isfinite(cmd.displacement_m(i)) ||
        (i < cmd.velocity_m_per_s_size() && !std::isfinite(cmd.velocity_m_per_s(i))) ||
        (i < cmd.acceleration_m_per_s2_size() && !std::isfinite(cmd.acceleration_m_per_s2(i)))) {
      return false;
    }
  }
  return true;
}

void PhysicalNode::refuse(RefusedTarget why) {
  // The first refusal is the reason the test stops; the last target applied stays: the actuator holds.
  if (refused_target_ == RefusedTarget::kNone) {
    refused_target_ = why;
  }
}

void PhysicalNode::send_abort(const std::string& reason) {
  wire::Envelope& env = codec_.start(++sequence_, clock_.now_ns());
  env.mutable_abort()->set_reason(reason);
  link_.send(codec_.encode());
}

void PhysicalNode::step(std::int64_t j) {
  if (drain()) {
    ++stats_.commands_used;
  } else {
    ++stats_.held_steps;  // the last target is held (before the first command: at rest)
    if (setup_.hold == config::EXTRAPOLATE && have_command_) {
      // Part 2 sees the same extrapolated target as the specimen, so e stays a pure model error.
      for (InterfaceMotion& t : targets_) {
        t.displacement_m += t.velocity_m_per_s * dt_s_;
      }
    }
  }
  substructure_->step(targets_, measured_, dt_s_);
  for (std::size_t c = 0; c < part2_.size(); ++c) {
    if (setup_.part2_input == config::MEASURED) {
      const InterfaceMotion seen{measured_[c].displacement_m, measured_[c].velocity_m_per_s, 0.0};
      errors_[c] = part2_[c]->model_error(seen, measured_[c].force_n, dt_s_);
    } else {
      errors_[c] = part2_[c]->model_error(targets_[c], measured_[c].force_n, dt_s_);
    }
  }

  wire::Envelope& env = codec_.start(++sequence_, clock_.now_ns());
  wire::Feedback* fb = env.mutable_feedback();
  fb->set_echo_step(command_step_);
  fb->set_step(static_cast<std::uint64_t>(j));
  fb->set_echo_sent_ns(command_sent_ns_);
  fb->set_echo_received_ns(command_received_ns_);
  for (std::size_t c = 0; c < targets_.size(); ++c) {
    fb->add_model_error_n(errors_[c]);
    fb->add_force_n(measured_[c].force_n);
    fb->add_displacement_m(measured_[c].displacement_m);
  }
  link_.send(codec_.encode());

  row_[0] = static_cast<double>(j) * dt_s_;
  row_[1] = static_cast<double>(command_step_);
  for (std::size_t c = 0; c < targets_.size(); ++c) {
    double* r = &row_[2 + 5 * c];
    r[0] = targets_[c].displacement_m;
    r[1] = targets_[c].velocity_m_per_s;
    r[2] = measured_[c].displacement_m;
    r[3] = measured_[c].force_n;
    r[4] = errors_[c];
  }
  recorder_.record(row_);
  ++stats_.steps;
}

std::vector<std::unique_ptr<ModifiedSmithPart2>> make_part2(const config::Site& site) {
  std::vector<std::unique_ptr<ModifiedSmithPart2>> part2;
  if (site.compensation().mode() != config::MODIFIED_SMITH) return part2;
  for (const auto& channel : site.channel()) {
    part2.push_back(std::make_unique<ModifiedSmithPart2>(
        make_model(channel.has_prediction() ? channel.prediction() : channel.specimen())));
  }
  return part2;
}

PhysicalNode::Setup make_site_setup(const config::Experiment& experiment, const config::Site& site,
                                    std::uint64_t session, std::uint32_t site_id, std::size_t max_rows) {
  PhysicalNode::Setup setup;
  setup.name = site.name();
  setup.session = session;
  setup.site_id = site_id;
  setup.rate_hz = experiment.rate_hz();
  setup.max_rows = max_rows;
  setup.hold = experiment.realtime().hold();
  for (const auto& channel : site.channel()) setup.stroke_limit_m.push_back(channel.stroke_limit_m());
  setup.part2_input = site.compensation().part2_input();
  return setup;
}

std::vector<TrackingMetrics> site_tracking(const PhysicalNode& node, double rate_hz) {
  const Recorder& rec = node.recorder();
  const std::size_t channels = node.substructure().channels();
  std::vector<TrackingMetrics> tracking;
  for (std::size_t c = 1; c <= channels; ++c) {
    const std::string n = site_suffix(channels, c);
    tracking.push_back(tracking_metrics(rec.column(rec.column_index("target" + n)),
                                        rec.column(rec.column_index("measured" + n)), rate_hz));
  }
  return tracking;
}

}  // namespace rths
