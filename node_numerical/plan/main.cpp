// rths-plan: how much delay an experiment's partition can stand, before two labs book their
// actuators (docs/stability.md). Seed 004's stability switch criterion on each remote site's SDOF
// partition per mode, the loop its Smith predictor leaves against the prediction model's error, and
// the round-trip budget; diagrams as gnuplot scripts and PNGs. Thin (STYLE): parse, plan, print.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/config/config.hpp"
#include "common/core/command_line.hpp"
#include "common/core/exit_codes.hpp"
#include "common/dynamics/stability_switch.hpp"
#include "common/program/program.hpp"
#include "node_numerical/structure/stability_plan.hpp"
#include "node_numerical/study/plots.hpp"

namespace {

namespace fs = std::filesystem;
using rths::stability::Partition;

// The model errors the table prints (relative to the specimen), and the diagram's range and step.
constexpr std::array<double, 11> kTableErrors{-2.0, -1.5, -1.0, -0.5, -0.3, -0.1, 0.1, 0.3, 0.5, 1.0, 1.5};
constexpr double kDiagramErrorMax = 2.0;
constexpr double kDiagramErrorStep = 0.02;
constexpr double kGammaStep = 0.0025;
// The diagrams' damping ratios, as multiples of the mode's own (seed 004 Fig. 7 draws several).
constexpr std::array<double, 4> kZetaFactors{0.5, 1.0, 2.0, 4.0};

struct Options {
  int modes = 0;
  double model_error = 0.3;
  double transfer_delay_s = 0.0;
  std::optional<double> rate_hz;
  std::optional<double> round_trip_s;
  fs::path out;
  std::vector<std::string> overrides;
  // The "sdof" command.
  double alpha = -1.0;
  double beta = -1.0;
  double gamma = -1.0;
  double zeta = 0.0;
  double omega_n = 0.0;
};

rths::CommandLine command_line(Options& o) {
  rths::CommandLine cli("rths-plan", "stability planning before a test: critical delays and the delay budget");
  cli.command("", "[CONFIG]",
              "Plan every remote site of an experiment config, mode by mode; without CONFIG, the SDOF\n"
              "partition given by --alpha --beta --gamma --zeta --omega-n.");
  cli.description(R"(Seed 004's stability switch criterion (Maghareh, Dyke, Prakash & Rhoads 2014) for each remote
site and mode: the partition's critical delay tau_cr (the smallest feedback delay at which the test
goes unstable; "delay-independent" when none), its stable delay windows, the band of gamma where no
delay destabilises, and the round-trip budget tau_cr - 1/(2 f_s) - the transfer system's delay
(seed 004 Eq. 32). With a Smith predictor only the prediction model's error comes back delayed: the
plan gives that loop's critical delay at the config's own model and against a model error e (the
model (1 + e) times the specimen). docs/stability.md derives the reduction and states its limits.)");
  cli.whole("modes", "N", o.modes, {0, 1000, "a number of modes"},
            "Plan the lowest N modes of the reference structure (default 0: all).");
  cli.number("model-error", "E", o.model_error, {0.0, 10.0, false, "a relative model error"},
             "The model error the budget verdict is planned for, both signs (default 0.3: the\n"
             "prediction model may be 30 % off either way).");
  cli.number("transfer-delay-s", "S", o.transfer_delay_s, {0.0, 10.0, false, "a time in seconds"},
             "The transfer system's own delay (an actuator's lag after its controller) counted\n"
             "against the budget (default 0).");
  cli.option(
      "rate", "HZ",
      [&o](const std::string& v) {
        o.rate_hz = rths::parse_number(v, {1.0, 1e6, false, "a rate in Hz"});
      },
      "The sampling rate whose zero-order hold delays the force by 1/(2 f_s). Default: the\n"
      "config's rate_hz (sdof: 1024).");
  cli.option(
      "round-trip-s", "S",
      [&o](const std::string& v) {
        o.round_trip_s = rths::parse_number(v, {0.0, 100.0, false, "a time in seconds"});
      },
      "The network round trip to check against the budget. Default: each site's link delays\n"
      "(forward + backward delay_s; sdof: 0).");
  cli.number("alpha", "A", o.alpha, {0.0, 1.0, false, "a share"}, "Without CONFIG: the numerical share of the mass.");
  cli.number("beta", "B", o.beta, {0.0, 1.0, false, "a share"}, "Without CONFIG: the numerical share of the damping.");
  cli.number("gamma", "G", o.gamma, {0.0, 1.0, false, "a share"},
             "Without CONFIG: the numerical share of the stiffness.");
  cli.number("zeta", "Z", o.zeta, {0.0, 10.0, true, "a damping ratio"},
             "Without CONFIG: the reference structure's damping ratio (above 0).");
  cli.number("omega-n", "RAD_PER_S", o.omega_n, {0.0, 1e6, true, "a frequency in rad/s"},
             "Without CONFIG: the reference structure's natural frequency (rad/s).");
  cli.path("out", "DIR", o.out,
           "Write the diagrams there: per site and mode the critical delay against gamma for\n"
           "several damping ratios (seed 004 Fig. 7), per site the round-trip budget against\n"
           "the model error; each as NAME.dat, NAME.gp and (with gnuplot) NAME.png.");
  cli.repeated("set", "PATH=VALUE", o.overrides, "Override a config field (as rths-numerical --set).");
  cli.epilogue(R"(Exit codes: 0 planned (whatever the verdict: the plan says it); 2 bad command line or config.
)");
  return cli;
}

