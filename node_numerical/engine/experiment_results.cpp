// What a run of an Experiment leaves: its evaluation against the monolithic reference (the responses'
// metrics, every site's report, a multi-axial site's benchmark criteria), the summary of results.proto,
// and the files of the run folder (docs/architecture.md §7). Building and running are experiment.cpp's.
#include "node_numerical/engine/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "common/core/exit_codes.hpp"
#include "common/records/record_writer.hpp"
#include "common/records/results.hpp"

namespace rths {

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
  report_.has_shared_socket = !hubs_.empty();
  report_.shared_socket = {};
  for (const UdpHub* hub : hubs_) {
    report_.shared_socket.foreign += hub->counters().foreign;
    report_.shared_socket.receive_errors += hub->counters().receive_errors;
    report_.shared_socket.reads += hub->counters().reads;
    report_.shared_socket.writes += hub->counters().writes;
  }
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
  if (report.has_shared_socket) {
    results::SharedSocket& shared = *summary.mutable_shared_socket();
    shared.set_foreign(report.shared_socket.foreign);
    shared.set_receive_errors(report.shared_socket.receive_errors);
    shared.set_reads(report.shared_socket.reads);
    shared.set_writes(report.shared_socket.writes);
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
