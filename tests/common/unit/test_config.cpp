// The experiment loader: a good config loads, and every bad one is answered with the file, the
// line, the field and what was expected (STYLE.md, "Errors that teach").
#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/config.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_config {
namespace {

// Two storeys; an MR damper between the ground and floor 1 behind a link, and a spring between
// the floors in the numerical node's process. Bouc-Wen values after Spencer et al. (1997), SI.
// (Delimiter "txt", not "pb": clang-format would re-indent a "pb" raw string as text proto.)
constexpr std::string_view kValid = R"txt(# test experiment
name: "two_storey"
rate_hz: 1024
duration_s: 10
structure {
  dofs: 2
  mass_kg: [1000, 0, 0, 1000]
  stiffness_n_per_m: [2e6, -1e6, -1e6, 1e6]
  rayleigh { mode_a: 1 zeta_a: 0.02 mode_b: 2 zeta_b: 0.02 }
  dof_name: ["x1", "x2"]
}
ground_motion {
  record { path: "elcentro.txt" format: TWO_COLUMN unit: G }
  scale: 0.2
}
site {
  name: "purdue"
  influence: [-1, 0]
  channel {
    specimen {
      bouc_wen {
        alpha_a_n_per_m: 14000
        alpha_b_n_per_m_v: 69500
        c0a_ns_per_m: 2100
        c0b_ns_per_m_v: 3500
        c1a_ns_per_m: 283000
        c1b_ns_per_m_v: 2950000
        k0_n_per_m: 4690
        k1_n_per_m: 500
        x0_m: 0.143
        gamma_per_m2: 3.63e6
        beta_per_m2: 3.63e6
        a: 301
        n: 2
        eta_per_s: 190
      }
    }
  }
  compensation { mode: MODIFIED_SMITH }
  link {
    forward { delay_s: 0.02 jitter_s: 0.001 }
    backward { delay_s: 0.02 }
  }
}
site {
  name: "spring_lab"
  placement: LOCAL
  influence: [1, -1]
  channel { specimen { spring { stiffness_n_per_m: 1e5 } } }
}
)txt";

constexpr const char* kSource = "case.textproto";

// `text` with its first `from` replaced by `to` (which must be there: a typo fails the test).
std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
  std::string out(text);
  const auto at = out.find(from);
  EXPECT_NE(at, std::string::npos) << "test text has no \"" << from << "\"";
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

// The line (from 1) of the first occurrence of `needle`, so expectations follow edits of kValid.
int line_of(std::string_view text, std::string_view needle) {
  const auto at = text.find(needle);
  EXPECT_NE(at, std::string_view::npos) << "test text has no \"" << needle << "\"";
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// The one-line message a config is rejected with ("" and a test failure when it loads).
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return test::error_of<ConfigError>([&] { parse_experiment(text, kSource, overrides); },
                                     "the config loaded, but an error was expected");
}

std::string override_error(config::Experiment experiment, const std::string& assignment) {
  return test::error_of<ConfigError>([&] { apply_override(experiment, assignment); },
                                     "--set " + assignment + " was accepted, but an error was expected");
}

using test::contains;

std::string at_line(std::string_view text, std::string_view needle) {
  return std::string(kSource) + ":" + std::to_string(line_of(text, needle)) + ": ";
}

config::Experiment valid() {
  return parse_experiment(std::string(kValid), kSource);
}

// ---------------------------------------------------------------------------------------------

TEST(Config, ValidExperimentLoads) {
  const auto experiment = valid();
  EXPECT_EQ(experiment.structure().dofs(), 2U);
  ASSERT_EQ(experiment.site_size(), 2);
  EXPECT_EQ(experiment.site(0).name(), "purdue");
  EXPECT_EQ(experiment.site(1).placement(), config::LOCAL);
  EXPECT_DOUBLE_EQ(experiment.site(0).channel(0).specimen().bouc_wen().eta_per_s(), 190);
  EXPECT_EQ(experiment.ground_motion().record().unit(), config::G);
}

TEST(Config, UndampedAndSyntheticAreAllowed) {
  std::string text = replaced(kValid, "  rayleigh { mode_a: 1 zeta_a: 0.02 mode_b: 2 zeta_b: 0.02 }\n", "");
  text = replaced(text, R"(record { path: "elcentro.txt" format: TWO_COLUMN unit: G })", "synthetic { seed: 7 }");
  const auto experiment = parse_experiment(text, kSource);
  EXPECT_FALSE(experiment.structure().has_rayleigh());
  EXPECT_TRUE(experiment.ground_motion().has_synthetic());
}