std::string ms(double seconds) {
  return std::isfinite(seconds) ? fmt::format("{:.2f} ms", seconds * 1e3) : std::string("delay-independent");
}

std::string verdict(double budget_s, double round_trip_s) {
  if (!std::isfinite(budget_s)) return "stable at any round trip";
  if (budget_s <= 0.0) return "NO BUDGET: unstable whatever the network";
  return round_trip_s < budget_s ? fmt::format("round trip {:.2f} ms within it (margin {:.2f} ms)", round_trip_s * 1e3,
                                               (budget_s - round_trip_s) * 1e3)
                                 : fmt::format("round trip {:.2f} ms BEYOND it by {:.2f} ms", round_trip_s * 1e3,
                                               (round_trip_s - budget_s) * 1e3);
}

// The partition's criterion in a few lines (indented).
void print_partition(const char* title, const Partition& p, double rate_hz, double transfer_s, double round_trip_s) {
  const rths::stability::Stability s = rths::stability::analyse(p);
  std::printf("    %s: alpha %.4f, beta %.4f, gamma %.4f\n", title, p.alpha, p.beta, p.gamma);
  if (s.neutral_unstable) {
    std::printf("      unstable at every delay: the delayed inertia exceeds the undelayed one (alpha < 0.5)\n");
    return;
  }
  if (s.delay_independent) {
    std::printf("      no critical frequency (seed 004 Eq. 25): stable at every delay\n");
    return;
  }
  // The crossing whose first switch is the critical one.
  const auto first = std::min_element(s.crossings.begin(), s.crossings.end(), [](const auto& a, const auto& b) {
    return a.theta_rad / a.phi < b.theta_rad / b.phi;
  });
  std::printf("      critical delay %s (Omega_cr %.6g, at %.4f omega_n)", ms(s.tau_cr_s).c_str(), s.omega_cr,
              first->phi);
  if (s.stable.size() > 1) {
    std::printf("; stable again for Omega in");
    for (std::size_t i = 1; i < s.stable.size(); ++i) {
      // The last window may run on past the switches listed (up to Omega 20): "and beyond".
      const bool open = i + 1 == s.stable.size() && s.switches.back().omega <= s.stable[i].from_omega;
      std::printf(" (%.4g, %s)", s.stable[i].from_omega,
                  open ? "and beyond" : fmt::format("{:.4g}", s.stable[i].to_omega).c_str());
    }
  }
  std::printf("\n");
  const double budget = rths::stability::allowable_transfer_delay_s(s.tau_cr_s, transfer_s, rate_hz);
  std::printf("      round-trip budget %s: %s\n", ms(budget).c_str(), verdict(budget, round_trip_s).c_str());
}

void write(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out) throw rths::ConfigError(fmt::format("cannot write {}", file.string()));
}

std::string number_or_nan(double v) {
  return std::isfinite(v) ? fmt::format("{:.10g}", v) : std::string("NaN");
}

