#include "node_numerical/engine/numerical_node.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace rths {

namespace {
// The kind of entry i of kinds, a translation when kinds does not say.
DofKind kind_at(const std::vector<DofKind>& kinds, std::size_t i) {
  return i < kinds.size() ? kinds[i] : DofKind::kTranslation;
}

// The record's columns, named once: a pass of the column functions with ColumnNames collects their
// names and units (at construction), one with RowWriter writes their values (in every step). A
// column's name is its prefix and its label ("u_" + "s1"), so that a step builds no string.
class ColumnNames {
 public:
  void operator()(std::string_view prefix, std::string_view label, std::string_view unit, double /*value*/) {
    columns_.push_back({std::string(prefix).append(label), std::string(unit)});
  }
  std::vector<Column> take() { return std::move(columns_); }

 private:
  std::vector<Column> columns_;
};

class RowWriter {
 public:
  explicit RowWriter(std::vector<double>& row) : row_(row) {}
  void operator()(std::string_view /*prefix*/, std::string_view /*label*/, std::string_view /*unit*/, double value) {
    row_[col_++] = value;
  }

 private:
  std::vector<double>& row_;
  std::size_t col_ = 0;
};
}  // namespace

std::string channel_label(const std::string& site, std::size_t channels, std::size_t channel) {
  return channels == 1 ? site : site + "_" + std::to_string(channel + 1);
}

std::string actuator_label(const std::string& site, std::size_t actuator) {
  return site + "_a" + std::to_string(actuator + 1);
}

std::string NumericalNode::force_column(const NumericalSite& site, Eigen::Index channel) {
  return "f_" + channel_label(site.name, static_cast<std::size_t>(site.channels()), static_cast<std::size_t>(channel));
}

NumericalNode::NumericalNode(Setup setup, StructuralModel structure, std::unique_ptr<Integrator> integrator,
                             const GroundMotion& ground, const Clock& clock, std::vector<NumericalSite> sites)
    : setup_(std::move(setup)),
      structure_(std::move(structure)),
      integrator_(std::move(integrator)),
      ground_(ground),
      clock_(clock),
      sites_(std::move(sites)),
      runtime_(sites_.size()),
      stats_(sites_.size()),
      reasons_(sites_.size()),
      total_force_(Eigen::VectorXd::Zero(structure_.dofs())),
      dt_s_(1.0 / setup_.rate_hz),
      recorder_(checked_columns(), setup_.max_rows),
      row_(recorder_.columns(), 0.0) {
  // The interface force acts on the DOFs of the sites' influence rows.
  std::vector<Eigen::Index> force_dofs;
  for (Eigen::Index i = 0; i < structure_.dofs(); ++i) {
    if (std::any_of(sites_.begin(), sites_.end(),
                    [i](const NumericalSite& site) { return site.influence.row(i).cwiseAbs().maxCoeff() > 0.0; })) {
      force_dofs.push_back(i);
    }
  }
  integrator_->set_force_dofs(force_dofs);
  integrator_->initialise(state_, total_force_, ground_, 0.0);
}