TEST(Config, LoadsFromFileWithBaseDir) {
  const test::ScratchFolder scratch;
  const std::filesystem::path& folder = scratch.path();
  const auto file = folder / "experiment.textproto";
  std::ofstream(file) << kValid;
  const auto loaded = load_experiment(file, {"ground_motion.scale=0.4"});
  EXPECT_EQ(loaded.source, file);
  EXPECT_EQ(loaded.base_dir, std::filesystem::absolute(folder));
  EXPECT_DOUBLE_EQ(loaded.experiment.ground_motion().scale(), 0.4);
}

TEST(Config, MissingFileIsNamed) {
  try {
    load_experiment("/nonexistent/experiment.textproto");
    FAIL() << "a missing file loaded";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), "cannot open /nonexistent/experiment.textproto: No such file or directory");
  }
}

// --- syntax -----------------------------------------------------------------------------------

TEST(Config, UnknownKeyNamesLineColumnAndTheValidFields) {
  const std::string text = replaced(kValid, "  mass_kg:", "  mas_kg:");
  const std::string error = error_of(text);
  EXPECT_EQ(
      error,
      std::string(kSource) + ":" + std::to_string(line_of(text, "mas_kg")) +
          ":3: unknown field \"mas_kg\" in Structure; did you mean \"mass_kg\"? expected one of: dofs, "
          "mass_kg, stiffness_n_per_m, damping_ns_per_m, rayleigh, ground_influence, dof_name, matrix_files, removed, "
          "sparse, record_dof, spring, reduction, dof_kind");
}

TEST(Config, UnknownEnumValueListsTheValues) {
  const std::string text = replaced(kValid, "unit: G }", "unit: g }");
  const std::string error = error_of(text);
  const auto line = text.substr(text.rfind('\n', text.find("unit: g")) + 1);
  const auto column = line.find("unit: g") + 7;  // the value, from 1
  EXPECT_TRUE(contains(error, std::string(kSource) + ":" + std::to_string(line_of(text, "unit: g")) + ":" +
                                  std::to_string(column) + ": "));
  EXPECT_TRUE(contains(error,
                       "unit: \"g\" is not a value of AccelerationUnit; did you mean \"G\"? expected one of: "
                       "G, M_PER_S2"));
}

TEST(Config, SyntaxErrorNamesLineAndColumn) {
  const std::string text = replaced(kValid, "[1000, 0, 0, 1000]", "[1000, 0, 0, 1000");
  // The parser notices the missing ']' at the next token, the start of the following line.
  EXPECT_EQ(error_of(text), std::string(kSource) + ":" + std::to_string(line_of(text, "stiffness_n_per_m")) +
                                ":3: Expected \",\", found \"stiffness_n_per_m\".");
}

// --- missing fields ---------------------------------------------------------------------------

TEST(Config, MissingFieldPointsAtItsEnclosingMessage) {
  const std::string text = replaced(kValid, "        eta_per_s: 190\n", "");
  EXPECT_EQ(error_of(text), at_line(text, "bouc_wen {") +
                                "site[0].channel[0].specimen.bouc_wen.eta_per_s: missing; every Bouc-Wen parameter "
                                "must be given except x0_m, n, voltage_v and substeps (seed 002 Eqs. 12-14)");
}

// rho_infinity belongs to the two alpha integrators and is a spectral radius: elsewhere it would be
// silently ignored, outside 0..1 the integrator is unstable or undefined.
TEST(Config, RhoInfinityOnlyWithAnAlphaIntegratorAndFromZeroToOne) {
  const std::string text(kValid);
  EXPECT_TRUE(
      contains(error_of(text, {"rho_infinity=0.8"}),
               "rho_infinity: is set, but integrator RK4 takes no rho_infinity; expected integrator: KR_ALPHA or "
               "GENERALIZED_ALPHA, or no rho_infinity"));
  EXPECT_TRUE(contains(error_of(text, {"integrator=KR_ALPHA", "rho_infinity=1.2"}),
                       "rho_infinity: is 1.2, expected a spectral radius from 0"));
  EXPECT_TRUE(contains(error_of(text, {"integrator=GENERALIZED_ALPHA", "rho_infinity=-0.5"}), "rho_infinity: is -0.5"));
  EXPECT_EQ(parse_experiment(text, kSource, {"integrator=KR_ALPHA", "rho_infinity=0"}).rho_infinity(), 0.0);
  EXPECT_EQ(parse_experiment(text, kSource, {"integrator=GENERALIZED_ALPHA"}).rho_infinity(), 0.5);
}

TEST(Config, MissingDofs) {
  const std::string text = replaced(kValid, "  dofs: 2\n", "");
  EXPECT_EQ(error_of(text),
            at_line(text, "structure {") + "structure.dofs: missing; expected the number of degrees of freedom (>= 1)");
}