// Seed 004 Fig. 7 for one partition's alpha and beta: Omega_cr against gamma, several zeta; the
// partition's own point at the configured round trip.
std::string stability_diagram(const std::string& name, const std::string& title, const Partition& p,
                              double omega_at_round_trip, const fs::path& dir) {
  std::string dat = "# gamma, then Omega_cr = tau_cr omega_n for each zeta (NaN: no critical delay)\n";
  const auto points = static_cast<int>(std::lround(1.0 / kGammaStep));
  for (int i = 0; i <= points; ++i) {
    const double g = i * kGammaStep;
    dat += number_or_nan(g);
    for (const double f : kZetaFactors) {
      Partition q = p;
      q.gamma = g;
      q.zeta = f * p.zeta;
      dat += ' ';
      dat += number_or_nan(rths::stability::analyse(q).omega_cr);
    }
    dat += "\n";
  }
  write(dir / (name + ".dat"), dat);
  std::string gp = fmt::format(
      "# rths-plan: {0}.png from {0}.dat (gnuplot {0}.gp in this folder)\n"
      "set terminal pngcairo size 900,600\nset output '{0}.png'\nset title {1}\n"
      "set xlabel 'gamma (numerical share of the stiffness)'\nset ylabel 'Omega_{{cr}} = tau_{{cr}} omega_n'\n"
      "set yrange [0:*]\nset grid\nset key top left\nplot ",
      name, rths::gp_quote(title));
  for (std::size_t i = 0; i < kZetaFactors.size(); ++i) {
    gp += fmt::format("'{}.dat' using 1:{} with lines lw 2 title 'zeta {:.2f} %', ", name, i + 2,
                      100.0 * kZetaFactors[i] * p.zeta);
  }
  gp += fmt::format("'-' with points pt 7 ps 1.5 title 'this partition at the round trip'\n{} {}\ne\n",
                    number_or_nan(p.gamma), number_or_nan(omega_at_round_trip));
  write(dir / (name + ".gp"), gp);
  return name;
}

// The round-trip budget against the model error: the whole loop's, and each mode's single-mode
// estimate (dashed); the configured round trip.
std::string budget_diagram(const rths::config::Experiment& e, const std::string& site,
                           const std::vector<rths::plan::SiteMode>& modes, double transfer_s, double round_trip_s,
                           const fs::path& dir) {
  std::string name = "budget_" + rths::study::file_word(site);
  const double rate_hz = e.rate_hz();
  std::string dat =
      "# model error e (%), the whole loop's round-trip budget (ms), then each mode's single-mode estimate (ms); NaN: "
      "stable at any delay\n";
  std::vector<const rths::plan::SiteMode*> mine;
  for (const auto& m : modes) {
    if (m.site == site) mine.push_back(&m);
  }
  const int steps = static_cast<int>(std::lround(2.0 * kDiagramErrorMax / kDiagramErrorStep));
  for (int i = 0; i <= steps; ++i) {
    const double err = -kDiagramErrorMax + kDiagramErrorStep * i;
    dat += number_or_nan(100.0 * err);
    dat += ' ';
    dat += number_or_nan(
        rths::plan::round_trip_budget_s(rths::plan::critical_loop_delay(e, site, err), rate_hz, transfer_s) * 1e3);
    for (const auto* m : mine) {
      const double budget = rths::plan::round_trip_budget_s(rths::plan::smith_loop_at(*m, err), rate_hz, transfer_s);
      dat += ' ';
      dat += number_or_nan(budget * 1e3);
    }
    dat += "\n";
  }
  write(dir / (name + ".dat"), dat);
  std::string gp = fmt::format(
      "# rths-plan: {0}.png from {0}.dat (gnuplot {0}.gp in this folder)\n"
      "set terminal pngcairo size 900,600\nset output '{0}.png'\n"
      "set title {1}\nset xlabel 'model error e (%): the model is (1 + e) times the specimen'\n"
      "set ylabel 'round-trip budget (ms)'\nset yrange [0:*]\nset grid\nset key top right\n"
      "plot '{0}.dat' using 1:2 with lines lw 3 lc rgb 'black' title 'whole loop', ",
      name,
      rths::gp_quote(fmt::format("site {}: the Smith loop's round-trip budget (no line: stable at any delay)", site)));
  for (std::size_t i = 0; i < mine.size(); ++i) {
    gp += fmt::format("'{}.dat' using 1:{} with lines dt 2 lw 2 title 'mode {} alone (seed 004 partition)', ", name,
                      i + 3, mine[i]->mode);
  }
  gp += fmt::format("{:.10g} with lines dt 3 lc rgb 'red' title 'configured round trip'\n", round_trip_s * 1e3);
  write(dir / (name + ".gp"), gp);
  return name;
}

double site_round_trip_s(const rths::config::Site& site) {
  return site.link().forward().delay_s() + site.link().backward().delay_s();
}

