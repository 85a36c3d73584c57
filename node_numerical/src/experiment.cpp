#include "rths/node_numerical/experiment.hpp"

#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "rths/common/address.hpp"
#include "rths/common/digest.hpp"
#include "rths/common/exit_codes.hpp"
#include "rths/common/memory_budget.hpp"
#include "rths/common/realtime_loop.hpp"
#include "rths/common/record_writer.hpp"
#include "rths/common/results.hpp"
#include "rths/common/secret_key.hpp"
#include "rths/node_numerical/stability_plan.hpp"
#include "rths/smith_predictor/modified_smith.hpp"

namespace rths {

namespace {

// The delay guard of a remote site: its round-trip budget planned as rths-plan plans it (the critical
// delay of the loop its compensation leaves on the whole structure, the model error both ways). A budget of
// nothing refuses the run: no network is fast enough for that partition.
DelayGuard plan_delay_guard(const config::Site& site, const LoadedConfig& loaded) {
  const config::DelayGuard& c = site.delay_guard();
  plan::SiteBudget b;
  try {
    b = plan::smith_budget(loaded.experiment, site.name(), c.model_error(), c.transfer_delay_s());
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("{}: site \"{}\".delay_guard: cannot plan the budget: {}", loaded.source.string(),
                                  site.name(), e.what()));
  }
  if (!(b.round_trip_budget_s > 0.0)) {
    throw ConfigError(fmt::format(
        "{}: site \"{}\".delay_guard: the planned round-trip budget is {:.3f} ms at mode {} (model error +-{:g} %): "
        "no network delay is small enough for this partition (rths-plan shows why)",
        loaded.source.string(), site.name(), b.round_trip_budget_s * 1e3, b.limiting_mode, 100.0 * c.model_error()));
  }
  DelayGuard g;
  g.enabled = true;
  g.budget_s = b.round_trip_budget_s;
  g.warn_s = c.warn_fraction() * b.round_trip_budget_s;
  g.smoothing_s = c.smoothing_s();
  g.limiting_mode = b.limiting_mode;
  g.model_error = c.model_error();
  spdlog::info(
      "site {}: delay guard: round-trip budget {:.2f} ms (mode {}, model error +-{:g} %), warning at {:.2f} ms",
      site.name(), g.budget_s * 1e3, g.limiting_mode, 100.0 * g.model_error, g.warn_s * 1e3);
  return g;
}

Eigen::MatrixXd influence_matrix(const config::Site& site, std::uint32_t dofs) {
  const auto channels = static_cast<Eigen::Index>(site.channel_size());
  Eigen::MatrixXd lambda(dofs, channels);
  for (Eigen::Index r = 0; r < lambda.rows(); ++r) {
    for (Eigen::Index c = 0; c < channels; ++c) {
      lambda(r, c) = site.influence(static_cast<int>(r * channels + c));
    }
  }
  return lambda;
}

const config::Model& prediction_of(const config::Channel& channel) {
  return channel.has_prediction() ? channel.prediction() : channel.specimen();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const ResponseMetrics& RunReport::response(const std::string& response_name) const {
  for (const auto& [n, m] : responses) {
    if (n == response_name) {
      return m;
    }
  }
  throw std::out_of_range("no response named " + response_name);
}

Experiment::~Experiment() = default;

namespace {

GroundMotion load_motion(const LoadedConfig& loaded) {
  const config::GroundMotion& spec = loaded.experiment.ground_motion();
  try {
    return load_ground_motion(spec, loaded.base_dir);
  } catch (const std::exception& e) {
    const char* field = spec.has_record() ? "ground_motion.record.path" : "ground_motion";
    throw ConfigError(fmt::format("{}: {}: {}", loaded.source.string(), field, e.what()));
  }
}

// The records of a run over ground (computed in double: an absurd duration must be refused, not
// overflow an integer).
RecordBudget records_of(const config::Experiment& cfg, const GroundMotion& ground, RunMode mode) {
  const double duration = cfg.duration_s() > 0.0 ? cfg.duration_s() : ground.end_s();
  return numerical_process_records(cfg, run_steps(duration, cfg.rate_hz()), mode == RunMode::kVirtualTime);
}

// The run's steps, once its records are known to fit output.memory_budget_mb.
std::int64_t checked_steps(const LoadedConfig& loaded, const GroundMotion& ground, RunMode mode) {
  const config::Experiment& cfg = loaded.experiment;
  const double duration = cfg.duration_s() > 0.0 ? cfg.duration_s() : ground.end_s();
  const RecordBudget records = records_of(cfg, ground, mode);
  const double steps = records.steps;
  if (const std::string over = over_memory_budget(cfg, records); !over.empty()) {
    const std::string length =
        cfg.duration_s() > 0.0
            ? fmt::format("duration_s: {:g} s", duration)
            : fmt::format("duration_s: 0 runs to the end of the ground motion, {:g} s (ground_motion.record.path)",
                          duration);
    throw ConfigError(fmt::format("{}: {} at {:g} Hz is {} steps; {}", loaded.source.string(), length, cfg.rate_hz(),
                                  count_text(steps), over));
  }
  return static_cast<std::int64_t>(steps);
}

}  // namespace

void Experiment::check_before_start(const LoadedConfig& loaded, RunMode mode) {
  (void)checked_steps(loaded, load_motion(loaded), mode);
}

RecordBudget Experiment::records(const LoadedConfig& loaded, RunMode mode) {
  return records_of(loaded.experiment, load_motion(loaded), mode);
}

Experiment::Experiment(const LoadedConfig& loaded, RunMode mode)
    : mode_(mode),
      config_(loaded.experiment),
      ground_(load_motion(loaded)),
      steps_(checked_steps(loaded, ground_, mode)),
      rate_hz_(config_.rate_hz()),
      clock_(config_.rate_hz()) {
  if (config_.ground_motion().has_record()) {
    // The saved config must run again from any folder: record the resolved path.
    const std::filesystem::path p = config_.ground_motion().record().path();
    config_.mutable_ground_motion()->mutable_record()->set_path(
        std::filesystem::absolute(p.is_absolute() ? p : loaded.base_dir / p).lexically_normal().string());
  }
  // The saved config must run again from any folder: delay traces too get their resolved path.
  for (auto& site : *config_.mutable_site()) {
    for (const bool forward : {true, false}) {
      const config::Impairment& leg = forward ? site.link().forward() : site.link().backward();
      if (leg.has_empirical() && leg.empirical().has_trace_path()) {
        const std::filesystem::path p = leg.empirical().trace_path();
        auto* mutable_leg = forward ? site.mutable_link()->mutable_forward() : site.mutable_link()->mutable_backward();
        mutable_leg->mutable_empirical()->set_trace_path(
            std::filesystem::absolute(p.is_absolute() ? p : loaded.base_dir / p).lexically_normal().string());
      }
    }
  }
  // ... and so must the key files (the path is saved, never the key).
  for (auto& site : *config_.mutable_site()) {
    if (site.has_key_file()) {
      const std::filesystem::path p = site.key_file();
      site.set_key_file(
          std::filesystem::absolute(p.is_absolute() ? p : loaded.base_dir / p).lexically_normal().string());
    }
  }
  const auto rows = static_cast<std::size_t>(steps_);

  // Virtual runs are reproducible to the bit, session id included; a real-time session gets a random
  // id and fresh keys from its handshake (use_session()).
  const std::uint64_t session = fnv1a(to_text(config_));
  const Clock& node_clock = mode_ == RunMode::kRealTime ? static_cast<const Clock&>(wall_clock_) : clock_;
  if (mode_ == RunMode::kRealTime) {
    io_ = std::make_unique<asio::io_context>();
  }
  const StructuralModel structure = make_structure(config_.structure());
  const std::uint32_t dofs = config_.structure().dofs();
  if (config_.structure().has_reduction()) {
    // The hybrid run integrates the reduced structure; the reference below keeps the whole one, so
    // that the run's comparison shows what the reduction costs in accuracy.
    const auto start = std::chrono::steady_clock::now();
    try {
      reduction_ = std::make_unique<ReducedModel>(reduce_structure(config_, structure));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("{}: {}", loaded.source.string(), e.what()));
    }
    reduction_setup_s_ = seconds_since(start);
    spdlog::info(
        "structure reduced to {} modes + {} static correction(s) of its {} DOFs (highest mode {:.4g} Hz, reduced "
        "model up to {:.4g} Hz) in {:.2f} s; its error against the whole structure: rths-numerical budget",
        reduction_->modes, reduction_->corrections, dofs, reduction_->highest_mode_rad_s / (2.0 * std::numbers::pi),
        reduction_->frequencies_rad_s.maxCoeff() / (2.0 * std::numbers::pi), reduction_setup_s_);
  }
  const StructuralModel& hybrid_structure = reduction_ ? reduction_->model : structure;
  // With the physical parts removed from a whole model (seed 000 Eq. 5), the monolithic reference is
  // that whole model alone: the specimens are already in it.
  const bool whole_reference = config_.structure().removed_size() > 0;
  const StructuralModel reference_structure = whole_reference ? make_whole_structure(config_.structure()) : structure;

  std::vector<NumericalSite> hybrid_sites;
  std::vector<NumericalSite> reference_sites;
  std::vector<int> remote_index;  // config index of each remote site with a socket, in udp_'s order
  for (int i = 0; i < config_.site_size(); ++i) {
    const config::Site& site = config_.site(i);
    const auto site_id = static_cast<std::uint32_t>(i + 1);

    if (!whole_reference) {
      NumericalSite ref;
      ref.name = site.name();
      ref.site_id = site_id;
      ref.influence = influence_matrix(site, dofs);
      ref.channel_kinds = channel_kinds(config_.structure(), site);
      ref.local = make_physical_substructure(site, rate_hz_, Plants::kIdeal);
      reference_sites.push_back(std::move(ref));
    }

    NumericalSite hyb;
    hyb.name = site.name();
    hyb.site_id = site_id;
    hyb.channel_kinds = channel_kinds(config_.structure(), site);
    hyb.influence =
        reduction_ ? reduced_influence(*reduction_, influence_matrix(site, dofs)) : influence_matrix(site, dofs);
    if (site.placement() == config::LOCAL) {
      hyb.local = make_physical_substructure(site, rate_hz_);
      hybrid_sites.push_back(std::move(hyb));
      continue;
    }
    remote_.push_back(hybrid_sites.size());
    if (mode_ == RunMode::kRealTime) {
      HostPort peer;
      try {
        peer = parse_host_port(site.address());
      } catch (const std::invalid_argument& e) {
        throw ConfigError(fmt::format("{}: site[{}].address: {}", loaded.source.string(), i, e.what()));
      }
      // An IPv6 peer needs an IPv6 socket; an ephemeral port, the site learns it from the hello.
      udp_.push_back(std::make_unique<UdpLink>(*io_, peer.host.find(':') != std::string::npos ? "::" : "0.0.0.0", 0));
      try {
        udp_.back()->set_peer(peer.host, peer.port);
      } catch (const std::exception& e) {
        // A name that does not resolve (or to no address this socket reaches) is the config's mistake.
        throw ConfigError(
            fmt::format("{}: site[{}].address: {}; expected the address of the host where "
                        "rths-physical serves site \"{}\"",
                        loaded.source.string(), i, e.what(), site.name()));
      }
      // Two sites the resolver puts at one address would be one rths-physical to the network (the
      // config's check sees only the text of explicit addresses).
      for (std::size_t r = 0; r + 1 < udp_.size(); ++r) {
        if (udp_[r]->peer_description() == udp_.back()->peer_description()) {
          throw ConfigError(
              fmt::format("{}: site[{}].address: \"{}\" reaches {}, as site[{}]'s (\"{}\") does; "
                          "expected one address per site: each site's rths-physical listens on its "
                          "own port",
                          loaded.source.string(), i, site.address(), udp_.back()->peer_description(), remote_index[r],
                          config_.site(remote_index[r]).address()));
        }
      }
      remote_index.push_back(i);
      udp_.back()->lock_peer(true);
      hyb.link = udp_.back().get();
      SiteKey key = site_key(config_, site, loaded.base_dir, loaded.source.string(), peer.host);
      report_.insecure = report_.insecure || key.insecure;
      site_keys_.push_back(std::move(key.key));
    } else {
      // A delay trace is read here: a missing or malformed one is the config's mistake, named by field.
      const auto impairment = [&](bool forward) {
        const config::Impairment& leg = forward ? site.link().forward() : site.link().backward();
        try {
          return Impairment(leg, loaded.base_dir);
        } catch (const std::exception& e) {
          throw ConfigError(fmt::format("{}: site[{}].link.{}{}: {}", loaded.source.string(), i,
                                        forward ? "forward" : "backward",
                                        leg.empirical().has_trace_path() ? ".empirical.trace_path" : "", e.what()));
        }
      };
      links_.push_back(std::make_unique<VirtualLink>(clock_, impairment(true), impairment(false)));
      hyb.link = &links_.back()->numerical_end;
    }
    if (site.has_delay_guard()) {
      hyb.delay_guard = plan_delay_guard(site, loaded);
    }
    const config::CompensationMode compensation = site.compensation().mode();
    // Each leg lags round(D rate) steps (VirtualClock), so a round trip of d lags round(d rate).
    const int assumed_steps = static_cast<int>(std::lround(site.compensation().assumed_round_trip_s() * rate_hz_));
    if (site.compensation().has_frame_prediction()) {
      hyb.frame_estimator = std::make_unique<FrameSmithPart1>(site.compensation().frame_prediction(),
                                                              static_cast<std::size_t>(site.channel_size()));
    } else {
      for (const auto& channel : site.channel()) {
        // Without compensation no model is used (and a multi-axial site's channels have none).
        hyb.estimators.push_back(make_force_estimator(
            compensation, compensation == config::NONE ? nullptr : make_model(prediction_of(channel)), assumed_steps));
      }
    }
    hybrid_sites.push_back(std::move(hyb));
    if (mode_ == RunMode::kRealTime) {
      continue;  // the site is another process, reached over UDP
    }
    physical_.push_back(std::make_unique<PhysicalNode>(
        make_site_setup(config_, site, site_id, rows), virtual_session_keys(session, site_id), links_.back()->site_end,
        clock_, make_physical_substructure(site, rate_hz_), make_part2(site), make_frame_part2(site)));
  }

  NumericalNode::Setup setup{session, rate_hz_, rows, recorded_dof_names(config_.structure()), {}, {}, {}};
  for (const std::uint32_t d : recorded_dofs(config_.structure())) setup.recorded_dofs.push_back(d);
  setup.dof_kinds = recorded_dof_kinds(config_.structure());
  NumericalNode::Setup hybrid_setup = setup;
  if (reduction_) {
    // The records hold the physical DOFs, x = T q: the rows of T of the recorded DOFs.
    hybrid_setup.output_basis = reduction_->basis(setup.recorded_dofs, Eigen::all);
    hybrid_setup.recorded_dofs.clear();
  }
  hybrid_ = std::make_unique<NumericalNode>(hybrid_setup, hybrid_structure, make_integrator(config_, hybrid_structure),
                                            ground_, node_clock, std::move(hybrid_sites));
  reference_ =
      std::make_unique<NumericalNode>(setup, reference_structure, make_integrator(config_, reference_structure),
                                      ground_, clock_, std::move(reference_sites));

  report_.name = config_.name();
  report_.mode = mode_;
  report_.planned_steps = steps_;
  report_.steps = steps_;
  report_.rate_hz = rate_hz_;
  report_.duration_s = static_cast<double>(steps_ - 1) / rate_hz_;
  report_.ground_motion = ground_.source();
}

std::int64_t Experiment::run_hybrid_steps(std::int64_t first, std::int64_t last,
                                          std::vector<std::int64_t>* numerical_step_ns) {
  for (std::int64_t k = first; k < last; ++k) {
    // Sites run half a period ahead of the numerical node (VirtualClock): site step k, then step k.
    clock_.set_site_step(k);
    for (auto& site : physical_) {
      site->step(k);
      if (site->tripped()) {
        return stop_on_site(k - first, site->name(), site->substructure());
      }
    }
    clock_.set_numerical_step(k);
    if (numerical_step_ns != nullptr) {
      const std::int64_t start = monotonic_ns();
      hybrid_->step(k);
      numerical_step_ns->push_back(monotonic_ns() - start);
    } else {
      hybrid_->step(k);
    }
    if (const auto s = hybrid_->tripped_site()) {
      return stop_on_site(k + 1 - first, hybrid_->sites()[*s].name, *hybrid_->sites()[*s].local);
    }
    if (const auto s = hybrid_->delay_exceeded_site()) {
      return stop_on_delay(k + 1 - first, *s);
    }
    if (!hybrid_->finite()) {
      return k + 1 - first;
    }
  }
  return last - first;
}

std::int64_t Experiment::stop_on_delay(std::int64_t steps_run, std::size_t s) {
  const NumericalSite& site = hybrid_->sites()[s];
  const DelayGuard& g = site.delay_guard;
  report_.exit_code = kExitDelayBudget;
  report_.stop_reason = fmt::format(
      "site \"{}\": the measured round trip (smoothed over {:g} s) reached {:.2f} ms, beyond its planned delay "
      "budget of {:.2f} ms (mode {}, model error +-{:g} %: docs/stability.md); every site told to hold and stop",
      site.name, g.smoothing_s, g.smoothed_s * 1e3, g.budget_s * 1e3, g.limiting_mode, 100.0 * g.model_error);
  return steps_run;
}

std::int64_t Experiment::stop_on_site(std::int64_t steps_run, const std::string& site,
                                      const PhysicalSubstructure& substructure) {
  report_.exit_code = substructure.interlock().tripped() ? kExitLimit : kExitEquipment;
  report_.stop_reason =
      fmt::format("site \"{}\" {}; the actuator holds its last admitted target", site, substructure.stop_reason());
  return steps_run;
}

void Experiment::run_hybrid_only() {
  const auto start = std::chrono::steady_clock::now();
  report_.steps = run_hybrid_steps(0, steps_);
  report_.duration_s = static_cast<double>(std::max<std::int64_t>(report_.steps - 1, 0)) / rate_hz_;
  report_.run_time_s = seconds_since(start);
  if (!hybrid_->finite()) {
    stop_non_finite();
  }
}

void Experiment::stop_non_finite() {
  report_.exit_code = kExitNonFinite;
  report_.stop_step = hybrid_->non_finite_step();
  report_.stop_time_s = static_cast<double>(report_.stop_step) / rate_hz_;
  report_.stop_reason = hybrid_->non_finite_description() + "; the run stopped";
}

void Experiment::run_reference(std::int64_t steps) {
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t k = 0; k < steps; ++k) {
    reference_->step(k);
  }
  report_.reference_time_s = seconds_since(start);
}