TEST(Config, MissingTopLevelMessageHasNoLine) {
  const std::string removed =
      std::string(kValid).erase(kValid.find("ground_motion {"), kValid.find("site {") - kValid.find("ground_motion {"));
  EXPECT_EQ(error_of(removed), std::string(kSource) +
                                   ": ground_motion: missing; expected ground_motion { record { path: \"...\" unit: "
                                   "G } } or ground_motion { synthetic { } }");
}

TEST(Config, MissingGroundMotionPath) {
  const std::string text = replaced(kValid, R"(path: "elcentro.txt" )", "");
  EXPECT_EQ(error_of(text), at_line(text, "record {") +
                                "ground_motion.record.path: missing; expected the record file (a relative path starts "
                                "from the config file's folder)");
}

TEST(Config, MissingGroundMotionUnit) {
  const std::string text = replaced(kValid, " unit: G", "");
  EXPECT_EQ(error_of(text), at_line(text, "record {") +
                                "ground_motion.record.unit: missing; expected G or M_PER_S2 (the unit of a record is "
                                "never guessed)");
}

TEST(Config, GroundMotionWithoutSource) {
  const std::string text = replaced(kValid, R"(  record { path: "elcentro.txt" format: TWO_COLUMN unit: G }
)",
                                    "");
  EXPECT_EQ(error_of(text), at_line(text, "ground_motion {") +
                                "ground_motion: has no source; expected record { path: \"...\" unit: G } or "
                                "synthetic { ... }");
}

// --- matrices ---------------------------------------------------------------------------------

TEST(Config, WrongMatrixSize) {
  const std::string text = replaced(kValid, "[1000, 0, 0, 1000]", "[1000, 0, 1000]");
  EXPECT_EQ(error_of(text), at_line(text, "mass_kg") + "structure.mass_kg: has 3 entries, expected dofs*dofs = 4");
}

TEST(Config, MassNotSymmetric) {
  const std::string text = replaced(kValid, "[1000, 0, 0, 1000]", "[1000, 5, 0, 1000]");
  EXPECT_EQ(error_of(text), at_line(text, "mass_kg") +
                                "structure.mass_kg: is not symmetric: entry [1] (row 1, column 2) is 5 but entry [2] "
                                "(row 2, column 1) is 0; expected a symmetric matrix (relative tolerance 1e-09)");
}

TEST(Config, MassSymmetricButIndefinite) {
  const std::string text = replaced(kValid, "[1000, 0, 0, 1000]", "[1000, 2000, 2000, 1000]");
  EXPECT_EQ(error_of(text), at_line(text, "mass_kg") +
                                "structure.mass_kg: is not positive definite (smallest eigenvalue -1000); expected a "
                                "symmetric positive-definite mass matrix on the DOFs with mass");
}

TEST(Config, MassWithinSymmetryToleranceLoads) {
  const std::string text = replaced(kValid, "[1000, 0, 0, 1000]", "[1000, 1e-7, 0, 1000]");
  EXPECT_NO_THROW(parse_experiment(text, kSource));
}

TEST(Config, StiffnessNotSymmetric) {
  const std::string text = replaced(kValid, "[2e6, -1e6, -1e6, 1e6]", "[2e6, -1e6, -2e6, 1e6]");
  EXPECT_TRUE(
      contains(error_of(text), at_line(text, "stiffness_n_per_m") + "structure.stiffness_n_per_m: is not symmetric"));
}

// Rayleigh damping fits to the modes and so already needed a positive-definite K; without it nothing
// looked at K, and a negative-definite stiffness ran to 1e303 m "successfully".
const std::string kRayleigh = "  rayleigh { mode_a: 1 zeta_a: 0.02 mode_b: 2 zeta_b: 0.02 }\n";