int plan_config(const fs::path& config, const Options& o) {
  const rths::LoadedConfig loaded = rths::load_experiment(config, o.overrides, /*resolve_calibration_files=*/false);
  rths::config::Experiment e = loaded.experiment;
  if (o.rate_hz) e.set_rate_hz(*o.rate_hz);
  const auto dofs = static_cast<int>(e.structure().dofs());
  if (o.modes > dofs) {
    throw rths::ConfigError(fmt::format("--modes: is {}, but the structure of {} has {} mode{} ({} DOF{})", o.modes,
                                        config.string(), dofs, dofs == 1 ? "" : "s", dofs, dofs == 1 ? "" : "s"));
  }
  std::vector<rths::plan::SiteMode> modes;
  try {
    modes = rths::plan::reduce(e, o.modes);
  } catch (const std::invalid_argument& error) {
    throw rths::ConfigError(fmt::format("{}: {}", config.string(), error.what()));
  }
  if (modes.empty()) {
    throw rths::ConfigError(
        fmt::format("{}: no REMOTE site: nothing delays a force (LOCAL sites run in the numerical node's process)",
                    config.string()));
  }
  const double rate_hz = e.rate_hz();
  std::printf("rths-plan: %s, %g Hz (zero-order hold %.3f ms), transfer-system delay %.3f ms\n", e.name().c_str(),
              rate_hz, rths::stability::zero_order_hold_delay_s(rate_hz) * 1e3, o.transfer_delay_s * 1e3);
  if (!o.out.empty()) fs::create_directories(o.out);
  std::vector<std::string> scripts;
  for (const rths::config::Site& site : e.site()) {
    if (site.placement() != rths::config::REMOTE) continue;
    const double round_trip = o.round_trip_s.value_or(site_round_trip_s(site));
    std::printf("\nsite %s (%s, round trip %.2f ms)\n", site.name().c_str(),
                rths::config::CompensationMode_Name(site.compensation().mode()).c_str(), round_trip * 1e3);
    const auto loop_line = [&](const char* title, const rths::plan::LoopCritical& c) {
      const double budget = rths::plan::round_trip_budget_s(c, rate_hz, o.transfer_delay_s);
      std::printf("    %s: %s\n", title,
                  std::isfinite(c.tau_cr_s)
                      ? fmt::format("critical delay {} (roots cross at {:.4f} rad/s); round-trip budget {}: {}",
                                    ms(c.tau_cr_s), c.omega_rad_s, ms(budget), verdict(budget, round_trip))
                            .c_str()
                      : "stable at any delay");
    };
    std::printf("  the whole loop (every DOF):\n");
    loop_line("without compensation", rths::plan::critical_loop_delay(e, site.name(), -1.0));
    const bool smith = site.compensation().mode() != rths::config::NONE;
    if (smith) {
      loop_line("Smith loop with the config's model", rths::plan::critical_loop_delay(e, site.name()));
      std::printf("    Smith loop against the model error e, round-trip budget:\n     ");
      for (const double err : kTableErrors) {
        const double b = rths::plan::round_trip_budget_s(rths::plan::critical_loop_delay(e, site.name(), err), rate_hz,
                                                         o.transfer_delay_s);
        std::printf(" %+.0f%%: %s", 100.0 * err, std::isfinite(b) ? fmt::format("{:.1f} ms", b * 1e3).c_str() : "any");
      }
      std::printf("\n");
    }
    for (const auto& m : modes) {
      if (m.site != site.name()) continue;
      const Partition& r = m.reference;
      std::printf("  mode %d alone (seed 004's SDOF partition; an estimate: it drops the coupling of the modes):\n",
                  m.mode);
      std::printf("    omega_n %.4f rad/s (%.4f Hz), zeta %.3f %%\n", r.omega_n_rad_per_s,
                  r.omega_n_rad_per_s / (2.0 * std::numbers::pi), 100.0 * r.zeta);
      print_partition("without compensation", r, rate_hz, o.transfer_delay_s, round_trip);
      if (const auto band = rths::stability::delay_independent_gamma_band(r.alpha, r.beta, r.zeta)) {
        std::printf("      stable at every delay for gamma in (%.4f, %.4f) (seed 004 Eq. 29)\n", band->low, band->high);
      }
      if (m.smith) {
        print_partition(fmt::format("Smith loop with the config's model (off by {:.1f} % of the specimen's dynamic "
                                    "stiffness at this mode)",
                                    100.0 * std::abs(m.model_error))
                            .c_str(),
                        m.loop, rate_hz, o.transfer_delay_s, round_trip);
      }
      if (!o.out.empty()) {
        const double omega =
            (round_trip + rths::stability::zero_order_hold_delay_s(rate_hz) + o.transfer_delay_s) * r.omega_n_rad_per_s;
        scripts.push_back(
            stability_diagram(fmt::format("stability_{}_mode{}", rths::study::file_word(site.name()), m.mode),
                              fmt::format("site {}, mode {}: critical delay against gamma (alpha {:.3f}, beta {:.3f})",
                                          site.name(), m.mode, r.alpha, r.beta),
                              r, omega, o.out));
      }
    }
    const rths::plan::SiteBudget b = rths::plan::smith_budget(e, site.name(), o.model_error, o.transfer_delay_s);
    std::printf("  verdict for a model error of +-%.0f %%: round-trip budget %s%s: %s\n", 100.0 * o.model_error,
                ms(b.round_trip_budget_s).c_str(),
                b.limiting_mode > 0 ? fmt::format(" (mode {})", b.limiting_mode).c_str() : "",
                verdict(b.round_trip_budget_s, round_trip).c_str());
    if (!o.out.empty()) {
      scripts.push_back(budget_diagram(e, site.name(), modes, o.transfer_delay_s, round_trip, o.out));
    }
  }
  if (!o.out.empty()) {
    const rths::PlotCount plots = rths::render_plots(o.out, scripts);
    std::printf("\ndiagrams: %zu scripts, %zu PNG in %s\n", scripts.size(), plots.made, o.out.string().c_str());
  }
  return rths::kExitCompleted;
}

