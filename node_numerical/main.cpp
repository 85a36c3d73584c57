// rths-numerical: the numerical node's command. Kept thin (STYLE): parse, build, run, report.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/config/config.hpp"
#include "common/core/command_line.hpp"
#include "common/core/dof_kind.hpp"
#include "common/core/exit_codes.hpp"
#include "common/program/program.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/records/telemetry.hpp"
#include "node_numerical/analysis/budget.hpp"
#include "node_numerical/analysis/calibration.hpp"
#include "node_numerical/analysis/campaign.hpp"
#include "node_numerical/analysis/run_plots.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/engine/loopback.hpp"
#include "node_numerical/structure/model_ladder.hpp"

namespace {

// What the command line asks for.
struct Options {
  std::filesystem::path out;
  std::vector<std::string> overrides;
  bool realtime = false;
  bool quiet = false;
  bool no_plots = false;
  std::vector<std::string> plot_dofs;
  rths::TelemetryOptions telemetry;
  int plants = 100;
  int first_seed = 1;
  int jobs = 0;
  bool noise_per_run = false;
  int budget_steps = 4096;
  double share = 0.5;
  int storeys = 0;
  int bays = 0;
  std::string name;
  std::string ground_motion = "../../data/ground_motions/elcentro_1940_ns_g.dat";
};

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-numerical", "the numerical node of rths (distributed real-time hybrid simulation)");
  cli.command("run", "CONFIG",
              "Run the experiment CONFIG (protobuf text format, schema proto/experiment.proto).\n"
              "Default: virtual time — the numerical node and every site stepped on a simulated clock,\n"
              "packets encoded and delayed on in-memory links. With --realtime: on the wall clock at\n"
              "rate_hz, each REMOTE site reached over UDP at its `address`, where `rths-physical serve`\n"
              "must be listening. Either way the run ends with the monolithic reference and the error\n"
              "metrics of seed 002 (J_peak, J_RMS, rho, SD) against it.");
  cli.command("loopback", "CONFIG",
              "Single-site loopback: start one rths-physical process per REMOTE site on 127.0.0.1,\n"
              "run CONFIG in real time against them, and collect every node's output in one run folder.");
  cli.command("calibrate", "CONFIG",
              "Offline initialisation of every RLS compensator (seed 001 Eqs. 15-18): run the monolithic\n"
              "reference under the ground motion, impose each channel's interface motion open loop on\n"
              "its actuator plant (with specimen and sensor noise), and fit FF0 and P0 by least squares.\n"
              "Writes FILE, which a channel's controller { rls { calibration_path: \"FILE\" } } reads\n"
              "(relative to the config's folder). Default: the calibration_path the config names (when\n"
              "every rls channel names the same one), else calibration.textproto.");
  cli.command("campaign", "CONFIG",
              "Robustness campaign of a multi-axial site (the maRTHS benchmark, seed 000 §4.4): run CONFIG\n"
              "in virtual time once per perturbed actuator plant, the uncertainty seed of every site's\n"
              "actuator_plant set to --first-seed, --first-seed + 1, ... (--plants runs), and report each\n"
              "run's J1-J10 with their mean and standard deviation. Writes campaign.csv (a row per run,\n"
              "then mean and sd) and the config as run into the --out folder.");
  cli.command("plot", "RUN_DIR",
              "Draw the plots of a run folder as PNGs (gnuplot): the recorded DOFs of the hybrid run against\n"
              "the monolithic reference (all of a model recording up to 8; else those of interest, see --dof),\n"
              "each site channel's target and measured motion, tracking error, force-displacement loop and\n"
              "Smith model error, each multi-axial site's actuator strokes, each spring's loop and, for a\n"
              "real-time run, the step loop's lateness and compute histograms and each remote site's round\n"
              "trip; mm and mrad, kN and kN m by each DOF's kind. Writes NAME.png and the script NAME.gp\n"
              "that drew it (its data decimated to the picture) into --out (default RUN_DIR/plots).");
  cli.command("budget", "CONFIG",
              "Measure the numerical node's step for CONFIG on this machine before a test: its model and\n"
              "integrator stepped in virtual time (local sites inside the step, remote ones only as their\n"
              "packets), p50/p99/max compute over --steps steps after a warm-up, then the integrator alone.\n"
              "Says whether the p99 fits --share of the period and the largest rate at which it would.\n"
              "Exit 0 when it fits, 1 when it does not.");
  cli.command("model", "KIND",
              "Write a structural model of the example ladder into --out: KIND shear-building (--storeys N:\n"
              "a uniform shear building, its modes in closed form) or frame (--bays B --storeys S: a plane\n"
              "steel moment frame, 3 (B + 1) S DOFs). Writes mass.mtx and stiffness.mtx (Matrix Market),\n"
              "dofs.csv (the DOF map) and NAME.textproto, an experiment with one remote site, ready for\n"
              "run, loopback and budget (docs/models.md).");
  cli.command("keygen", "FILE",
              "Write a new random pre-shared site key to FILE (mode 0600; an existing file is never\n"
              "overwritten). Give the same file to the numerical node and to the site (over a channel you\n"
              "trust: scp, a USB stick) and name it in the site's key_file. Every packet of a real-time test\n"
              "is authenticated with keys derived from it in each handshake.");
  cli.flag("realtime", o.realtime, "(run) Wall clock and UDP instead of virtual time.").only_for({"run"});
  cli.path("out", "DIR", o.out, "Run folder (created). Default: runs/<config name>-<date>-<time>")
      .only_for({"run", "loopback", "campaign"});
  cli.path("out", "DIR", o.out, "(model) The folder of the model's files (created).")
      .only_for({"model"})
      .required_for({"model"});
  cli.path("out", "DIR", o.out, "(plot) The folder of the PNGs (created). Default RUN_DIR/plots.").only_for({"plot"});
  cli.repeated("dof", "NAME", o.plot_dofs,
               "(plot) Also draw the recorded DOF NAME against the reference (repeatable); `all`: every\n"
               "recorded DOF. Without it a run recording more than 8 DOFs draws its DOFs of interest: the\n"
               "sites' interface DOFs, the multi-axial sites' evaluation DOFs and the roof.")
      .only_for({"plot"});
  cli.whole("plants", "N", o.plants, {1, 100000, "a number of runs from 1"},
            "(campaign) Runs, one perturbed plant each. Default 100 (seed 001's campaign).")
      .only_for({"campaign"});
  cli.whole("first-seed", "S", o.first_seed, {1, 1000000000, "a seed from 1"},
            "(campaign) The first run's uncertainty seed. Default 1.")
      .only_for({"campaign"});
  cli.flag("noise-per-run", o.noise_per_run,
           "(campaign) Each run draws its own sensor noise, as the benchmark's package does for its\n"
           "uncertain runs: the run of seed S reads the noise of seed N + S, N the config's\n"
           "actuator_plant.noise.seed. Default: every run reads the config's noise, the runs differing\n"
           "by their plants alone.")
      .only_for({"campaign"});
  cli.whole("jobs", "J", o.jobs, {1, 256, "a number of runs at a time from 1"},
            "(campaign) Runs at a time. Default: one per core.")
      .only_for({"campaign"});
  cli.path("out", "FILE", o.out, "(calibrate) The calibration file to write (see calibrate).").only_for({"calibrate"});
  cli.whole("steps", "N", o.budget_steps, {64, 10000000, "a number of steps from 64"},
            "(budget) Steps timed (fewer when the run is shorter). Default 4096.")
      .only_for({"budget"});
  cli.number("share", "F", o.share, {0.0, 1.0, true, "a fraction above 0, at most 1"},
             "(budget) The share of the period the step may take; the rest is the network's, the\n"
             "operating system's and the host's stalls. Default 0.5.")
      .only_for({"budget"});
  cli.whole("storeys", "N", o.storeys, {1, 100000, "a number of storeys from 1"}, "(model) Storeys.")
      .only_for({"model"})
      .required_for({"model"});
  cli.whole("bays", "B", o.bays, {1, 10000, "a number of bays from 1"}, "(model frame) Bays.").only_for({"model"});
  cli.text("name", "NAME", o.name, "(model) The experiment's name and file. Default: the folder's name.")
      .only_for({"model"});
  cli.text("ground-motion", "FILE", o.ground_motion,
           "(model) The record the config names, as written (relative to --out, or absolute).\n"
           "Default ../../data/ground_motions/elcentro_1940_ns_g.dat, right for examples/models/NAME.")
      .only_for({"model"});
  cli.repeated("set", "PATH=VALUE", o.overrides,
               "Override one config field, e.g. --set ground_motion.scale=0.4,\n"
               "--set site[0].link.forward.delay_s=0.025, --set site[purdue].compensation.mode=NONE.\n"
               "Repeatable; applied in order before validation.")
      .only_for({"run", "loopback", "calibrate", "campaign", "budget"});
  rths::console_options(cli, o.telemetry,
                        "(real time) Publish telemetry to rths-console listening there (its --telemetry), and take\n"
                        "its stop button as SIGINT; loopback passes it to its sites. Default: none.",
                        {"run", "loopback"},
                        "(with --console) The console's key file, the one rths-console holds (its --key): seals\n"
                        "the telemetry and opens the console's stop request. Make it with `rths-numerical keygen`.",
                        "(real time) Telemetry datagrams per second and stream, from 1 to 1000. Default 50.");
  cli.flag("no-plots", o.no_plots,
           "(run, loopback) Do not draw the run's plots at its end (see plot); so does the\n"
           "environment variable RTHS_NO_PLOTS, for batches of runs (the test suite sets it).")
      .only_for({"run", "loopback"});
  cli.flag("quiet", o.quiet, "Print only errors (and no live status line).").alias("-q");
  cli.epilogue(R"(The run folder holds config.textproto (the config as run), numerical.csv, site_<name>.csv per remote
site, reference.csv, summary.json and run.log (loopback adds each site's .json and .log; a real-time
run timing.csv, its lateness, compute and round-trip histograms). The log and the CSVs are written
while the run goes on: a node that crashes loses at most its last second. `plot` draws them.

Exit codes: 0 completed; 1 failure; 2 bad command line or config (nothing run); 3 a site refused the
handshake (the differing field is named); 4 a site lost (no packet within realtime.peer_timeout_s);
5 a site aborted; 6 interrupted (SIGINT/SIGTERM, or rths-console's Stop); 7 a site never answered the
handshake; 8 stroke limit; 9 a non-finite or diverged value: the run stopped (summary.json and the
report name the step and time).
From 3 on, every site was told to hold and stop and the recordings hold every step up to the stop.
)");
  return cli;
}

void print_report(const rths::RunReport& r, const std::filesystem::path& out) {
  fmt::print("rths: {} — {} steps at {:g} Hz ({:.2f} s of {}) in {:.3f} s, reference {:.3f} s\n", r.name, r.steps,
             r.rate_hz, r.duration_s, r.ground_motion, r.run_time_s, r.reference_time_s);
  fmt::print("{:<16} {:>14} {:>14} {:>9} {:>9} {:>8} {:>13}\n", "response", "peak", "ref. peak", "J_peak %", "J_RMS %",
             "rho", "SD");
  for (const auto& [name, m] : r.responses) {
    // Each in its column's unit (a DOF's kind: mm or mrad; a channel's: N or N·m).
    const auto si = r.response_units.find(name);
    const rths::DisplayUnit unit = rths::display_unit(si != r.response_units.end() ? si->second : "");
    fmt::print("{:<16} {:>9.3f} {:<4} {:>9.3f} {:<4} {:>9.3f} {:>9.3f} {:>8.5f} {:>8.3f} {}\n", name,
               m.peak * unit.scale, unit.label, m.reference_peak * unit.scale, unit.label, m.j_peak_pct, m.j_rms_pct,
               m.rho, m.sd * unit.scale, unit.label);
  }
  for (const auto& s : r.sites) {
    for (std::size_t c = 0; c < s.tracking.size(); ++c) {
      const auto& t = s.tracking[c];
      if (t.j2_nrms_pct == 0.0) continue;  // an ideal actuator tracks exactly: nothing to say
      fmt::print("tracking {}{}: J1 {:.2f} ms, J2 {:.3f} %, J3 {:.3f} % (target against measured)\n", s.name,
                 s.tracking.size() == 1 ? "" : fmt::format("[{}]", c), t.j1_delay_ms, t.j2_nrms_pct, t.j3_peak_pct);
    }
  }
  for (const auto& s : r.sites) {
    if (s.local) {
      continue;
    }
    fmt::print("site {}: {} packets accepted, {} dropped, {} steps held at the numerical node", s.name,
               s.numerical_side.packets.accepted, s.numerical_side.packets.dropped(), s.numerical_side.held_steps);
    if (r.mode == rths::RunMode::kRealTime && s.timing.valid) {
      fmt::print("; round trip p50 {:.3f} ms p99 {:.3f} ms, loss {:.2f} %", s.timing.round_trip_p50_us / 1e3,
                 s.timing.round_trip_p99_us / 1e3, 100.0 * s.timing.loss_rate);
    }
    fmt::print("\n");
  }
  if (r.has_loop_stats) {
    fmt::print(
        "step loop: lateness p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us; {} late ticks; compute p99 {:.1f} us\n",
        static_cast<double>(r.loop.lateness.percentile(50)) / 1e3,
        static_cast<double>(r.loop.lateness.percentile(99)) / 1e3, static_cast<double>(r.loop.lateness.max_ns()) / 1e3,
        r.loop.late, static_cast<double>(r.loop.compute.percentile(99)) / 1e3);
  }
  if (r.exit_code != rths::kExitCompleted) {
    fmt::print("stopped: {}\n", r.stop_reason);
  }
  fmt::print("output: {}\n", out.string());
}

// The console's address must not be where a site takes the session's packets: telemetry sent there
// would be a stream of datagrams the site cannot open, and the console would hear nothing. (loopback
// gives its sites ports of their own.)
void check_console_address(const std::string& console, const rths::LoadedConfig& loaded) {
  if (console.empty()) return;
  const rths::HostPort at = rths::parse_host_port(console);
  for (int i = 0; i < loaded.experiment.site_size(); ++i) {
    const rths::config::Site& site = loaded.experiment.site(i);
    if (site.placement() != rths::config::REMOTE) continue;
    if (rths::same_endpoint(at, rths::parse_host_port(site.address()))) {
      throw rths::ConfigError(fmt::format(
          "--console: {} is site[{}]'s address ({}, \"{}\"), where its rths-physical takes the session's packets; "
          "expected the address rths-console listens on for telemetry (its --telemetry)",
          console, i, site.address(), site.name()));
    }
  }
}

// The --set of every calibrated channel that makes a run read `file` (absolute: relative paths in
// a config resolve against the config's folder, not the working one).
std::vector<std::string> calibration_overrides(const rths::config::RlsCalibration& calibration,
                                               const std::filesystem::path& file) {
  std::vector<std::string> sets;
  const std::string path = std::filesystem::absolute(file).lexically_normal().string();
  for (const auto& e : calibration.entry()) {
    sets.push_back(
        fmt::format("--set site[{}].channel[{}].controller.rls.calibration_path={}", e.site(), e.channel(), path));
  }
  return sets;
}

int calibrate(const std::filesystem::path& config, const Options& o) {
  {
    const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides, false);
    const std::filesystem::path file = o.out.empty() ? rths::default_calibration_file(loaded) : o.out;
    // Written aside and renamed, so a config never reads a half-written file. The place is tried
    // before the calibration runs: an installed example's folder is read-only.
    const std::filesystem::path tmp = file.string() + ".tmp";
    std::ofstream os(tmp);
    if (!os) {
      const std::string why = std::strerror(errno);
      throw rths::ConfigError(
          o.out.empty()
              ? fmt::format("{}: the calibration_path it names, {}, cannot be written ({}); expected a writable place: "
                            "rths-numerical calibrate {} --out FILE, then run with --set "
                            "site[NAME].channel[C].controller.rls.calibration_path=FILE (calibrate prints each)",
                            config.string(), file.string(), why, config.string())
              : fmt::format("--out: cannot write {} ({}); expected a file in a writable folder", file.string(), why));
    }
    rths::config::RlsCalibration calibration;
    try {
      calibration = rths::calibrate_rls(loaded);
    } catch (...) {
      os.close();
      std::filesystem::remove(tmp);
      throw;
    }
    os << rths::calibration_text(calibration, config.string());
    if (!os.flush()) throw std::runtime_error("cannot write " + tmp.string());
    os.close();
    std::filesystem::rename(tmp, file);
    if (!o.quiet) {
      for (const auto& e : calibration.entry()) {
        double sum = 0.0;
        for (const double f : e.ff()) sum += f;
        fmt::print("site {} channel {}: FF0 = [{}] (static gain {:.4f}) from {} samples\n", e.site(), e.channel(),
                   fmt::join(e.ff(), ", "), sum, e.samples());
      }
      fmt::print("written: {}\n", file.string());
      if (!o.out.empty() && std::filesystem::absolute(file).lexically_normal() !=
                                std::filesystem::absolute(rths::default_calibration_file(loaded)).lexically_normal()) {
        // Not where the config looks: say how a run reads it.
        fmt::print("run the config with it: {}\n", fmt::join(calibration_overrides(calibration, file), " "));
      }
    }
    return static_cast<int>(rths::kExitCompleted);
  }
}