TEST(Config, StiffnessWithANegativeEigenvalueIsRejected) {
  const std::string undamped = replaced(kValid, kRayleigh, "");
  const std::string negative = replaced(undamped, "[2e6, -1e6, -1e6, 1e6]", "[-2e6, 1e6, 1e6, -1e6]");
  EXPECT_TRUE(contains(error_of(negative), at_line(negative, "stiffness_n_per_m") +
                                               "structure.stiffness_n_per_m: has a negative eigenvalue -2.61803e+06"));
  // Beyond rounding: eigenvalues 1e6 +- 1.001e6, the smallest -1000 = -5e-4 of the largest.
  const std::string slightly = replaced(undamped, "[2e6, -1e6, -1e6, 1e6]", "[1e6, -1.001e6, -1.001e6, 1e6]");
  EXPECT_TRUE(contains(error_of(slightly), "structure.stiffness_n_per_m: has a negative eigenvalue -1000 "));
  // Semi-definite (a free rigid-body mode held only by the sites' specimens) is physical and loads.
  const std::string free_mode = replaced(undamped, "[2e6, -1e6, -1e6, 1e6]", "[1e6, -1e6, -1e6, 1e6]");
  EXPECT_NO_THROW(parse_experiment(free_mode, kSource));
  // As does a zero eigenvalue that rounding leaves at -1e-10 relative: [1, 1+1e-10; 1+1e-10, 1] x 1e6
  // has eigenvalues 2e6 and -1e-4, i.e. -5e-11 of the largest (tolerance 1e-9).
  const std::string rounded =
      replaced(undamped, "[2e6, -1e6, -1e6, 1e6]", "[1e6, -1.0000000001e6, -1.0000000001e6, 1e6]");
  EXPECT_NO_THROW(parse_experiment(rounded, kSource));
}

TEST(Config, MassThatIsNumericallySingularIsRejected) {
  // Positive in exact arithmetic but 1e-15 of the largest: every solve with M loses all its digits.
  const std::string text = replaced(kValid, "[1000, 0, 0, 1000]", "[1000, 0, 0, 1e-12]");
  EXPECT_TRUE(contains(error_of(text), at_line(text, "mass_kg") + "structure.mass_kg: is not positive definite"));
}

TEST(Config, DampingMustBeSymmetricAndNotNegative) {
  const auto with_damping = [](const std::string& values) {
    return replaced(kValid, kRayleigh, "  damping_ns_per_m { value: " + values + " }\n");
  };
  EXPECT_NO_THROW(parse_experiment(with_damping("[3684, -1228, -1228, 2456]"), kSource));
  const std::string negative = with_damping("[-3684, 0, 0, 2456]");
  EXPECT_TRUE(contains(error_of(negative), at_line(negative, "damping_ns_per_m") +
                                               "structure.damping_ns_per_m.value: has a negative eigenvalue -3684"));
  EXPECT_TRUE(
      contains(error_of(with_damping("[3684, -1228, 0, 2456]")), "structure.damping_ns_per_m.value: is not symmetric"));
}

TEST(Config, RayleighModes) {
  const std::string text = replaced(kValid, "mode_b: 2", "mode_b: 3");
  EXPECT_EQ(error_of(text),
            at_line(text, "rayleigh") +
                "structure.rayleigh.mode_b: is 3, expected a mode number from 1 to the 2 DOFs with mass");
  EXPECT_TRUE(contains(error_of(replaced(kValid, "mode_b: 2", "mode_b: 1")),
                       "structure.rayleigh.mode_b: is 1 like mode_a; expected two distinct modes"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "zeta_b: 0.02", "zeta_b: 1")),
                       "structure.rayleigh.zeta_b: is 1, expected a modal damping ratio in [0, 1)"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "zeta_b: 0.02", "")),
                       "structure.rayleigh.zeta_b: missing; expected a modal damping ratio in [0, 1)"));
}

TEST(Config, InfluenceSizeNamesTheSite) {
  const std::string text = replaced(kValid, "influence: [-1, 0]", "influence: [-1, 0, 0]");
  EXPECT_EQ(error_of(text), at_line(text, "influence: [-1, 0, 0]") +
                                "site[0].influence: site \"purdue\": influence has 3 entries, structure has 2 DOFs "
                                "and the site 1 channel (expected dofs x channels = 2, row-major)");
}

// --- other semantic checks --------------------------------------------------------------------

TEST(Config, SiteChecks) {
  EXPECT_TRUE(contains(error_of(replaced(kValid, R"(name: "spring_lab")", R"(name: "purdue")")),
                       "site[1].name: \"purdue\" is also the name of site[0]; expected unique site names"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, R"(name: "purdue")", R"(name: "pur due")")),
                       "site[0].name: \"pur due\" contains ' '; expected only letters, digits, '_' or '-'"));
  const std::string local = replaced(kValid, "  placement: LOCAL\n", "  placement: LOCAL\n  link {}\n");
  EXPECT_EQ(error_of(local), at_line(local, "link {}") +
                                 "site[1].link: site \"spring_lab\" is LOCAL (in the numerical node's process); "
                                 "expected no link, or placement: REMOTE");
  EXPECT_TRUE(contains(error_of(replaced(kValid, "backward { delay_s: 0.02 }", "backward { delay_s: -0.02 }")),
                       "site[0].link.backward.delay_s: is -0.02, expected a delay >= 0 s"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "c1a_ns_per_m: 283000", "c1a_ns_per_m: -2100")),
                       "bouc_wen.c1a_ns_per_m: c0a_ns_per_m + c1a_ns_per_m is 0, expected > 0"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "eta_per_s: 190", "eta_per_s: 0")),
                       "site[0].channel[0].specimen.bouc_wen.eta_per_s: is 0, expected > 0"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "spring { stiffness_n_per_m: 1e5 }", "spring { }")),
                       "site[1].channel[0].specimen.spring.stiffness_n_per_m: missing"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "channel { specimen { spring { stiffness_n_per_m: 1e5 } } }",
                                         "channel { specimen { } }")),
                       "site[1].channel[0].specimen: has no model; expected spring"));
  EXPECT_TRUE(contains(error_of(replaced(kValid, "rate_hz: 1024", "rate_hz: 0")),
                       "case.textproto:3: rate_hz: is 0, expected a step rate > 0 and <= 100000 Hz"));
}