int plan_sdof(const Options& o) {
  const Partition p{o.alpha, o.beta, o.gamma, o.zeta, o.omega_n};
  const double rate_hz = o.rate_hz.value_or(1024.0);
  const double round_trip = o.round_trip_s.value_or(0.0);
  std::printf("rths-plan: SDOF partition, omega_n %.4f rad/s, zeta %.3f %%, %g Hz (zero-order hold %.3f ms)\n",
              p.omega_n_rad_per_s, 100.0 * p.zeta, rate_hz, rths::stability::zero_order_hold_delay_s(rate_hz) * 1e3);
  print_partition("partition", p, rate_hz, o.transfer_delay_s, round_trip);
  if (const auto band = rths::stability::delay_independent_gamma_band(p.alpha, p.beta, p.zeta)) {
    std::printf("      stable at every delay for gamma in (%.4f, %.4f) (seed 004 Eq. 29)\n", band->low, band->high);
  }
  if (!o.out.empty()) {
    fs::create_directories(o.out);
    const double omega =
        (round_trip + rths::stability::zero_order_hold_delay_s(rate_hz) + o.transfer_delay_s) * p.omega_n_rad_per_s;
    const std::vector<std::string> scripts{stability_diagram(
        "stability_sdof", fmt::format("critical delay against gamma (alpha {:.3f}, beta {:.3f})", p.alpha, p.beta), p,
        omega, o.out)};
    const rths::PlotCount plots = rths::render_plots(o.out, scripts);
    std::printf("\ndiagrams: 1 script, %zu PNG in %s\n", plots.made, o.out.string().c_str());
  }
  return rths::kExitCompleted;
}

// CONFIG, or a hand-entered partition: one of the two, whole. Throws UsageError otherwise.
void check_one_of_the_two(const rths::CommandLine& cli) {
  const std::vector<std::string> partition{"alpha", "beta", "gamma", "zeta", "omega-n"};
  const auto given = std::count_if(partition.begin(), partition.end(), [&](const auto& n) { return cli.given(n); });
  const bool config = !cli.operands().empty();
  if (config && given > 0) {
    throw rths::UsageError(
        "CONFIG and --alpha/--beta/--gamma/--zeta/--omega-n: expected one of the two (a config's partitions "
        "come from its structure)");
  }
  if (config) return;
  if (given == 0) {
    throw rths::UsageError("expected CONFIG, or a partition: --alpha --beta --gamma --zeta --omega-n");
  }
  std::string problem;
  for (const auto& n : partition) {
    if (!cli.given(n)) {
      problem = fmt::format("--{}: missing; a partition needs all of --alpha --beta --gamma --zeta --omega-n", n);
      break;
    }
  }
  for (const std::string n : {"modes", "model-error", "set"}) {
    if (cli.given(n)) problem = fmt::format("--{}: plans a CONFIG, not a hand-entered partition", n);
  }
  if (!problem.empty()) throw rths::UsageError(problem);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  rths::CommandLine cli = command_line(o);
  return rths::run_program(argc, argv, cli, [&o](const rths::CommandLine& line) {
    check_one_of_the_two(line);
    const std::vector<std::string>& config = line.operands();
    return rths::ProgramRun(
               [&o, config](const auto&) { return config.empty() ? plan_sdof(o) : plan_config(config.front(), o); })
        .log_to(o.out, "plan.log");
  });
}