void print_campaign(const rths::CampaignReport& r, const std::filesystem::path& out) {
  fmt::print("rths: campaign of {} plants in {:.1f} s\n", r.runs.size(), r.wall_time_s);
  for (std::size_t s = 0; s < r.sites.size(); ++s) {
    const rths::MarthsCriteria& m = r.mean[s];
    const rths::MarthsCriteria& sd = r.sd[s];
    const auto line = [&](const char* what, const std::vector<double> rths::MarthsCriteria::*field, const char* unit) {
      if ((m.*field).empty()) return;
      fmt::print("  {:<26}", what);
      for (std::size_t i = 0; i < (m.*field).size(); ++i) {
        fmt::print(" {:>8.3f} ± {:<6.3f}", (m.*field)[i], (sd.*field)[i]);
      }
      fmt::print(" {}\n", unit);
    };
    fmt::print("site {}: mean ± sd over the runs\n", r.sites[s]);
    line("J1 delay (actuators)", &rths::MarthsCriteria::j1_delay_ms, "ms");
    line("J2 tracking NRMS", &rths::MarthsCriteria::j2_nrms_pct, "%");
    line("J3 tracking peak", &rths::MarthsCriteria::j3_peak_pct, "%");
    line("J4 estimate delay", &rths::MarthsCriteria::j4_delay_ms, "ms");
    line("J5 interface NRMS (x, th)", &rths::MarthsCriteria::j5_nrms_pct, "%");
    line("J6 interface peak", &rths::MarthsCriteria::j6_peak_pct, "%");
    line("J7 vs reference NRMS", &rths::MarthsCriteria::j7_nrms_pct, "%");
    line("J8 upper storeys NRMS", &rths::MarthsCriteria::j8_nrms_pct, "%");
    line("J9 vs reference peak", &rths::MarthsCriteria::j9_peak_pct, "%");
    line("J10 upper storeys peak", &rths::MarthsCriteria::j10_peak_pct, "%");
  }
  for (const auto& run : r.runs) {
    if (run.exit_code != rths::kExitCompleted)
      fmt::print("seed {}: exit {}: {}\n", run.seed, run.exit_code, run.stop_reason);
  }
  fmt::print("output: {}\n", out.string());
}