const Recorder& Experiment::run_reference_only() {
  run_reference(steps_);
  return reference_->recorder();
}

const RunReport& Experiment::run() {
  run_hybrid_only();
  run_reference(report_.steps);
  evaluate();
  return report_;
}

void Experiment::evaluate() {
  const Recorder& hyb = hybrid_->recorder();
  const Recorder& ref = reference_->recorder();
  report_.responses.clear();
  report_.response_units.clear();
  for (const auto& name : recorded_dof_names(config_.structure())) {
    const std::size_t c = hyb.column_index(name);
    report_.responses.emplace_back(name, compare_responses(hyb.column(c), ref.column(c)));
    report_.response_units[name] = hyb.column_names()[c].unit;
  }
  // A whole-structure reference (parts removed) has no sites: the sites' forces have no counterpart.
  const bool whole_reference = reference_->sites().empty();
  for (const NumericalSite& site :
       whole_reference ? std::span<const NumericalSite>{} : std::span<const NumericalSite>(hybrid_->sites())) {
    for (Eigen::Index ch = 0; ch < site.channels(); ++ch) {
      const std::string col = NumericalNode::force_column(site, ch);
      const std::size_t c = hyb.column_index(col);
      report_.responses.emplace_back(col, compare_responses(hyb.column(c), ref.column(c)));
      report_.response_units[col] = hyb.column_names()[c].unit;
    }
  }
  report_.sites.clear();
  std::size_t remote = 0;
  for (std::size_t s = 0; s < hybrid_->sites().size(); ++s) {
    const NumericalSite& site = hybrid_->sites()[s];
    SiteReport sr;
    sr.name = site.name;
    sr.local = site.is_local();
    sr.delay_guard = site.delay_guard;
    sr.numerical_side = hybrid_->site_stats()[s];
    if (!site.is_local()) {
      const SiteTiming& t = hybrid_->site_timing(s);
      SiteTimingReport& tr = sr.timing;
      tr.valid = t.round_trip.count() > 0;
      const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
      tr.round_trip_p50_us = us(t.round_trip.percentile(50));
      tr.round_trip_p99_us = us(t.round_trip.percentile(99));
      tr.round_trip_max_us = us(t.round_trip.max_ns());
      tr.forward_p50_us = us(t.forward.percentile(50));
      tr.forward_p99_us = us(t.forward.percentile(99));
      tr.backward_p50_us = us(t.backward.percentile(50));
      tr.backward_p99_us = us(t.backward.percentile(99));
      tr.age_p50_us = us(t.age_at_use.percentile(50));
      tr.age_p99_us = us(t.age_at_use.percentile(99));
      tr.clock_offset_us = us(t.clock_offset_ns);
      tr.loss_rate = sr.numerical_side.loss_rate();
    }
    if (!site.is_local() && mode_ == RunMode::kRealTime) {
      sr.has_socket = true;
      sr.socket = udp_[remote]->counters();
      if (remote < handshake_packets_.size()) sr.handshake_packets = handshake_packets_[remote];
      ++remote;
    }
    if (site.is_local()) {
      std::vector<TrackingMetrics> tracking;
      for (Eigen::Index ch = 0; ch < site.channels(); ++ch) {
        const std::string n =
            channel_label(site.name, static_cast<std::size_t>(site.channels()), static_cast<std::size_t>(ch));
        tracking.push_back(tracking_metrics(hyb.column(hyb.column_index("u_" + n)),
                                            hyb.column(hyb.column_index("xm_" + n)), rate_hz_));
      }
      sr.channels = site.local->report(tracking);
      site.local->log_warnings(site.name);
      sr.tracking = tracking;
      if (actuators_of(site.local->plants()) > 0) evaluate_multi_axial(site, nullptr, sr);
    }
    if (!site.is_local() && mode_ == RunMode::kVirtualTime) {
      const PhysicalNode& node = *physical_[remote];
      sr.tracking = site_tracking(node, rate_hz_);
      sr.channels = node.substructure().report(sr.tracking);
      node.substructure().log_warnings(node.name());
      sr.physical_side = node.stats();
      if (actuators_of(node.substructure().plants()) > 0) evaluate_multi_axial(site, &node, sr);
      sr.forward = links_[remote]->forward.counters();
      sr.backward = links_[remote]->backward.counters();
      for (std::size_t c = 0; c < node.recorder().columns(); ++c) {
        const Column& column = node.recorder().column_names()[c];
        if (!column.name.starts_with("force")) continue;
        // std::max(peak, NaN) would keep the old peak: a NaN force must stay visible. A moment (N m,
        // a rotational channel's) is no force in N: only its NaN counts here.
        const double peak = peak_abs(node.recorder().column(c));
        if (std::isnan(peak)) {
          sr.measured_force_peak_n = peak;
        } else if (column.unit == "N") {
          sr.measured_force_peak_n = std::max(sr.measured_force_peak_n, peak);
        }
      }
      ++remote;
    }
    report_.sites.push_back(sr);
  }
  // Success is claimed only for numbers: a NaN metric is a run that went wrong (exit code 9).
  if (report_.exit_code == kExitCompleted) {
    if (const std::string why = non_finite_metrics(report_); !why.empty()) {
      report_.exit_code = kExitNonFinite;
      report_.stop_reason = why;
    }
  }
}