std::vector<Column> NumericalNode::checked_columns() {
  const Eigen::Index n = structure_.dofs();
  if (setup_.output_basis.size() > 0) {
    if (!setup_.recorded_dofs.empty() ||
        setup_.output_basis.rows() != static_cast<Eigen::Index>(setup_.dof_names.size()) ||
        setup_.output_basis.cols() != n) {
      throw std::invalid_argument(
          "NumericalNode: an output basis of " + std::to_string(setup_.output_basis.rows()) + " x " +
          std::to_string(setup_.output_basis.cols()) + " for " + std::to_string(setup_.dof_names.size()) +
          " DOF names and a structure of " + std::to_string(n) +
          " DOFs; expected one row per name, one column per structure DOF, and no recorded_dofs");
    }
    recorded_displacement_ = recorded_velocity_ = Eigen::VectorXd::Zero(setup_.output_basis.rows());
  } else if (setup_.recorded_dofs.empty()) {
    for (std::size_t i = 0; i < setup_.dof_names.size(); ++i)
      setup_.recorded_dofs.push_back(static_cast<Eigen::Index>(i));
  }
  if (setup_.output_basis.size() == 0 && (setup_.recorded_dofs.size() != setup_.dof_names.size() ||
                                          std::any_of(setup_.recorded_dofs.begin(), setup_.recorded_dofs.end(),
                                                      [n](Eigen::Index d) { return d < 0 || d >= n; }))) {
    throw std::invalid_argument("NumericalNode: " + std::to_string(setup_.dof_names.size()) + " DOF names for " +
                                std::to_string(setup_.recorded_dofs.size()) + " recorded DOFs of " + std::to_string(n) +
                                "; expected one name per recorded DOF, each DOF within the model");
  }
  if (integrator_->springs().size() != structure_.springs.size()) {
    // The recorder's spring columns come from the structure, their values from the integrator.
    throw std::invalid_argument("NumericalNode: the integrator steps " + std::to_string(integrator_->springs().size()) +
                                " hysteretic springs, the structure has " + std::to_string(structure_.springs.size()) +
                                "; expected the integrator made for this structure");
  }
  state_.displacement = Eigen::VectorXd::Zero(n);
  state_.velocity = Eigen::VectorXd::Zero(n);
  state_.acceleration = Eigen::VectorXd::Zero(n);
  for (std::size_t s = 0; s < sites_.size(); ++s) {
    SiteRuntime& rt = runtime_[s];
    const NumericalSite& site = sites_[s];
    const auto channels = static_cast<std::size_t>(site.channels());
    rt.codec = std::make_unique<PacketCodec>(CodecRole::kNumerical, site.site_id,
                                             virtual_session_keys(setup_.session, site.site_id), setup_.rate_hz,
                                             clock_.now_ns());
    rt.newest.resize(channels);
    rt.motion.resize(channels);
    rt.measured.resize(channels);
    rt.u = rt.v = rt.a = rt.force = Eigen::VectorXd::Zero(site.channels());
    for (std::size_t c = 0; c < channels; ++c) {
      rt.channel_labels.push_back(channel_label(site.name, channels, c));
    }
    rt.actuator_space = site.is_local() ? site.local->plants().actuator_space() : nullptr;
    for (std::size_t i = 0; rt.actuator_space != nullptr && i < rt.actuator_space->actuators(); ++i) {
      rt.actuator_labels.push_back(actuator_label(site.name, i));
    }
    timing_.push_back(std::make_unique<SiteTiming>());
  }
  ColumnNames names;
  state_columns(names, 0.0);
  spring_columns(names);
  return names.take();
}

void NumericalNode::use_session(std::size_t s, const SessionKeys& keys) {
  runtime_[s].codec =
      std::make_unique<PacketCodec>(CodecRole::kNumerical, sites_[s].site_id, keys, setup_.rate_hz, clock_.now_ns());
}

void NumericalNode::drain(std::size_t s) {
  NumericalSite& site = sites_[s];
  SiteRuntime& rt = runtime_[s];
  SiteStats& st = stats_[s];
  bool fresh = false;
  while (const std::size_t size = site.link->receive(rx_)) {
    const DecodeStatus status = rt.codec->open(std::span(rx_.data(), size), clock_.now_ns());
    st.packets.count(status);
    const bool authentic =
        status == DecodeStatus::kOk || status == DecodeStatus::kStale || status == DecodeStatus::kDuplicate;
    if (!authentic) {
      continue;
    }
    const wire::Envelope& env = rt.codec->received();
    if (env.has_feedback()) {
      // Loss estimate: the site sends one feedback per step, numbered by its sequence.
      st.highest_sequence = std::max(st.highest_sequence, rt.codec->received_sequence());
    }
    if (env.has_abort() || env.has_stop()) {
      // The site ends the test (its own safe stop), honoured even from a late copy: only the site
      // can have sealed it. The reason is copied once, at the end.
      if (status == DecodeStatus::kOk) ++st.packets.accepted;
      st.peer_control = env.has_abort() ? PeerControl::kAbort : PeerControl::kStop;
      reasons_[s] = env.has_abort() ? env.abort().reason() : env.stop().reason();
      continue;
    }
    if (status != DecodeStatus::kOk) {
      continue;  // newest wins (docs/architecture.md §3 numerical step 1): older feedback is counted, not used
    }
    // Only a new authentic packet is a sign of life.
    st.last_valid_receive_ns = site.link->last_receive_ns();
    if (!env.has_feedback() || env.feedback().model_error_n_size() != site.channels() ||
        env.feedback().force_n_size() != site.channels()) {
      ++st.packets.unexpected;
      continue;
    }
    ++st.packets.accepted;
    const wire::Feedback& fb = env.feedback();
    for (std::size_t c = 0; c < rt.newest.size(); ++c) {
      rt.newest[c].model_error_n = fb.model_error_n(static_cast<int>(c));
      rt.newest[c].force_n = fb.force_n(static_cast<int>(c));
      rt.newest[c].displacement_m =
          static_cast<int>(c) < fb.displacement_m_size() ? fb.displacement_m(static_cast<int>(c)) : 0.0;
    }
    rt.have_feedback = true;
    rt.newest_received_ns = st.last_valid_receive_ns;
    st.newest_echo_step = static_cast<std::int64_t>(fb.echo_step());
    if (fb.echo_sent_ns() != 0 && fb.echo_received_ns() != 0) {
      record_timing(*timing_[s], fb.echo_sent_ns(), fb.echo_received_ns(), env.sent_ns(), st.last_valid_receive_ns);
    }
    fresh = true;
  }
  ++(fresh ? st.feedback_used : st.held_steps);
  if (rt.have_feedback) {
    timing_[s]->age_at_use.record(clock_.now_ns() - rt.newest_received_ns);
  }
}

