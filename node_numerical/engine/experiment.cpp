// Building an Experiment from a validated config (the numerical node, every site in process or behind
// its link, the monolithic reference) and running it in virtual time. Its evaluation and the files it
// writes are experiment_results.cpp's, a run in real time realtime_run.cpp's.
#include "node_numerical/engine/experiment.hpp"

#include <chrono>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "common/config/memory_budget.hpp"
#include "common/core/address.hpp"
#include "common/core/digest.hpp"
#include "common/core/exit_codes.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/records/record_writer.hpp"
#include "common/records/results.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/stability_plan.hpp"
#include "smith_predictor/parts/modified_smith.hpp"
#include "smith_predictor/site_models/site_models.hpp"

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
      const bool v6 = peer.host.find(':') != std::string::npos;
      std::unique_ptr<UdpHub>& hub = v6 ? hub_v6_ : hub_v4_;
      if (!hub) {
        hub = std::make_unique<UdpHub>(*io_, v6 ? "::" : "0.0.0.0", 0);
        hubs_.push_back(hub.get());
      }
      asio::ip::udp::endpoint at;
      try {
        at = hub->resolve(peer.host, peer.port);
      } catch (const std::exception& e) {
        // A name that does not resolve (or to no address this socket reaches) is the config's mistake.
        throw ConfigError(
            fmt::format("{}: site[{}].address: {}; expected the address of the host where "
                        "rths-physical serves site \"{}\"",
                        loaded.source.string(), i, e.what(), site.name()));
      }
      // Two sites the resolver puts at one address would be one rths-physical to the network (the
      // config's check sees only the text of explicit addresses).
      for (std::size_t r = 0; r < udp_.size(); ++r) {
        if (udp_[r]->peer() == at) {
          throw ConfigError(
              fmt::format("{}: site[{}].address: \"{}\" reaches {}, as site[{}]'s (\"{}\") does; "
                          "expected one address per site: each site's rths-physical listens on its "
                          "own port",
                          loaded.source.string(), i, site.address(), udp::describe(at), remote_index[r],
                          config_.site(remote_index[r]).address()));
        }
      }
      udp_.push_back(&hub->add_peer(at));
      remote_index.push_back(i);
      hyb.link = udp_.back();
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

}  // namespace rths