int campaign(const std::filesystem::path& config, const Options& o, const std::filesystem::path& out) {
  {
    const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides);
    rths::CampaignOptions options;
    options.plants = static_cast<std::uint64_t>(o.plants);
    options.first_seed = static_cast<std::uint64_t>(o.first_seed);
    options.jobs = o.jobs > 0 ? static_cast<unsigned>(o.jobs) : std::max(1U, std::thread::hardware_concurrency());
    options.noise_per_run = o.noise_per_run;
    spdlog::info("campaign of {}: {} plants from seed {}, {} at a time, {}", config.string(), options.plants,
                 options.first_seed, options.jobs,
                 options.noise_per_run ? "each run its own sensor noise (the config's noise seed + the run's seed)"
                                       : "every run the config's sensor noise");
    const rths::CampaignReport report = rths::run_campaign(loaded, options, [&](std::uint64_t done, std::uint64_t all) {
      if (!o.quiet && (done % 10 == 0 || done == all)) spdlog::info("{} of {} runs done", done, all);
    });
    {
      std::ofstream csv(out / "campaign.csv");
      csv << rths::campaign_csv(report);
      std::ofstream cfg(out / "config.textproto");
      cfg << rths::to_text(loaded.experiment);
      if (!csv.flush() || !cfg.flush()) throw std::runtime_error("cannot write into " + out.string());
    }
    if (!o.quiet) print_campaign(report, out);
    if (report.exit_code != rths::kExitCompleted) {
      spdlog::error("the campaign is not a success: {} (campaign.csv)", report.failure);
    }
    return report.exit_code;
  }
}