void Experiment::evaluate_multi_axial(const NumericalSite& site, const PhysicalNode* remote, SiteReport& sr) const {
  const Recorder& hyb = hybrid_->recorder();
  const Recorder& ref = reference_->recorder();
  // A remote site (in virtual time) runs its step j on the command of numerical step j - d, d the
  // forward leg's delay in steps: its records are read from row d on, against the numerical node's
  // first rows - d, so that every criterion compares the same point of the test, and the network's
  // transport delay is not counted as tracking error (it is the Smith predictor's to compensate; J8
  // and J10, the structure's, include what it leaves).
  std::size_t lead = 0;
  if (remote != nullptr) {
    const Recorder& rec = remote->recorder();
    // The site's last step and the numerical step whose command it applied (0: none ever came).
    const std::vector<double> command_step = rec.column(rec.column_index("command_step"));
    if (!command_step.empty() && command_step.back() > 0) {
      const std::size_t last = command_step.size() - 1;
      lead = last - std::min(last, static_cast<std::size_t>(command_step.back()));
    }
  }
  const std::size_t rows = ref.rows() - std::min(ref.rows(), lead);
  // The records' columns are copies: kept here while the criteria read them.
  std::deque<std::vector<double>> kept;
  const auto column = [&kept, rows](const Recorder& rec, const std::string& name, std::size_t from = 0) {
    return std::span<const double>(kept.emplace_back(rec.column(rec.column_index(name)))).subspan(from, rows);
  };
  MarthsHistories run;
  run.rate_hz = rate_hz_;
  const PlantDriver& plants = remote != nullptr ? remote->substructure().plants() : site.local->plants();
  // Called for a site whose driver speaks actuators (actuators_of > 0).
  const ActuatorSpace& space = *plants.actuator_space();
  for (std::size_t i = 0; i < space.actuators(); ++i) {
    const std::string n = actuator_label(site.name, i);
    const std::string a = "_a" + std::to_string(i + 1);
    run.stroke_target.push_back(remote != nullptr ? column(remote->recorder(), "stroke_target" + a, lead)
                                                  : column(hyb, "st_" + n));
    run.stroke_measured.push_back(remote != nullptr ? column(remote->recorder(), "stroke_measured" + a, lead)
                                                    : column(hyb, "sm_" + n));
  }
  // The reference's interface motion, -Lambda^T x of the whole structure (the site's channels).
  const Eigen::Index dofs = site.influence.rows();
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows), dofs);
  const auto& names = dof_names(config_.structure());
  for (Eigen::Index d = 0; d < dofs; ++d) {
    const auto values = column(ref, names[static_cast<std::size_t>(d)]);
    x.col(d) = Eigen::Map<const Eigen::VectorXd>(values.data(), x.rows());
  }
  const Eigen::MatrixXd interface_reference = -x * site.influence;  // rows x channels
  for (Eigen::Index c = 0; c < site.channels(); ++c) {
    const auto channels = static_cast<std::size_t>(site.channels());
    const std::string n = channel_label(site.name, channels, static_cast<std::size_t>(c));
    const std::string suffix = channels == 1 ? "" : std::to_string(c + 1);
    run.interface_estimated.push_back(remote != nullptr ? column(remote->recorder(), "measured" + suffix, lead)
                                                        : column(hyb, "xm_" + n));
    run.interface_numerical.push_back(column(hyb, "u_" + n));
    run.interface_reference.emplace_back(interface_reference.col(c).data(), rows);
  }
  for (const config::Site& cfg : config_.site()) {
    if (cfg.name() != site.name) continue;
    for (const std::string& dof : cfg.evaluation_dof()) {
      run.upper_numerical.push_back(column(hyb, dof));
      run.upper_reference.push_back(column(ref, dof));
      sr.evaluation_dofs.push_back(dof);
    }
  }
  sr.criteria = marths_criteria(run);
  sr.has_criteria = true;
  if (!sr.criteria.undefined.empty()) {
    spdlog::warn(
        "site {}: criteria {} are undefined, not failed: the histories they are normalised by have no motion (the "
        "reference structure at rest: a run that ends before the ground motion moves it)",
        site.name, fmt::format("{}", fmt::join(sr.criteria.undefined, ", ")));
  }
  for (std::size_t i = 0; i < space.actuators(); ++i) {
    results::Channel& out = *sr.actuators.Add();
    results::TrackingMetrics& t = *out.mutable_tracking();
    t.set_j1_delay_ms(sr.criteria.j1_delay_ms[i]);
    t.set_j2_nrms_pct(sr.criteria.j2_nrms_pct[i]);
    t.set_j3_peak_pct(sr.criteria.j3_peak_pct[i]);
    space.report_actuator_controller(i, *out.mutable_controller());
    plants.report(i, *out.mutable_plant());
  }
  if (const std::string w = space.actuator_controller_warning(); !w.empty()) {
    spdlog::warn("site {}: {}", site.name, w);
  }
}

