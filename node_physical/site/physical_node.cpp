#include "node_physical/site/physical_node.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/config/config.hpp"
#include "common/config/memory_budget.hpp"
#include "common/records/results.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths {

namespace {
// Suffix of channel c (from 1) in the site's columns: none when the site has one channel.
std::string site_suffix(std::size_t channels, std::size_t c) {
  return channels == 1 ? "" : std::to_string(c);
}

std::vector<Column> site_columns(std::size_t channels, std::size_t actuators, const std::vector<DofKind>& kinds) {
  std::vector<Column> cols{{"t", "s"}, {"command_step", "1"}};
  for (std::size_t c = 1; c <= channels; ++c) {
    const std::string n = site_suffix(channels, c);
    const DofKind kind = c - 1 < kinds.size() ? kinds[c - 1] : DofKind::kTranslation;
    const std::string motion(displacement_unit(kind));
    const std::string force(force_unit(kind));
    cols.push_back({"target" + n, motion});
    cols.push_back({"target_velocity" + n, std::string(velocity_unit(kind))});
    cols.push_back({"command" + n, motion});
    cols.push_back({"measured" + n, motion});
    cols.push_back({"force" + n, force});
    cols.push_back({"model_error" + n, force});
    cols.push_back({"status" + n, "1"});
  }
  // A multi-axial site's actuators (behind its setup): stroke target, command and reading, lengths.
  for (std::size_t i = 1; i <= actuators; ++i) {
    const std::string n = "_a" + std::to_string(i);
    cols.push_back({"stroke_target" + n, "m"});
    cols.push_back({"stroke_command" + n, "m"});
    cols.push_back({"stroke_measured" + n, "m"});
  }
  return cols;
}
}  // namespace

PhysicalNode::PhysicalNode(Setup setup, const SessionKeys& keys, Link& link, const Clock& clock,
                           std::unique_ptr<PhysicalSubstructure> substructure,
                           std::vector<std::unique_ptr<ModifiedSmithPart2>> part2,
                           std::unique_ptr<FrameSmithPart2> frame_part2)
    : setup_(std::move(setup)),
      link_(link),
      clock_(clock),
      substructure_(std::move(substructure)),
      part2_(std::move(part2)),
      frame_part2_(std::move(frame_part2)),
      codec_(CodecRole::kSite, setup_.site_id, keys, setup_.rate_hz, clock.now_ns()),
      recorder_(site_columns(substructure_->channels(), actuators_of(substructure_->plants()), setup_.channel_kinds),
                setup_.max_rows),
      dt_s_(1.0 / setup_.rate_hz),
      targets_(substructure_->channels()),
      measured_(substructure_->channels()),
      errors_(substructure_->channels(), 0.0),
      part2_displacement_(substructure_->channels(), 0.0),
      part2_force_(substructure_->channels(), 0.0),
      row_(recorder_.columns(), 0.0) {}

bool PhysicalNode::drain() {
  bool fresh = false;
  while (const std::size_t size = link_.receive(rx_)) {
    const DecodeStatus status = codec_.open(std::span(rx_.data(), size), clock_.now_ns());
    stats_.packets.count(status);
    const bool authentic =
        status == DecodeStatus::kOk || status == DecodeStatus::kStale || status == DecodeStatus::kDuplicate;
    if (!authentic) {
      continue;
    }
    const wire::Envelope& env = codec_.received();
    if (env.has_stop() || env.has_abort()) {
      // The end of the test, honoured even from a late copy: only the peer can have sealed it.
      // Copying the reason may allocate, but no step follows.
      if (status == DecodeStatus::kOk) ++stats_.packets.accepted;
      peer_control_ = env.has_stop() ? PeerControl::kStop : PeerControl::kAbort;
      peer_reason_ = env.has_stop() ? env.stop().reason() : env.abort().reason();
      continue;
    }
    if (status != DecodeStatus::kOk) {
      continue;  // newest wins (docs/architecture.md §3 physical step 1): an older command is never applied
    }
    // Only a new authentic packet is a sign of life (a replayed or reordered one proves nothing).
    last_valid_receive_ns_ = link_.last_receive_ns();
    if (env.has_start()) {
      ++stats_.packets.accepted;  // a copy of the start that crossed with the first steps
      continue;
    }
    if (!env.has_command() || static_cast<std::size_t>(env.command().displacement_m_size()) != targets_.size()) {
      ++stats_.packets.unexpected;
      continue;
    }
    ++stats_.packets.accepted;
    // The command becomes the wanted target as it is; the interlock (PhysicalSubstructure::step)
    // decides what of it reaches the actuators.
    const wire::Command& cmd = env.command();
    for (std::size_t c = 0; c < targets_.size(); ++c) {
      const int i = static_cast<int>(c);
      targets_[c].displacement_m = cmd.displacement_m(i);
      targets_[c].velocity_m_per_s = i < cmd.velocity_m_per_s_size() ? cmd.velocity_m_per_s(i) : 0.0;
      targets_[c].acceleration_m_per_s2 = i < cmd.acceleration_m_per_s2_size() ? cmd.acceleration_m_per_s2(i) : 0.0;
    }
    command_step_ = cmd.step();
    command_sent_ns_ = env.sent_ns();
    command_received_ns_ = link_.last_receive_ns();
    have_command_ = true;
    fresh = true;
  }
  return fresh;
}

void PhysicalNode::send_abort(const std::string& reason) {
  wire::Envelope& env = codec_.start(clock_.now_ns());
  env.mutable_abort()->set_reason(reason);
  link_.send(codec_.seal());
}