int plot(const std::filesystem::path& run_dir, const Options& o) {
  rths::RunPlots plots;
  try {
    plots = rths::plot_run(run_dir, o.out.empty() ? run_dir / "plots" : o.out, {o.plot_dofs});
  } catch (const std::invalid_argument& e) {
    throw rths::ConfigError(e.what());
  }
  const auto& c = plots.count;
  if (c.made < plots.names.size()) {
    spdlog::error("{} of {} plots not drawn (gnuplot missing or failed: see above)", plots.names.size() - c.made,
                  plots.names.size());
    return rths::kExitFailure;
  }
  if (!o.quiet) {
    fmt::print("rths: {} plots in {}\n", c.made, (o.out.empty() ? run_dir / "plots" : o.out).string());
  }
  return rths::kExitCompleted;
}

// The plots of a finished run (rths-numerical plot): a run's outcome does not depend on them, so a
// plot that could not be drawn is a warning.
void draw_plots(const std::filesystem::path& out, bool quiet) {
  try {
    const rths::RunPlots plots = rths::plot_run(out, out / "plots");
    if (plots.count.made < plots.names.size()) {
      spdlog::warn("{} of {} plots not drawn (gnuplot missing or failed): rths-numerical plot {} retries",
                   plots.names.size() - plots.count.made, plots.names.size(), out.string());
    } else if (!quiet) {
      fmt::print("plots: {} in {}\n", plots.count.made, (out / "plots").string());
    }
  } catch (const std::exception& e) {
    spdlog::warn("plots not drawn: {}", e.what());
  }
}