void NumericalNode::watch_delay(std::size_t s, std::int64_t k) {
  DelayGuard& g = sites_[s].delay_guard;
  const std::int64_t rtt_ns = timing_[s]->last_round_trip_ns;
  if (rtt_ns < 0) return;  // no feedback yet
  const double rtt_s = static_cast<double>(rtt_ns) * 1e-9;
  // A first-order low-pass of the newest round trip, one update per step: a late packet moves it by
  // dt / smoothing_s of its lateness, a delay that stays reaches it within a few smoothing_s.
  g.smoothed_s =
      g.smoothed_s < 0.0 ? rtt_s : g.smoothed_s + std::min(1.0, dt_s_ / g.smoothing_s) * (rtt_s - g.smoothed_s);
  g.smoothed_max_s = std::max(g.smoothed_max_s, g.smoothed_s);
  if (g.warned_step < 0 && g.smoothed_s > g.warn_s) g.warned_step = k;
  if (g.exceeded_step < 0 && g.smoothed_s > g.budget_s) {
    g.exceeded_step = k;
    if (!delay_exceeded_site_) delay_exceeded_site_ = s;
  }
}

void NumericalNode::record_timing(SiteTiming& timing, std::int64_t t1, std::int64_t t2, std::int64_t t3,
                                  std::int64_t t4) {
  // t1, t2 and t3 come from the packet: values no clock gives can overflow any of these
  // differences (undefined), where readings of real clocks never do. Such an exchange is not timed.
  const auto minus = [](std::int64_t a, std::int64_t b, std::int64_t& difference) {
    return !__builtin_sub_overflow(a, b, &difference);
  };
  std::int64_t here = 0;   // numerical clock: command sent to feedback received
  std::int64_t there = 0;  // site clock: command received to feedback sent
  std::int64_t out = 0;    // forward delay plus the clock offset
  std::int64_t back = 0;   // the clock offset minus the backward delay
  std::int64_t round_trip = 0;
  std::int64_t offset_sum = 0;
  if (!minus(t4, t1, here) || !minus(t3, t2, there) || !minus(t2, t1, out) || !minus(t3, t4, back) ||
      !minus(here, there, round_trip) || __builtin_add_overflow(out, back, &offset_sum)) {
    return;
  }
  std::int64_t forward = 0;
  std::int64_t backward = 0;
  const std::int64_t offset =
      timing.best_round_trip_ns < 0 || round_trip < timing.best_round_trip_ns ? offset_sum / 2 : timing.clock_offset_ns;
  if (!minus(out, offset, forward) || !minus(offset, back, backward)) {
    return;
  }
  timing.last_round_trip_ns = round_trip;
  if (timing.best_round_trip_ns < 0 || round_trip < timing.best_round_trip_ns) {
    // NTP: the exchange with the shortest round trip bounds the offset most tightly.
    timing.best_round_trip_ns = round_trip;
    timing.clock_offset_ns = offset;
  }
  timing.round_trip.record(round_trip);
  timing.forward.record(forward);
  timing.backward.record(backward);
}

void NumericalNode::send_to_site(std::size_t s, const wire::Envelope& body) {
  SiteRuntime& rt = runtime_[s];
  wire::Envelope& env = rt.codec->start(clock_.now_ns());
  const auto sent = env.sent_ns();
  env.CopyFrom(body);
  env.set_sent_ns(sent);
  sites_[s].link->send(rt.codec->seal());
}

void NumericalNode::send_stop(std::size_t s, const std::string& reason, bool abort) {
  wire::Envelope env;
  if (abort) {
    env.mutable_abort()->set_reason(reason);
  } else {
    env.mutable_stop()->set_reason(reason);
  }
  send_to_site(s, env);
}