std::string non_finite_metrics(const RunReport& report) {
  for (const auto& [name, m] : report.responses) {
    if (!m.finite()) {
      return fmt::format(
          "the metrics of {} are not finite (peak {}, reference peak {}, J_peak {} %, J_RMS {} %, "
          "rho {}): a history held a non-finite value",
          name, m.peak, m.reference_peak, m.j_peak_pct, m.j_rms_pct, m.rho);
    }
  }
  for (const SiteReport& site : report.sites) {
    if (site.has_criteria && !site.criteria.finite()) {
      return fmt::format("the benchmark criteria of site {} are not finite: a history held a non-finite value",
                         site.name);
    }
    for (std::size_t c = 0; c < site.tracking.size(); ++c) {
      const TrackingMetrics& t = site.tracking[c];
      if (!std::isfinite(t.j1_delay_ms) || !std::isfinite(t.j2_nrms_pct) || !std::isfinite(t.j3_peak_pct)) {
        return fmt::format(
            "the tracking of site {} channel {} is not finite (J1 {} ms, J2 {} %, J3 {} %): its "
            "target or measured history held a non-finite value",
            site.name, c, t.j1_delay_ms, t.j2_nrms_pct, t.j3_peak_pct);
      }
    }
  }
  return {};
}

results::RunSummary run_summary(const RunReport& report) {
  results::RunSummary summary;
  summary.set_name(report.name);
  summary.set_mode(report.mode == RunMode::kRealTime ? results::real_time : results::virtual_time);
  summary.set_exit_code(report.exit_code);
  summary.set_stop_reason(report.stop_reason);
  summary.set_insecure(report.insecure);
  if (report.stop_step >= 0) {
    summary.set_stop_step(report.stop_step);
    summary.set_stop_time_s(report.stop_time_s);
  }
  summary.set_planned_steps(report.planned_steps);
  summary.set_ground_motion(report.ground_motion);
  summary.set_rate_hz(report.rate_hz);
  summary.set_steps(report.steps);
  summary.set_duration_s(report.duration_s);
  summary.set_run_time_s(report.run_time_s);
  summary.set_reference_time_s(report.reference_time_s);
  if (report.has_loop_stats) {
    *summary.mutable_loop() = to_results(report.loop);
  }
  for (const auto& [name, m] : report.responses) {
    results::ResponseMetrics& out = (*summary.mutable_responses())[name] = to_results(m);
    if (const auto unit = report.response_units.find(name); unit != report.response_units.end()) {
      out.set_unit(unit->second);
    }
  }
  for (const SiteReport& s : report.sites) {
    results::RunSite& site = (*summary.mutable_sites())[s.name];
    site.set_placement(s.local ? results::RunSite::local : results::RunSite::remote);
    if (!s.local && s.timing.valid) {
      const SiteTimingReport& t = s.timing;
      results::NetworkTiming& network = *site.mutable_network();
      network.set_round_trip_p50_us(t.round_trip_p50_us);
      network.set_round_trip_p99_us(t.round_trip_p99_us);
      network.set_round_trip_max_us(t.round_trip_max_us);
      network.set_one_way_forward_p50_us(t.forward_p50_us);
      network.set_one_way_forward_p99_us(t.forward_p99_us);
      network.set_one_way_backward_p50_us(t.backward_p50_us);
      network.set_one_way_backward_p99_us(t.backward_p99_us);
      network.set_feedback_age_at_use_p50_us(t.age_p50_us);
      network.set_feedback_age_at_use_p99_us(t.age_p99_us);
      network.set_clock_offset_us(t.clock_offset_us);
      network.set_loss_rate(t.loss_rate);
    }
    if (!s.local) {
      results::NumericalSide& numerical = *site.mutable_numerical_side();
      numerical.set_held_steps(s.numerical_side.held_steps);
      numerical.set_feedback_used(s.numerical_side.feedback_used);
      *numerical.mutable_packets() = to_results(s.numerical_side.packets);
      if (s.has_socket) {
        *numerical.mutable_handshake_packets() = to_results(s.handshake_packets);
        *numerical.mutable_socket() = to_results(s.socket);
      }
    }
    // In real time the site's own counters are in its site_<name>.json: here only what this node saw.
    if (!s.local && report.mode == RunMode::kVirtualTime) {
      site.set_measured_force_peak_n(s.measured_force_peak_n);
      results::SiteSide& side = *site.mutable_site_side();
      side.set_steps(s.physical_side.steps);
      side.set_held_steps(s.physical_side.held_steps);
      side.set_extrapolated_steps(s.physical_side.extrapolated_steps);
      side.set_commands_used(s.physical_side.commands_used);
      *side.mutable_packets() = to_results(s.physical_side.packets);
      *site.mutable_links()->mutable_forward() = to_results(s.forward);
      *site.mutable_links()->mutable_backward() = to_results(s.backward);
    }
    *site.mutable_channels() = s.channels;
    if (s.has_criteria) {
      results::MultiAxialReport& out = *site.mutable_multi_axial();
      *out.mutable_actuators() = s.actuators;
      results::BenchmarkIndices& j = *out.mutable_indices();
      const MarthsCriteria& c = s.criteria;
      j.mutable_j4_delay_ms()->Assign(c.j4_delay_ms.begin(), c.j4_delay_ms.end());
      j.mutable_j5_nrms_pct()->Assign(c.j5_nrms_pct.begin(), c.j5_nrms_pct.end());
      j.mutable_j6_peak_pct()->Assign(c.j6_peak_pct.begin(), c.j6_peak_pct.end());
      j.mutable_j7_nrms_pct()->Assign(c.j7_nrms_pct.begin(), c.j7_nrms_pct.end());
      j.mutable_j9_peak_pct()->Assign(c.j9_peak_pct.begin(), c.j9_peak_pct.end());
      for (const std::string& d : s.evaluation_dofs) j.add_evaluation_dof(d);
      j.mutable_j8_nrms_pct()->Assign(c.j8_nrms_pct.begin(), c.j8_nrms_pct.end());
      j.mutable_j10_peak_pct()->Assign(c.j10_peak_pct.begin(), c.j10_peak_pct.end());
      for (const std::string& u : c.undefined) j.add_undefined(u);
    }
    if (s.delay_guard.enabled) {
      const DelayGuard& g = s.delay_guard;
      results::DelayGuardReport& out = *site.mutable_delay_guard();
      out.set_budget_s(g.budget_s);
      out.set_warn_at_s(g.warn_s);
      out.set_limiting_mode(g.limiting_mode);
      out.set_model_error(g.model_error);
      out.set_smoothed_round_trip_max_s(g.smoothed_max_s);
      if (g.warned_step >= 0) out.set_warned_at_s(static_cast<double>(g.warned_step) / report.rate_hz);
      if (g.exceeded_step >= 0) out.set_exceeded_at_s(static_cast<double>(g.exceeded_step) / report.rate_hz);
    }
  }
  return summary;
}