int budget(const std::filesystem::path& config, const Options& o) {
  try {
    const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides);
    rths::BudgetOptions options;
    options.steps = o.budget_steps;
    options.share = o.share;
    const bool live = !o.quiet && isatty(STDERR_FILENO) != 0;
    const rths::BudgetReport report =
        rths::measure_budget(loaded, options, [live](std::int64_t done, std::int64_t total) {
          if (live)
            std::fprintf(stderr, "\rbudget: %lld of %lld steps timed", static_cast<long long>(done),
                         static_cast<long long>(total));
        });
    if (live) std::fprintf(stderr, "\r%60s\r", "");
    fmt::print("{}", rths::format_budget(report, o.share));
    return report.fits ? rths::kExitCompleted : rths::kExitFailure;
  } catch (const rths::ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("budget failed: {}", e.what()));
  }
}

int model(const std::string& kind, const Options& o) {
  {
    rths::GeneratedModel generated;
    std::string command;
    if (kind == "shear-building") {
      generated = rths::shear_building(static_cast<std::uint32_t>(o.storeys));
      command = fmt::format("rths-numerical model shear-building --storeys {}", o.storeys);
    } else if (kind == "frame") {
      if (o.bays < 1) throw rths::ConfigError("--bays: missing; expected the number of bays of the frame");
      generated = rths::plane_frame(static_cast<std::uint32_t>(o.bays), static_cast<std::uint32_t>(o.storeys));
      command = fmt::format("rths-numerical model frame --bays {} --storeys {}", o.bays, o.storeys);
    } else {
      throw rths::ConfigError(fmt::format("model: unknown kind \"{}\"; expected shear-building or frame", kind));
    }
    // The folder's own name, also when --out ends with a slash (whose filename() is empty).
    const std::filesystem::path folder = std::filesystem::absolute(o.out).lexically_normal();
    const std::string name =
        !o.name.empty() ? o.name
                        : (folder.has_filename() ? folder.filename() : folder.parent_path().filename()).string();
    rths::write_model(generated, o.out, name, o.ground_motion, command);
    if (!o.quiet) {
      fmt::print("written: {} ({}) in {}: mass.mtx, stiffness.mtx, dofs.csv, {}.textproto\n", name,
                 generated.description, o.out.string(), name);
    }
    return rths::kExitCompleted;
  }
}