void NumericalNode::interface_motion(std::size_t s) {
  // The site's interface motion is -Lambda^T x: the device deforms with the motion it resists.
  const Eigen::MatrixXd& lambda = sites_[s].influence;
  SiteRuntime& rt = runtime_[s];
  // lazyProduct: coefficient-wise products beat the general GEMV kernel at these sizes.
  rt.u.noalias() = -lambda.transpose().lazyProduct(state_.displacement);
  rt.v.noalias() = -lambda.transpose().lazyProduct(state_.velocity);
  rt.a.noalias() = -lambda.transpose().lazyProduct(state_.acceleration);
  for (std::size_t c = 0; c < rt.motion.size(); ++c) {
    const auto i = static_cast<Eigen::Index>(c);
    rt.motion[c] = {rt.u(i), rt.v(i), rt.a(i)};
  }
}

void NumericalNode::send_command(std::size_t s, std::int64_t next_step) {
  SiteRuntime& rt = runtime_[s];
  wire::Envelope& env = rt.codec->start(clock_.now_ns());
  wire::Command* cmd = env.mutable_command();
  cmd->set_step(static_cast<std::uint64_t>(next_step));
  for (const InterfaceMotion& m : rt.motion) {
    cmd->add_displacement_m(m.displacement_m);
    cmd->add_velocity_m_per_s(m.velocity_m_per_s);
    cmd->add_acceleration_m_per_s2(m.acceleration_m_per_s2);
  }
  sites_[s].link->send(rt.codec->seal());
}

template <class Columns>
void NumericalNode::state_columns(Columns& out, double t) const {
  // Row k is the state at t_k and the forces held over [t_k, t_k + dt).
  out("", "t", "s", t);
  out("", "ag", "m_per_s2", ground_.at(t));
  const bool reduced = setup_.output_basis.size() > 0;
  for (std::size_t d = 0; d < setup_.dof_names.size(); ++d) {
    const auto i = static_cast<Eigen::Index>(d);
    out("", setup_.dof_names[d], displacement_unit(kind_at(setup_.dof_kinds, d)),
        reduced ? recorded_displacement_(i) : state_.displacement(setup_.recorded_dofs[d]));
  }
  for (std::size_t d = 0; d < setup_.dof_names.size(); ++d) {
    const auto i = static_cast<Eigen::Index>(d);
    out("v_", setup_.dof_names[d], velocity_unit(kind_at(setup_.dof_kinds, d)),
        reduced ? recorded_velocity_(i) : state_.velocity(setup_.recorded_dofs[d]));
  }
  for (std::size_t s = 0; s < sites_.size(); ++s) {
    const SiteRuntime& rt = runtime_[s];
    for (std::size_t c = 0; c < rt.motion.size(); ++c) {
      const DofKind kind = kind_at(sites_[s].channel_kinds, c);
      const std::string& n = rt.channel_labels[c];
      out("u_", n, displacement_unit(kind), rt.motion[c].displacement_m);
      out("f_", n, force_unit(kind), rt.force(static_cast<Eigen::Index>(c)));
      out("e_", n, force_unit(kind), rt.newest[c].model_error_n);
      out("fm_", n, force_unit(kind), rt.newest[c].force_n);
      out("xm_", n, displacement_unit(kind), rt.newest[c].displacement_m);
    }
    // A multi-axial site's actuators (behind its setup): stroke target, command and reading. An
    // actuator's stroke is a length whatever the DOFs it moves.
    for (std::size_t i = 0; i < rt.actuator_labels.size(); ++i) {
      const std::string& n = rt.actuator_labels[i];
      out("st_", n, "m", rt.actuator_space->actuator_targets()[i].displacement_m);
      out("sc_", n, "m", rt.actuator_space->actuator_commands()[i].displacement_m);
      out("sm_", n, "m", rt.actuator_space->actuator_measured()[i].displacement_m);
    }
  }
}

template <class Columns>
void NumericalNode::spring_columns(Columns& out) const {
  // The hysteretic springs' deformation and force (their loops): the integrator moved their history
  // to x(t_k) as its step began, so their state after it belongs with row k.
  for (std::size_t i = 0; i < structure_.springs.size(); ++i) {
    const SpringElement& spring = structure_.springs[i];
    const HystereticLaw& law = integrator_->springs()[i];
    out("us_", spring.name, displacement_unit(spring.kind), law.deformation_m());
    out("fs_", spring.name, force_unit(spring.kind), law.force_n());
  }
}