namespace {

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + file.string());
  }
}

}  // namespace

void Experiment::stream_outputs(const std::filesystem::path& dir) {
  write_text(dir / "config.textproto", to_text(config_));
  streams_.push_back(std::make_unique<RecordWriter>(hybrid_->recorder(), dir / "numerical.csv"));
  for (const auto& node : physical_) {
    streams_.push_back(std::make_unique<RecordWriter>(node->recorder(), dir / ("site_" + node->name() + ".csv")));
  }
}

void Experiment::write_outputs(const std::filesystem::path& dir) {
  if (streams_.empty()) {
    stream_outputs(dir);
  }
  for (const auto& stream : streams_) {
    stream->finish();
  }
  // The reference is computed after the run, in a fraction of a second: written at once.
  if (config_.output().reference_csv()) {
    reference_->recorder().write_csv(dir / "reference.csv");
  }
  write_results_json(dir / "summary.json", run_summary(report_));
  if (report_.has_loop_stats) {
    write_timing_csv(dir / "timing.csv");
  }
}

void Experiment::write_timing_csv(const std::filesystem::path& file) const {
  std::ofstream out(file);
  out << "histogram,lower_us,upper_us,count\n";
  const auto rows = [&out](const std::string& name, const LatencyHistogram& h) {
    for (const LatencyHistogram::Bin& b : h.nonempty_bins()) {
      out << fmt::format("{},{:.17g},{:.17g},{}\n", name, 1e-3 * static_cast<double>(b.lower_ns),
                         1e-3 * static_cast<double>(b.upper_ns), b.count);
    }
  };
  rows("lateness", report_.loop.lateness);
  rows("compute", report_.loop.compute);
  for (std::size_t s = 0; s < hybrid_->sites().size(); ++s) {
    if (!hybrid_->sites()[s].is_local())
      rows("round_trip_" + hybrid_->sites()[s].name, hybrid_->site_timing(s).round_trip);
  }
  if (!out.flush()) {
    spdlog::error("could not write {}", file.string());
  }
}

}  // namespace rths