int keygen(const std::filesystem::path& file, bool quiet) {
  rths::write_key_file(file);
  if (!quiet) {
    fmt::print(
        "written: {} (mode 0600). Copy it to the site over a channel you trust and name it in the site's "
        "key_file at both ends.\n",
        file.string());
  }
  return rths::kExitCompleted;
}

// `run` and `loopback`: the experiment in virtual or real time, its outputs, report and plots.
int run_experiment(const std::string& command, const std::filesystem::path& config, Options& o,
                   const std::filesystem::path& out, const std::atomic<bool>& stop) {
  int code = rths::kExitCompleted;
  try {
    rths::load_telemetry_key(o.telemetry);
    rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides);
    spdlog::info("config {} loaded ({} override(s))", config.string(), o.overrides.size());
    std::unique_ptr<rths::LoopbackSites> sites;
    const bool realtime = o.realtime || command == "loopback";
    if (o.realtime) check_console_address(o.telemetry.console, loaded);
    if (command == "loopback") {
      // Nothing is started for a run that cannot start: the site processes come after these checks.
      rths::Experiment::check_before_start(loaded, rths::RunMode::kRealTime);
      // The sites get the same file and overrides, so both ends derive the same terms.
      sites = std::make_unique<rths::LoopbackSites>(config, o.overrides, out, o.telemetry);
      sites->start(loaded.experiment);
    }
    rths::Experiment experiment(loaded, realtime ? rths::RunMode::kRealTime : rths::RunMode::kVirtualTime);
    spdlog::info("{}: {} steps at {} Hz, {} site(s), {}", experiment.report().name, experiment.steps(),
                 loaded.experiment.rate_hz(), loaded.experiment.site_size(), realtime ? "real time" : "virtual time");
    experiment.stream_outputs(out);  // before the run: the records reach the disk while it goes on
    if (!o.telemetry.console.empty()) {
      if (!realtime) {
        throw rths::ConfigError("--console: telemetry is for real-time runs (--realtime or loopback)");
      }
      experiment.set_telemetry(o.telemetry, [] { rths::request_stop(); });
    }
    const rths::RunReport& report = realtime ? experiment.run_realtime(stop, !o.quiet) : experiment.run();
    // A real-time stop is logged as it happens; what ended a virtual-time run, or metrics that made a
    // run fail after it ended (no stop step), is logged here, once.
    if (report.exit_code != rths::kExitCompleted &&
        (!realtime || (report.exit_code == rths::kExitNonFinite && report.stop_step < 0))) {
      spdlog::error("{}", report.stop_reason);
    }
    experiment.write_outputs(out);
    code = report.exit_code;
    if (sites) {
      const int site_code = sites->wait();
      code = code == rths::kExitCompleted ? site_code : code;
    }
    spdlog::info("outputs written to {}", out.string());
    if (!o.quiet) {
      print_report(report, out);
    }
    if (!o.no_plots && std::getenv("RTHS_NO_PLOTS") == nullptr) {
      draw_plots(out, o.quiet);
    }
  } catch (const rths::ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("run failed: {}", e.what()));
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  return rths::run_program(argc, argv, cli, [&o](const rths::CommandLine& line) -> rths::ProgramRun {
    const std::string& command = line.command();
    const std::filesystem::path operand = line.operands().front();
    // The commands that print, or write one file, log errors to stderr alone.
    if (command == "calibrate") {
      return rths::ProgramRun([&o, operand](const auto&) { return calibrate(operand, o); }).quiet(o.quiet);
    }
    if (command == "keygen") {
      return rths::ProgramRun([&o, operand](const auto&) { return keygen(operand, o.quiet); }).quiet(o.quiet);
    }
    if (command == "budget") {
      return rths::ProgramRun([&o, operand](const auto&) { return budget(operand, o); }).quiet(o.quiet);
    }
    if (command == "model") {
      return rths::ProgramRun([&o, operand](const auto&) { return model(operand.string(), o); }).quiet(o.quiet);
    }
    if (command == "plot") {
      return rths::ProgramRun([&o, operand](const auto&) { return plot(operand, o); }).quiet(o.quiet);
    }
    if (command == "campaign") {
      const auto out = o.out.empty() ? rths::default_run_folder(operand, "-campaign") : o.out;
      return rths::ProgramRun([&o, operand, out](const auto&) { return campaign(operand, o, out); })
          .log_to(out, "campaign.log")
          .quiet(o.quiet);
    }
    const auto out = o.out.empty() ? rths::default_run_folder(operand) : o.out;
    return rths::ProgramRun(
               [&o, command, operand, out](const auto& stop) { return run_experiment(command, operand, o, out, stop); })
        .log_to(out, "run.log")
        .quiet(o.quiet)
        .stop_on_signals();
  });
}