TEST(Config, SyntheticMotionBeyondTenGIsRejected) {
  std::string text = replaced(kValid, R"(record { path: "elcentro.txt" format: TWO_COLUMN unit: G })",
                              "synthetic { pga_m_per_s2: 50 }");
  EXPECT_NO_THROW(parse_experiment(text, kSource));  // 50 x 0.2 = 10 m/s^2
  text = replaced(text, "scale: 0.2", "scale: 3");
  EXPECT_TRUE(contains(error_of(text), at_line(text, "scale: 3") +
                                           "ground_motion.scale: 50 m/s^2 (pga_m_per_s2) x 3 = 150 m/s^2 is beyond"));
  EXPECT_TRUE(contains(error_of(text), "100 m/s^2"));
  text = replaced(text, "scale: 3", "scale: 1");
  text = replaced(text, "pga_m_per_s2: 50", "pga_m_per_s2: 1e308");
  EXPECT_TRUE(contains(error_of(text), at_line(text, "pga_m_per_s2") + "ground_motion.synthetic.pga_m_per_s2: "));
}

TEST(Config, SyntheticMotionLongerThanTheSampleBoundIsRejected) {
  const std::string text = replaced(kValid, R"(record { path: "elcentro.txt" format: TWO_COLUMN unit: G })",
                                    "synthetic { duration_s: 1e9 }");
  EXPECT_TRUE(contains(error_of(text), at_line(text, "duration_s: 1e9") +
                                           "ground_motion.synthetic.duration_s: 1e+09 s at 100 Hz is 100000000001 "
                                           "samples, more than a ground motion may hold (10000000)"));
}

TEST(Config, RemoteSiteAddressIsAHostAndAPortToSendTo) {
  const auto with_address = [](const std::string& address) {
    return replaced(kValid, "  compensation { mode: MODIFIED_SMITH }\n",
                    "  compensation { mode: MODIFIED_SMITH }\n  address: \"" + address + "\"\n");
  };
  for (const char* good : {"127.0.0.1:47000", "[::1]:47000", "lab.example.org:1", "10.77.1.2:65535"}) {
    EXPECT_NO_THROW(parse_experiment(with_address(good), kSource)) << good;
  }
  const std::string port0 = with_address("127.0.0.1:0");
  EXPECT_TRUE(contains(error_of(port0), at_line(port0, "address:") + "site[0].address: \"127.0.0.1:0\" has port 0"));
  EXPECT_TRUE(contains(error_of(with_address("256.1.1.1:47000")),
                       "site[0].address: \"256.1.1.1:47000\": 256.1.1.1 is not an IPv4 address"));
  EXPECT_TRUE(contains(error_of(with_address("10.77.1:47000")), "site[0].address: "));
  EXPECT_TRUE(contains(error_of(with_address("127.0.0.1")), "site[0].address: \"127.0.0.1\" is not an address"));
  EXPECT_TRUE(contains(error_of(with_address("127.0.0.1:65536")), "site[0].address: "));
  // A LOCAL site has no address to check; a default-constructed REMOTE one is 127.0.0.1:47000.
  EXPECT_NO_THROW(valid());
}