void PhysicalNode::step(std::int64_t j) {
  if (drain()) {
    ++stats_.commands_used;
    held_run_ = 0;
  } else {
    ++stats_.held_steps;  // the last target is held (before the first command: at rest)
    ++held_run_;
    if (setup_.hold == config::EXTRAPOLATE && have_command_ && held_run_ <= setup_.max_extrapolated_steps) {
      // Part 2 sees the same extrapolated target as the specimen, so e stays a pure model error; the
      // interlock checks it like a command.
      ++stats_.extrapolated_steps;
      for (InterfaceMotion& t : targets_) {
        t.displacement_m += t.velocity_m_per_s * dt_s_;
      }
    }
  }
  if (peer_control_ == PeerControl::kAbort) {
    return;  // the peer's safe stop: nothing more moves (a stop ends the test after this step)
  }
  if (!substructure_->step(targets_, measured_, dt_s_)) {
    return;  // the interlock tripped: no feedback leaves a site whose values are out of bounds
  }
  const std::span<const InterfaceMotion> applied = substructure_->admitted();
  for (std::size_t c = 0; c < part2_.size(); ++c) {
    if (setup_.part2_input == config::MEASURED) {
      const InterfaceMotion seen{measured_[c].displacement_m, measured_[c].velocity_m_per_s, 0.0};
      errors_[c] = part2_[c]->model_error(seen, measured_[c].force_n, dt_s_);
    } else {
      errors_[c] = part2_[c]->model_error(applied[c], measured_[c].force_n, dt_s_);
    }
  }
  if (frame_part2_) {
    for (std::size_t c = 0; c < targets_.size(); ++c) {
      part2_displacement_[c] =
          setup_.part2_input == config::MEASURED ? measured_[c].displacement_m : applied[c].displacement_m;
      part2_force_[c] = measured_[c].force_n;
    }
    if (!frame_part2_->model_error(part2_displacement_, part2_force_, errors_, dt_s_)) {
      // Only a value that is not finite makes the model refuse: the numerical node stops on it.
      std::fill(errors_.begin(), errors_.end(), std::numeric_limits<double>::quiet_NaN());
    }
  }

  wire::Envelope& env = codec_.start(clock_.now_ns());
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
  link_.send(codec_.seal());

  row_[0] = static_cast<double>(j) * dt_s_;
  row_[1] = static_cast<double>(command_step_);
  const std::span<const InterfaceMotion> commands = substructure_->commands();
  for (std::size_t c = 0; c < targets_.size(); ++c) {
    double* r = &row_[2 + kSiteColumnsPerChannel * c];
    r[0] = applied[c].displacement_m;
    r[1] = applied[c].velocity_m_per_s;
    r[2] = commands[c].displacement_m;
    r[3] = measured_[c].displacement_m;
    r[4] = measured_[c].force_n;
    r[5] = errors_[c];
    r[6] = static_cast<double>(substructure_->plants().status(c));
  }
  if (const ActuatorSpace* space = substructure_->plants().actuator_space()) {
    for (std::size_t i = 0; i < space->actuators(); ++i) {
      double* r = &row_[2 + kSiteColumnsPerChannel * targets_.size() + kColumnsPerActuator * i];
      r[0] = space->actuator_targets()[i].displacement_m;
      r[1] = space->actuator_commands()[i].displacement_m;
      r[2] = space->actuator_measured()[i].displacement_m;
    }
  }
  recorder_.record(row_);
  ++stats_.steps;
}

std::vector<std::unique_ptr<ModifiedSmithPart2>> make_part2(const config::Site& site) {
  std::vector<std::unique_ptr<ModifiedSmithPart2>> part2;
  if (site.compensation().mode() != config::MODIFIED_SMITH || site.compensation().has_frame_prediction()) {
    return part2;
  }
  for (const auto& channel : site.channel()) {
    part2.push_back(std::make_unique<ModifiedSmithPart2>(
        make_model(channel.has_prediction() ? channel.prediction() : channel.specimen())));
  }
  return part2;
}

std::unique_ptr<FrameSmithPart2> make_frame_part2(const config::Site& site) {
  if (site.compensation().mode() != config::MODIFIED_SMITH || !site.compensation().has_frame_prediction()) {
    return nullptr;
  }
  return std::make_unique<FrameSmithPart2>(site.compensation().frame_prediction(),
                                           static_cast<std::size_t>(site.channel_size()));
}

PhysicalNode::Setup make_site_setup(const config::Experiment& experiment, const config::Site& site,
                                    std::uint32_t site_id, std::size_t max_rows) {
  PhysicalNode::Setup setup;
  setup.name = site.name();
  setup.site_id = site_id;
  setup.rate_hz = experiment.rate_hz();
  setup.max_rows = max_rows;
  setup.hold = experiment.realtime().hold();
  setup.max_extrapolated_steps = std::llround(experiment.realtime().max_extrapolation_s() * experiment.rate_hz());
  setup.part2_input = site.compensation().part2_input();
  setup.channel_kinds = channel_kinds(experiment.structure(), site);
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

google::protobuf::RepeatedPtrField<results::Channel> site_actuators(const PhysicalNode& node, double rate_hz) {
  google::protobuf::RepeatedPtrField<results::Channel> out;
  const PlantDriver& plants = node.substructure().plants();
  const ActuatorSpace* space = plants.actuator_space();
  if (space == nullptr) return out;
  const Recorder& rec = node.recorder();
  for (std::size_t i = 0; i < space->actuators(); ++i) {
    const std::string a = "_a" + std::to_string(i + 1);
    results::Channel& actuator = *out.Add();
    *actuator.mutable_tracking() =
        to_results(tracking_metrics(rec.column(rec.column_index("stroke_target" + a)),
                                    rec.column(rec.column_index("stroke_measured" + a)), rate_hz));
    space->report_actuator_controller(i, *actuator.mutable_controller());
    plants.report(i, *actuator.mutable_plant());
  }
  return out;
}

}  // namespace rths