void NumericalNode::step(std::int64_t k) {
  const double t = static_cast<double>(k) * dt_s_;
  receive(k);
  compute_forces();
  RowWriter row(row_);
  if (setup_.output_basis.size() > 0) {
    // The physical DOFs of a reduced structure, x = T q (into vectors sized at construction).
    recorded_displacement_.noalias() = setup_.output_basis * state_.displacement;
    recorded_velocity_.noalias() = setup_.output_basis * state_.velocity;
  }
  state_columns(row, t);
  integrator_->step(state_, total_force_, ground_, t, dt_s_);
  spring_columns(row);
  recorder_.record(row_);
  if (!check_finite(k)) {
    return;  // nothing non-finite reaches a site; the caller stops the run
  }
  send_commands(k + 1);
}

void NumericalNode::receive(std::int64_t k) {
  for (std::size_t s = 0; s < sites_.size(); ++s) {
    if (sites_[s].is_local()) continue;
    drain(s);
    if (sites_[s].delay_guard.enabled) watch_delay(s, k);
  }
}

void NumericalNode::compute_forces() {
  total_force_.setZero();
  for (std::size_t s = 0; s < sites_.size(); ++s) {
    NumericalSite& site = sites_[s];
    SiteRuntime& rt = runtime_[s];
    interface_motion(s);
    if (site.is_local()) {
      // An in-process site: its measured force is used directly (docs/architecture.md §3 numerical step 2).
      if (!site.local->step(rt.motion, rt.measured, dt_s_) && !tripped_site_) {
        tripped_site_ = s;  // the site's interlock: the run stops after this step
      }
      for (std::size_t c = 0; c < rt.measured.size(); ++c) {
        rt.force(static_cast<Eigen::Index>(c)) = rt.measured[c].force_n;
        rt.newest[c] = {0.0, rt.measured[c].force_n, rt.measured[c].displacement_m};
      }
    } else if (site.frame_estimator) {
      // A model that refuses its input leaves a NaN force, which check_finite stops the run on.
      if (!site.frame_estimator->estimate(rt.motion, rt.newest, {rt.force.data(), rt.motion.size()}, dt_s_)) {
        rt.force.setConstant(std::numeric_limits<double>::quiet_NaN());
      }
    } else {
      for (std::size_t c = 0; c < rt.motion.size(); ++c) {
        rt.force(static_cast<Eigen::Index>(c)) = site.estimators[c]->estimate(rt.motion[c], rt.newest[c], dt_s_);
      }
    }
    total_force_.noalias() += site.influence.lazyProduct(rt.force);
  }
}

void NumericalNode::send_commands(std::int64_t next_step) {
  for (std::size_t s = 0; s < sites_.size(); ++s) {
    if (!sites_[s].is_local()) {
      interface_motion(s);
      send_command(s, next_step);
    }
  }
}

// A diverged run must stop rather than send or record its NaNs as if they were motion (exit code 9).
bool NumericalNode::check_finite(std::int64_t k) {
  if (non_finite_step_ >= 0) {
    return false;
  }
  // The sites first: a NaN from a site is the cause of the state that follows from it. Every value
  // of its newest feedback counts, also those the force does not use (the measured force under the
  // modified Smith predictor): a site that sends one is broken, and it is recorded.
  for (std::size_t s = 0; s < runtime_.size(); ++s) {
    bool finite_feedback = true;
    for (const ChannelFeedback& f : runtime_[s].newest) {
      finite_feedback = finite_feedback && std::isfinite(f.model_error_n) && std::isfinite(f.force_n) &&
                        std::isfinite(f.displacement_m);
    }
    if (!finite_feedback || !runtime_[s].force.allFinite()) {
      non_finite_step_ = k;
      non_finite_site_ = static_cast<std::ptrdiff_t>(s);
      return false;
    }
  }
  if (total_force_.allFinite() && state_.displacement.allFinite() && state_.velocity.allFinite() &&
      state_.acceleration.allFinite()) {
    return true;
  }
  non_finite_step_ = k;
  non_finite_site_ = -1;
  return false;
}

std::string NumericalNode::non_finite_description() const {
  if (non_finite_step_ < 0) {
    return {};
  }
  if (non_finite_site_ >= 0) {
    const NumericalSite& site = sites_[static_cast<std::size_t>(non_finite_site_)];
    return fmt::format(
        "step {} (t = {:.6g} s) got a value that is not finite from site \"{}\" (in its feedback "
        "or the force built from it)",
        non_finite_step_, static_cast<double>(non_finite_step_) * dt_s_, site.name);
  }
  return fmt::format("step {} (t = {:.6g} s) left the structure's state non-finite: the integration diverged",
                     non_finite_step_, static_cast<double>(non_finite_step_) * dt_s_);
}

}  // namespace rths