TEST(Config, RealtimeTimeoutsAreBounded) {
  const auto with_realtime = [](const std::string& body) {
    return std::string(kValid) + "realtime { " + body + " }\n";
  };
  EXPECT_NO_THROW(
      parse_experiment(with_realtime("peer_timeout_s: 0.002 handshake_timeout_s: 600 start_delay_s: 10"), kSource));
  // A peer silent for 1e9 s let a site run alone to "completed".
  const std::string huge = with_realtime("peer_timeout_s: 1e9");
  EXPECT_TRUE(contains(error_of(huge), at_line(huge, "peer_timeout_s") +
                                           "realtime.peer_timeout_s: is 1e+09, expected a timeout from 2 steps "
                                           "(0.00195312 s at 1024 Hz) to 10 s"));
  EXPECT_TRUE(contains(error_of(with_realtime("peer_timeout_s: 0.001")), "realtime.peer_timeout_s: is 0.001"));
  EXPECT_TRUE(contains(error_of(with_realtime("handshake_timeout_s: 0.01")), "realtime.handshake_timeout_s: is 0.01"));
  EXPECT_TRUE(contains(error_of(with_realtime("handshake_timeout_s: 1e7")), "realtime.handshake_timeout_s: is 1e+07"));
  EXPECT_TRUE(contains(error_of(with_realtime("start_delay_s: 60")), "realtime.start_delay_s: is 60"));
  EXPECT_TRUE(contains(error_of(with_realtime("start_delay_s: -1")), "realtime.start_delay_s: is -1"));
}

TEST(Config, MemoryBudgetMustBePositive) {
  EXPECT_NO_THROW(parse_experiment(std::string(kValid) + "output { memory_budget_mb: 16384 }\n", kSource));
  EXPECT_TRUE(contains(error_of(std::string(kValid) + "output { memory_budget_mb: 0 }\n"),
                       "output.memory_budget_mb: is 0, expected a memory budget > 0 MB"));
  EXPECT_EQ(valid().output().memory_budget_mb(), 4096.0);
}

TEST(Config, NaNIsRejected) {
  const std::string text = replaced(kValid, "scale: 0.2", "scale: nan");
  EXPECT_EQ(error_of(text), at_line(text, "scale: nan") + "ground_motion.scale: is nan, expected a finite number");
  const std::string in_list = replaced(kValid, "[2e6, -1e6, -1e6, 1e6]", "[2e6, -1e6, -1e6, inf]");
  EXPECT_EQ(error_of(in_list),
            at_line(in_list, "stiffness_n_per_m") + "structure.stiffness_n_per_m[3]: is inf, expected a finite number");
}

TEST(Config, ValidateWithoutLocationsNamesThePath) {
  auto experiment = valid();
  experiment.mutable_structure()->set_dofs(3);
  try {
    validate(experiment, "built");
    FAIL() << "3 DOFs with 2x2 matrices validated";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), "built: structure.mass_kg: has 4 entries, expected dofs*dofs = 9");
  }
}

// --- overrides --------------------------------------------------------------------------------

TEST(Override, ScalarEnumBoolString) {
  auto experiment = valid();
  apply_override(experiment, "ground_motion.scale=0.4");
  apply_override(experiment, "integrator=NEWMARK_AVERAGE_ACCELERATION");
  apply_override(experiment, "site[0].link.forward.allow_reorder=true");
  apply_override(experiment, "name = \"run 2\"");
  apply_override(experiment, "structure.dofs=2");
  EXPECT_DOUBLE_EQ(experiment.ground_motion().scale(), 0.4);
  EXPECT_EQ(experiment.integrator(), config::NEWMARK_AVERAGE_ACCELERATION);
  EXPECT_TRUE(experiment.site(0).link().forward().allow_reorder());
  EXPECT_EQ(experiment.name(), "run 2");
}

TEST(Override, ByIndexAndByName) {
  auto experiment = valid();
  apply_override(experiment, "site[1].channel[0].specimen.spring.stiffness_n_per_m=2e5");
  EXPECT_EQ(apply_override_resolved(experiment, "site[purdue].link.forward.delay_s=0.025"),
            "site[0].link.forward.delay_s");
  apply_override(experiment, "site[purdue].compensation.mode=NONE");
  EXPECT_DOUBLE_EQ(experiment.site(1).channel(0).specimen().spring().stiffness_n_per_m(), 2e5);
  EXPECT_DOUBLE_EQ(experiment.site(0).link().forward().delay_s(), 0.025);
  EXPECT_EQ(experiment.site(0).compensation().mode(), config::NONE);
}

TEST(Override, IndexEqualToSizeAppends) {
  const auto experiment = parse_experiment(
      std::string(kValid), kSource,
      {"site[2].name=ucb", "site[ucb].influence=[0, 1]", "site[ucb].channel[0].specimen.spring.stiffness_n_per_m=3e5"});
  ASSERT_EQ(experiment.site_size(), 3);
  EXPECT_EQ(experiment.site(2).name(), "ucb");
  EXPECT_EQ(experiment.site(2).placement(), config::REMOTE);
  EXPECT_DOUBLE_EQ(experiment.site(2).channel(0).specimen().spring().stiffness_n_per_m(), 3e5);
}

TEST(Override, RepeatedScalarsAsListOrElement) {
  auto experiment = valid();
  apply_override(experiment, "structure.mass_kg=[2000, 0, 0, 1500]");
  ASSERT_EQ(experiment.structure().mass_kg_size(), 4);
  EXPECT_DOUBLE_EQ(experiment.structure().mass_kg(3), 1500);
  apply_override(experiment, "structure.mass_kg[0]=2500");
  EXPECT_DOUBLE_EQ(experiment.structure().mass_kg(0), 2500);
  apply_override(experiment, "structure.dof_name=[\"first, ground\", second]");
  ASSERT_EQ(experiment.structure().dof_name_size(), 2);
  EXPECT_EQ(experiment.structure().dof_name(0), "first, ground");
  EXPECT_EQ(experiment.structure().dof_name(1), "second");
  apply_override(experiment, "structure.ground_influence=[]");
  EXPECT_EQ(experiment.structure().ground_influence_size(), 0);
}

TEST(Override, MessageInBracesReplacesIt) {
  auto experiment = valid();
  apply_override(experiment, "site[purdue].link={ forward { delay_s: 0.05 } }");
  EXPECT_DOUBLE_EQ(experiment.site(0).link().forward().delay_s(), 0.05);
  EXPECT_FALSE(experiment.site(0).link().has_backward());  // replaced, not merged
  apply_override(
      experiment,
      "site[2]={ name: \"ucb\" influence: [0, 1] channel { specimen { spring { stiffness_n_per_m: 1 } } } }");
  ASSERT_EQ(experiment.site_size(), 3);
  EXPECT_EQ(experiment.site(2).name(), "ucb");
  EXPECT_NO_THROW(validate(experiment, kSource));
}

TEST(Override, OneofMemberSwitchesTheOneof) {
  auto experiment = valid();
  apply_override(experiment, "ground_motion.synthetic.seed=3");
  EXPECT_EQ(experiment.ground_motion().source_case(), config::GroundMotion::kSynthetic);
  EXPECT_EQ(experiment.ground_motion().synthetic().seed(), 3U);
  apply_override(experiment, "site[0].channel[0].specimen.spring.stiffness_n_per_m=1e4");
  EXPECT_EQ(experiment.site(0).channel(0).specimen().kind_case(), config::Model::kSpring);
  EXPECT_NO_THROW(validate(experiment, kSource));
}

TEST(Override, ErrorsNameTheOverrideAndWhatWasExpected) {
  const auto experiment = valid();
  EXPECT_EQ(override_error(experiment, "structure.mas_kg=[1]"),
            "--set structure.mas_kg=[1]: structure: unknown field \"mas_kg\" in Structure; did you mean \"mass_kg\"? "
            "expected one of: dofs, mass_kg, stiffness_n_per_m, damping_ns_per_m, rayleigh, ground_influence, "
            "dof_name, matrix_files, removed, sparse, record_dof, spring, reduction, dof_kind");
  EXPECT_EQ(override_error(experiment, "site[5].name=x"),
            "--set site[5].name=x: site: index 5 is out of range: there are 2 elements; expected 0..1, or 2 to append "
            "one");
  EXPECT_EQ(override_error(experiment, "site[ucb].name=x"),
            "--set site[ucb].name=x: site: no element is named \"ucb\"; expected an index (0..1) or one of: purdue, "
            "spring_lab");
  EXPECT_EQ(override_error(experiment, "site[0].channel[first].prediction={}"),
            "--set site[0].channel[first].prediction={}: site[0].channel: \"first\" is not an index, and channel "
            "elements have no name; expected 0..0, or 1 to append one");
  EXPECT_EQ(override_error(experiment, "rate_hz=fast"), "--set rate_hz=fast: rate_hz: \"fast\" is not a number");
  EXPECT_EQ(override_error(experiment, "structure.dofs=-2"),
            "--set structure.dofs=-2: structure.dofs: \"-2\" is not an integer from 0 to 4294967295");
  EXPECT_EQ(override_error(experiment, "output.reference_csv=yes"),
            "--set output.reference_csv=yes: output.reference_csv: \"yes\" is not a bool; expected true or false");
  EXPECT_EQ(override_error(experiment, "integrator=RK5"),
            "--set integrator=RK5: integrator: \"RK5\" is not a value of Integrator; did you mean \"RK4\"? expected "
            "one of: RK4, NEWMARK_AVERAGE_ACCELERATION, CHEN_RICLES, KR_ALPHA, GENERALIZED_ALPHA");
  EXPECT_EQ(override_error(experiment, "structure.mass_kg=1000"),
            "--set structure.mass_kg=1000: structure.mass_kg: is a list; expected all its values in brackets, e.g. "
            "structure.mass_kg=[1, 2], or one element as structure.mass_kg[0]=1");
  EXPECT_EQ(override_error(experiment, "structure.mass_kg=[1, x]"),
            "--set structure.mass_kg=[1, x]: structure.mass_kg: \"x\" is not a number");
  EXPECT_EQ(override_error(experiment, "site[0].link=0.02"),
            "--set site[0].link=0.02: site[0].link: is a message; expected its text-format body in braces, e.g. "
            "site[0].link={ ... }, or one of its fields: forward, backward");
  EXPECT_EQ(override_error(experiment, "site[0].link={ forwrd { delay_s: 1 } }"),
            "--set site[0].link={ forwrd { delay_s: 1 } }: site[0].link: column 3 of the value: unknown field "
            "\"forwrd\" in Link; did you mean \"forward\"? expected one of: forward, backward");
  EXPECT_EQ(override_error(experiment, "site.name=x"),
            "--set site.name=x: site: is a list of 2 elements; expected an element: site[0]..site[2] (the last "
            "appends), or site[<name>]");
  EXPECT_EQ(override_error(experiment, "rate_hz.x=1"),
            "--set rate_hz.x=1: rate_hz: is a double, not a message; it has no field \"x\"");
  EXPECT_EQ(override_error(experiment, "rate_hz"),
            "--set rate_hz: expected path=value, e.g. site[0].link.forward.delay_s=0.025");
}

TEST(Override, FailedOverrideLeavesTheExperimentUnchanged) {
  auto experiment = valid();
  const auto before = experiment.SerializeAsString();
  EXPECT_THROW(apply_override(experiment, "site[2].channel[0].specimen.spring.stiffness_n_per_m=oops"), ConfigError);
  EXPECT_EQ(experiment.SerializeAsString(), before);
}

TEST(Override, ValidationErrorsPointAtTheOverride) {
  const std::string text(kValid);
  EXPECT_EQ(error_of(text, {"site[purdue].link.forward.delay_s=-1"}),
            "case.textproto: --set site[purdue].link.forward.delay_s=-1: site[0].link.forward.delay_s: is -1, "
            "expected a delay >= 0 s");
  // A site created by an override and left incomplete.
  EXPECT_EQ(error_of(text, {"site[2].name=ucb"}),
            "case.textproto: --set site[2].name=ucb: site[2].channel: missing; site \"ucb\" needs at least one "
            "channel { specimen { ... } }");
  EXPECT_EQ(error_of(text, {"structure.mass_kg=[1000, 0, 0, nan]"}),
            "case.textproto: --set structure.mass_kg=[1000, 0, 0, nan]: structure.mass_kg[3]: is nan, expected a "
            "finite number");
  // Fields the override did not touch still point at the file.
  EXPECT_EQ(error_of(replaced(text, "eta_per_s: 190", "eta_per_s: -1"), {"site[purdue].link.forward.delay_s=0.01"}),
            at_line(text, "eta_per_s") +
                "site[0].channel[0].specimen.bouc_wen.eta_per_s: is -1, expected > 0 (the rate "
                "of the first-order voltage filter)");
}

TEST(Override, AppliedInOrder) {
  const auto experiment =
      parse_experiment(std::string(kValid), kSource, {"ground_motion.scale=0.4", "ground_motion.scale=0.6"});
  EXPECT_DOUBLE_EQ(experiment.ground_motion().scale(), 0.6);
}

// --- text form --------------------------------------------------------------------------------

TEST(Config, ToTextRoundTrips) {
  const auto experiment = parse_experiment(
      std::string(kValid), kSource,
      {"structure.mass_kg=[1000.1, 0, 0, 999.9]", "site[purdue].link.forward.delay_s=0.0123456789012345"});
  const std::string text = to_text(experiment);
  const auto again = parse_experiment(text, "to_text");
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(experiment, again)) << text;
  EXPECT_EQ(to_text(again), text);
}

TEST(Config, LocationsAreRecorded) {
  // FieldLocations on its own: the fallback to the enclosing message and the override precedence.
  FieldLocations where;
  where.add_line("site", 10);
  where.add_line("site[0]", 10);
  where.add_line("site[0].name", 11);
  EXPECT_EQ(where.prefix("f", "site[0].name"), "f:11: ");
  EXPECT_EQ(where.prefix("f", "site[0].channel"), "f:10: ");
  EXPECT_EQ(where.prefix("f", "structure"), "f: ");
  where.add_override("site[0]", "site[0]={}");
  EXPECT_EQ(where.prefix("f", "site[0].name"), "f: --set site[0]={}: ");
  EXPECT_EQ(where.line("site[0].name"), 11);
}

}  // namespace
}  // namespace rths::test_config
