// Every bad input is refused before motion: the memory budget of a run's records, and a campaign of
// broken configs, overrides and command lines against the real executables, each answered with exit
// code 2, one line naming the field or option, and no record written.
// (A site refusing a start its record cannot hold, in real time: realtime/test_bad_inputs.cpp.)
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/config/config.hpp"
#include "common/config/memory_budget.hpp"
#include "common/core/exit_codes.hpp"
#include "common/core/input_file.hpp"
#include "common/protocol/secret_key.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "support/bad_inputs.hpp"
#include "support/process.hpp"

namespace rths::test_bad_inputs {
namespace {

namespace fs = std::filesystem;

using test::MemoryBudget;
using test::valid_config;

// The small valid experiment with two sites more: a remote one of two channels and a local spring.
std::string three_site_config() {
  return valid_config() + R"(site {
  name: "pair"
  influence: [1, 0, 0, 1]
  channel { specimen { spring { stiffness_n_per_m: 1000 } } }
  channel { specimen { spring { stiffness_n_per_m: 2000 } } }
}
site {
  name: "inhouse"
  placement: LOCAL
  influence: [0, -1]
  channel { specimen { spring { stiffness_n_per_m: 3000 } } }
}
)";
}
// The budget counts the columns the recorders really have: a layout change that forgot it fails here.
TEST_F(MemoryBudget, CountsTheColumnsEveryRecorderHas) {
  const LoadedConfig loaded = load(three_site_config(), {"duration_s=0.01"});
  Experiment ex(loaded);
  ex.run();
  const std::size_t numerical = numerical_record_columns(loaded.experiment);
  EXPECT_EQ(numerical, ex.numerical().columns());
  EXPECT_EQ(numerical, ex.reference().columns());
  ex.write_outputs(dir_);
  for (int i = 0; i < 2; ++i) {  // the two remote sites
    const auto& site = loaded.experiment.site(i);
    std::ifstream csv(dir_ / ("site_" + site.name() + ".csv"));
    std::string header;
    std::getline(csv, header);
    EXPECT_EQ(site_record_columns(site), static_cast<std::size_t>(std::count(header.begin(), header.end(), ',')) + 1)
        << header;
  }
  const RecordBudget records = numerical_process_records(loaded.experiment, 11, true);
  // Each site: t, command_step and 7 columns per channel (1 and 2 channels).
  EXPECT_EQ(records.columns, 2 * numerical + (2 + 7) + (2 + 2 * 7));
  EXPECT_EQ(records.bytes(), 11.0 * static_cast<double>(records.columns) * 8.0);
  EXPECT_EQ(numerical_process_records(loaded.experiment, 11, false).columns, 2 * numerical);
}

TEST_F(MemoryBudget, ARunBeyondItIsRefusedBeforeAnythingIsReserved) {
  // duration_s: 1e5 died of std::bad_alloc after 72 s; now it is refused with what it would need.
  try {
    Experiment ex(load(valid_config(), {"duration_s=1e5"}));
    FAIL() << "a 1e5 s run was built";
  } catch (const ConfigError& e) {
    // 102400001 steps x 31 columns (11 + 11 + 9) x 8 bytes = 24218.75 MB (2^20 bytes): 24219 MB.
    EXPECT_EQ(std::string(e.what()),
              (dir_ / "budget.textproto").string() +
                  ": duration_s: 100000 s at 1024 Hz is 102400001 steps; the records need 24219 MB (31 columns x 8 "
                  "bytes per step: numerical node 11, reference 11, site lab 9), over output.memory_budget_mb = "
                  "4096 MB; expected a shorter duration_s, fewer recorded DOFs (structure.record_dof), or a larger "
                  "output.memory_budget_mb on a machine with the memory");
  }
  // An absurd duration is refused in floating point, not overflowed into a small integer.
  EXPECT_THROW(Experiment(load(valid_config(), {"duration_s=1e300"})), ConfigError);
}

TEST_F(MemoryBudget, TheBoundIsExactAndCanBeRaised) {
  // 10 s: 10241 steps x 31 columns x 8 bytes = 2539768 bytes = 2.42211 MB.
  const double needed_mb = 10241.0 * 31 * 8 / kBytesPerMb;
  EXPECT_NO_THROW(
      Experiment(load(valid_config(), {"duration_s=10", fmt::format("output.memory_budget_mb={:.17g}", needed_mb)})));
  EXPECT_THROW(Experiment(load(valid_config(), {"duration_s=10", fmt::format("output.memory_budget_mb={:.17g}",
                                                                             needed_mb * (1 - 1e-9))})),
               ConfigError);
}

TEST_F(MemoryBudget, ALongRecordIsRefusedNamingDurationAndTheRecord) {
  // Three samples 1e6 s apart: the motion ends at 2e6 s, 2048000001 steps at 1024 Hz.
  std::ofstream(dir_ / "slow.dat") << "0 0.1\n1e6 0.2\n2e6 0.1\n";
  std::string text = valid_config();
  text.replace(text.find("synthetic { seed: 3 duration_s: 2 }"), 35, R"(record { path: "slow.dat" unit: G })");
  text.replace(text.find("duration_s: 1\n"), 14, "");
  try {
    Experiment ex(load(text));
    FAIL() << "a 2e6 s record was run";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("duration_s: 0 runs to the end of the ground motion, 2e+06 s (ground_motion.record.path) at "
                        "1024 Hz is 2048000001 steps"),
              std::string::npos)
        << what;
  }
}

TEST(SiteStartRefusal, AStartBeyondTheSiteBudgetIsRefusedWithTheNumbers) {
  config::Experiment cfg;
  cfg.set_rate_hz(1024);
  auto* site = cfg.add_site();
  site->set_name("lab");
  site->add_channel();
  cfg.mutable_output()->set_memory_budget_mb(1);
  // 9 columns x 8 bytes = 72 bytes per step: 14563 steps fit in 1 MB (2^20 bytes), 14564 do not.
  EXPECT_EQ(site_start_refusal(cfg, *site, 14563), "");
  const std::string refusal = site_start_refusal(cfg, *site, 14564);
  EXPECT_NE(refusal.find("the start announces 14564 steps"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("over output.memory_budget_mb = 1 MB"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("refused before motion"), std::string::npos) << refusal;
  // A negative count (a peer's uint64 beyond int64) is not a run either.
  EXPECT_NE(site_start_refusal(cfg, *site, -1), "");
}
// ---------------------------------------------------------------------------------------------
// The campaign.

enum class Program { kNumerical, kPhysical, kRelay, kStudy, kBenchLoop };

const char* executable(Program program) {
  switch (program) {
    case Program::kNumerical:
      return "rths-numerical";
    case Program::kPhysical:
      return "rths-physical";
    case Program::kRelay:
      return "rths-relay";
    case Program::kStudy:
      return "rths-study";
    case Program::kBenchLoop:
      return "rths-bench-loop";
  }
  return "";
}

struct BadInput {
  std::string name;  // the test's name
  Program program;
  std::vector<std::string> args;  // CONFIG, STUDY, OUT and DIR are replaced by the case's paths
  std::string expected;           // must appear in the one error line
  std::string from;               // an edit of the valid config ("" for none)
  std::string to;
};

// How GoogleTest shows a failing case: the command line, not the object's bytes.
void PrintTo(const BadInput& bad, std::ostream* os) {
  *os << executable(bad.program);
  for (const auto& a : bad.args) *os << ' ' << a;
  if (!bad.from.empty()) *os << " (config: \"" << bad.from << "\" -> \"" << bad.to << "\")";
}

BadInput numerical(std::string name, std::vector<std::string> sets, std::string expected) {
  std::vector<std::string> args{"run", "CONFIG", "--out", "OUT"};
  for (auto& s : sets) {
    args.insert(args.end(), {"--set", std::move(s)});
  }
  return {std::move(name), Program::kNumerical, std::move(args), std::move(expected), "", ""};
}

BadInput edited(std::string name, std::string from, std::string to, std::string expected) {
  return {std::move(name),     Program::kNumerical, {"run", "CONFIG", "--out", "OUT"},
          std::move(expected), std::move(from),     std::move(to)};
}

BadInput numerical_cli(std::string name, std::vector<std::string> args, std::string expected) {
  return {std::move(name), Program::kNumerical, std::move(args), std::move(expected), "", ""};
}

BadInput physical(std::string name, std::vector<std::string> extra, std::string expected) {
  std::vector<std::string> args{"serve", "CONFIG", "--site", "lab", "--out", "OUT", "--wait", "5"};
  args.insert(args.end(), extra.begin(), extra.end());
  return {std::move(name), Program::kPhysical, std::move(args), std::move(expected), "", ""};
}

BadInput physical_cli(std::string name, std::vector<std::string> args, std::string expected) {
  return {std::move(name), Program::kPhysical, std::move(args), std::move(expected), "", ""};
}

// Any executable's command line, refused by its parser: `expected` is the whole error line, so the
// format "PROGRAM: error: --OPTION: what was expected, got 'VALUE'" is checked too.
BadInput command_line(std::string name, Program program, std::vector<std::string> args, const std::string& line) {
  return {
      std::move(name), program, std::move(args), std::string(executable(program)) + ": error: " + line + "\n", "", ""};
}

BadInput relay(std::string name, std::vector<std::string> extra, const std::string& line) {
  std::vector<std::string> args{"CONFIG", "--site",          "lab",   "--listen", "127.0.0.1:0",
                                "--to",   "127.0.0.1:47000", "--out", "OUT"};
  args.insert(args.end(), extra.begin(), extra.end());
  return command_line(std::move(name), Program::kRelay, std::move(args), line);
}

BadInput study(std::string name, std::vector<std::string> extra, const std::string& line) {
  std::vector<std::string> args{"run", "STUDY", "--out", "OUT"};
  args.insert(args.end(), extra.begin(), extra.end());
  return command_line(std::move(name), Program::kStudy, std::move(args), line);
}

BadInput bench_loop(std::string name, std::vector<std::string> args, const std::string& line) {
  return command_line(std::move(name), Program::kBenchLoop, std::move(args), line);
}

const std::string kSynthetic = "synthetic { seed: 3 duration_s: 2 }";
const std::string kDamping = "damping_ns_per_m { value: [3684, -1228, -1228, 2456] }";
const std::string kStiffness = "stiffness_n_per_m: [558343, -279171, -279171, 279171]";
const std::string kMass = "mass_kg: [2701, 0, 0, 2701]";
const std::string kSpecimen = "channel { specimen { spring { stiffness_n_per_m: 55834.4 } } }";

std::string record(const std::string& path, const std::string& more = "unit: G") {
  return "record { path: \"" + path + "\" " + more + " }";
}

// The structure of the valid config, to be replaced by one from files (structure.matrix_files).
const std::string kInlineMatrices = "dofs: 2\n  " + kMass + "\n  " + kStiffness + "\n  " + kDamping;

std::string matrix_files(const std::string& mass, const std::string& stiffness, const std::string& more = "") {
  return "matrix_files { mass_path: \"" + mass + "\" stiffness_path: \"" + stiffness + "\" " + more + "}";
}

// A second remote site whose address is `address`.
std::string second_site(const std::string& address) {
  return "site[1]={ name: \"pair\" influence: [1, 0] " + kSpecimen + " address: \"" + address + "\" }";
}

std::vector<BadInput> campaign() {
  return {
      // --- top level -------------------------------------------------------------------------
      numerical("RateZero", {"rate_hz=0"}, "rate_hz"),
      numerical("RateAboveTheBound", {"rate_hz=1e9"}, "rate_hz"),
      numerical("DurationNegative", {"duration_s=-1"}, "duration_s"),
      numerical("DurationBeyondTheMemoryBudget", {"duration_s=1e5"}, "duration_s: 100000 s"),
      numerical("DurationAbsurd", {"duration_s=1e300"}, "duration_s: 1e+300 s"),
      numerical("IntegratorUnknown", {"integrator=EULER"}, "integrator"),
      // --- structure -------------------------------------------------------------------------
      numerical("DofsZero", {"structure.dofs=0"}, "structure.dofs"),
      edited("MassWrongSize", kMass, "mass_kg: [2701, 0, 0]", "structure.mass_kg"),
      edited("MassNotSymmetric", kMass, "mass_kg: [2701, 5, 0, 2701]", "structure.mass_kg"),
      edited("MassIndefinite", kMass, "mass_kg: [2701, 0, 0, -2701]", "structure.mass_kg"),
      edited("MassNumericallySingular", kMass, "mass_kg: [2701, 0, 0, 1e-12]", "structure.mass_kg"),
      edited("StiffnessNegativeDefinite", kStiffness, "stiffness_n_per_m: [-558343, 279171, 279171, -279171]",
             "structure.stiffness_n_per_m"),
      edited("StiffnessNotSymmetric", kStiffness, "stiffness_n_per_m: [558343, -279171, 0, 279171]",
             "structure.stiffness_n_per_m"),
      numerical("ReductionWithoutModes", {"structure.reduction.static_correction=false"}, "structure.reduction.modes"),
      numerical("ReductionOfEveryMode", {"structure.reduction.modes=2"}, "structure.reduction.modes"),
      edited("ReductionOfAFreeStructure", kStiffness,
             "stiffness_n_per_m: [279171, -279171, -279171, 279171] reduction { modes: 1 }", "structure.reduction"),
      edited("StiffnessNaN", kStiffness, "stiffness_n_per_m: [558343, -279171, -279171, nan]",
             "structure.stiffness_n_per_m[3]"),
      edited("DampingNegative", kDamping, "damping_ns_per_m { value: [-3684, 0, 0, 2456] }",
             "structure.damping_ns_per_m.value"),
      edited("DampingNotSymmetric", kDamping, "damping_ns_per_m { value: [3684, -1228, 0, 2456] }",
             "structure.damping_ns_per_m.value"),
      edited("RayleighRatioAboveOne", kDamping, "rayleigh { zeta_a: 1.5 zeta_b: 0.02 }", "structure.rayleigh.zeta_a"),
      numerical("GroundInfluenceWrongSize", {"structure.ground_influence=[1, 1, 1]"}, "structure.ground_influence"),
      numerical("DofNamesRepeated", {R"(structure.dof_name=["a", "a"])"}, "structure.dof_name[1]"),
      // --- ground motion ---------------------------------------------------------------------
      numerical("ScaleNaN", {"ground_motion.scale=nan"}, "ground_motion.scale"),
      numerical("ScaleBeyondTenG", {"ground_motion.scale=1e308"}, "ground_motion.scale"),
      numerical("SyntheticPeakNegative", {"ground_motion.synthetic.pga_m_per_s2=-1"},
                "ground_motion.synthetic.pga_m_per_s2"),
      numerical("SyntheticTooLong", {"ground_motion.synthetic.duration_s=1e9"}, "ground_motion.synthetic.duration_s"),
      numerical("SyntheticRateZero", {"ground_motion.synthetic.sample_rate_hz=0"},
                "ground_motion.synthetic.sample_rate_hz"),
      numerical("GroundMotionWithoutSource", {"ground_motion={}"}, "ground_motion"),
      edited("RecordMissing", kSynthetic, record("no_such_record.dat"), "no_such_record.dat"),
      edited("RecordWithoutUnit", kSynthetic, R"(record { path: "ok.dat" })", "ground_motion.record.unit"),
      edited("RecordValueAbsurd", kSynthetic, record("absurd.dat"), "absurd.dat:3: acceleration 1e+308"),
      edited("RecordValueNaN", kSynthetic, record("nan.dat"), "nan.dat:2: "),
      edited("RecordStepUneven", kSynthetic, record("uneven.dat"), "uneven.dat:4: non-uniform"),
      edited("RecordInCentimetresReadAsMetres", kSynthetic, record("cm.dat", "unit: M_PER_S2"), "cm.dat:2: "),
      edited("At2HugeNpts", kSynthetic, record("huge.AT2", "format: PEER_AT2 unit: G"), "huge.AT2:4: NPTS is 1e+96"),
      edited("At2NaNNpts", kSynthetic, record("nan.AT2", "format: PEER_AT2 unit: G"), "nan.AT2:4: "),
      edited("At2NegativeNpts", kSynthetic, record("negative.AT2", "format: PEER_AT2 unit: G"), "negative.AT2:4: "),
      edited("At2FractionalNpts", kSynthetic, record("fraction.AT2", "format: PEER_AT2 unit: G"), "fraction.AT2:4: "),
      edited("At2NegativeDt", kSynthetic, record("negdt.AT2", "format: PEER_AT2 unit: G"), "negdt.AT2:4: DT is"),
      edited("At2NptsBeyondTheFile", kSynthetic, record("roomless.AT2", "format: PEER_AT2 unit: G"),
             "roomless.AT2:4: "),
      edited("At2InMetresPerSecondSquared", kSynthetic, record("ok.AT2", "format: PEER_AT2 unit: M_PER_S2"),
             "ground_motion.record.unit"),
      // Every file a config names: a regular file (a device never ends, a FIFO blocks), of bounded
      // size and line length, refused before it is read.
      edited("RecordIsADevice", kSynthetic, record("/dev/zero"),
             "cannot open /dev/zero: it is a character device; expected a regular text file"),
      edited("RecordBeyondTheSizeBound", kSynthetic, record("huge.dat"),
             "huge.dat: holds 600.0 MiB (629145600 bytes); expected a text file of at most 512.0 MiB"),
      edited("RecordLineBeyondTheBound", kSynthetic, record("long_line.dat"),
             "long_line.dat:2: a line longer than 1048576 bytes"),
      edited("At2LineBeyondTheBound", kSynthetic, record("long_line.AT2", "format: PEER_AT2 unit: G"),
             "long_line.AT2:5: a line longer than 1048576 bytes"),
      edited("RecordPathWithALineEnd", kSynthetic, record("no\\nsuch.dat"), "no\\nsuch.dat: No such file"),
      numerical(
          "DelayTraceIsADevice", {"site[0].link.forward.empirical={ trace_path: \"/dev/zero\" }"},
          "site[0].link.forward.empirical.trace_path: cannot open delay trace /dev/zero: it is a character device"),
      // --- matrices from files: the size line is a claim, bounded before anything is sized by it ---
      edited("MatrixSizeLineBeyondTheBound", kInlineMatrices, matrix_files("m.mtx", "huge.mtx"),
             "structure.matrix_files.stiffness_path: " + std::string("DIR/huge.mtx") +
                 ":2: the matrix is 200000000 x 200000000; expected at most 1000000 DOFs"),
      edited("MatrixSizeLineBeyondItsEntries", kInlineMatrices, matrix_files("few_m.mtx", "few_k.mtx"),
             "structure.matrix_files.stiffness_path: the matrices are 900000 x 900000, but 1 of those DOFs have a "
             "diagonal entry in the stiffness or the mass (DOF 2 has neither)"),
      edited("MatrixSizeLineWithMoreEntriesThanTheMatrix", kInlineMatrices, matrix_files("m.mtx", "over.mtx"),
             "over.mtx:2: declares 4 entries, more than the 3 a 2 x 2 symmetric (lower triangle) matrix has"),
      edited("MatrixFileIsADevice", kInlineMatrices, matrix_files("/dev/zero", "k.txt"),
             "structure.matrix_files.mass_path: cannot open /dev/zero: it is a character device"),
      edited("DofMapIsADevice", kInlineMatrices, matrix_files("m.mtx", "k.mtx", "dof_map_path: \"/dev/zero\" "),
             "structure.matrix_files.dof_map_path: cannot open /dev/zero: it is a character device"),
      numerical("DofsBeyondTheBound", {"structure.dofs=2000000000"},
                "structure.dofs: is 2000000000, expected at most 1000000 degrees of freedom"),
      // --- sites -----------------------------------------------------------------------------
      numerical("SiteNameWithSpace", {"site[0].name=a b"}, "site[0].name"),
      numerical("SiteNameRepeated", {"site[1]={ name: \"lab\" influence: [1, 0] " + kSpecimen + " }"}, "site[1].name"),
      // A name becomes part of file names in the run folder (site_NAME_1_model_error.png): refused at
      // validation, before the run, and quoted shortened, on one line.
      numerical(
          "SiteNameLongerThanAFileNameAllows", {"site[0].name=" + std::string(10000, 'a')},
          "site[0].name: \"" + std::string(40, 'a') + "... (10000 bytes)\" is 10000 bytes long; expected at most 128"),
      numerical("SiteNameWithALineEnd", {"site[0].name=a\nb"}, R"(site[0].name: "a\nb" contains '\n')"),
      numerical("DofNameWithASlash", {R"(structure.dof_name=["a/b", "c"])"},
                "structure.dof_name[0]: \"a/b\" contains '/'"),
      numerical("DofNameLongerThanAFileNameAllows", {R"(structure.dof_name=[")" + std::string(200, 'x') + R"(", "c"])"},
                "structure.dof_name[0]: \"" + std::string(40, 'x') + "... (200 bytes)\" is 200 bytes long"),
      // Two sites at one address would be one rths-physical to the network.
      numerical("TwoSitesAtOneAddress", {"site[0].address=127.0.0.1:47010", second_site("127.0.0.1:47010")},
                R"(site[1].address: "127.0.0.1:47010" is also site[0]'s ("lab"); expected one address per site)"),
      numerical("TwoSitesAtOneAddressNamedTwoWays", {"site[0].address=localhost:47010", second_site("127.0.0.1:47010")},
                "site[1].address: \"127.0.0.1:47010\" is also site[0]'s"),
      numerical_cli("TwoSitesAtTheDefaultAddressInRealTime",
                    {"run", "CONFIG", "--realtime", "--out", "OUT", "--set", "realtime.insecure=true", "--set",
                     "site[1]={ name: \"pair\" influence: [1, 0] " + kSpecimen + " }"},
                    "site[1].address: \"127.0.0.1:47000\" reaches 127.0.0.1:47000, as site[0]'s (\"127.0.0.1:47000\") "
                    "does"),
      numerical("InfluenceWrongSize", {"site[0].influence=[-1]"}, "site[0].influence"),
      numerical("SiteWithoutChannel", {"site[0].channel="}, "site[0].channel"),
      numerical("SpringNegative", {"site[0].channel[0].specimen.spring.stiffness_n_per_m=-1"},
                "site[0].channel[0].specimen.spring.stiffness_n_per_m"),
      numerical("BoucWenIncomplete", {"site[0].channel[0].specimen={ bouc_wen { n: 2 } }"},
                "site[0].channel[0].specimen.bouc_wen"),
      numerical("PredictionWithoutModel", {"site[0].channel[0].prediction={}"}, "site[0].channel[0].prediction"),
      numerical("ActuatorWithoutDynamics", {"site[0].channel[0].actuator={}"}, "site[0].channel[0].actuator"),
      numerical("RlsTapsZero", {"site[0].channel[0].controller={ rls { taps: 0 } }"},
                "site[0].channel[0].controller.rls.taps"),
      numerical("ExtrapolationOrderNine",
                {"site[0].channel[0].controller={ extrapolation { delay_s: 0.01 order: 9 } }"},
                "site[0].channel[0].controller.extrapolation.order"),
      numerical("AssumedRoundTripNegative", {"site[0].compensation.assumed_round_trip_s=-1"},
                "site[0].compensation.assumed_round_trip_s"),
      numerical("DelayNegative", {"site[0].link.forward.delay_s=-0.01"}, "site[0].link.forward.delay_s"),
      numerical("JitterNegative", {"site[0].link.backward.jitter_s=-0.01"}, "site[0].link.backward.jitter_s"),
      numerical("LossProbabilityTwo", {"site[0].link.forward.loss={ probability: 2 }"},
                "site[0].link.forward.loss.probability"),
      numerical("GilbertElliottNeverRecovers",
                {"site[0].link.forward.loss={ gilbert_elliott { p_good_to_bad: 0.1 p_bad_to_good: 0 } }"},
                "site[0].link.forward.loss.gilbert_elliott.p_bad_to_good"),
      numerical("DuplicateProbabilityNegative", {"site[0].link.backward.duplicate_probability=-0.1"},
                "site[0].link.backward.duplicate_probability"),
      numerical("HistogramWithOneEdge", {"site[0].link.forward.empirical={ bin_edge_s: [0.01] bin_weight: [] }"},
                "site[0].link.forward.empirical.bin_edge_s"),
      numerical("DelayTraceMissing", {"site[0].link.forward.empirical={ trace_path: \"no_such_trace.txt\" }"},
                "site[0].link.forward.empirical.trace_path"),
      numerical("DelayTraceMalformed", {"site[0].link.backward.empirical={ trace_path: \"bad_trace.txt\" }"},
                "site[0].link.backward.empirical.trace_path"),
      numerical("LinkOnALocalSite", {"site[0].link={ forward { delay_s: 0.01 } }", "site[0].placement=LOCAL"},
                "site[0].link"),
      numerical("AddressPortZero", {"site[0].address=127.0.0.1:0"}, "site[0].address"),
      numerical("AddressNotIPv4", {"site[0].address=256.1.1.1:47000"}, "site[0].address"),
      numerical("AddressWithoutPort", {"site[0].address=127.0.0.1"}, "site[0].address"),
      numerical("AddressPortAbove65535", {"site[0].address=127.0.0.1:70000"}, "site[0].address"),
      numerical_cli(
          "AddressUnresolvable",
          {"run", "CONFIG", "--realtime", "--out", "OUT", "--set", "site[0].address=nosuchhost.invalid:47000"},
          "site[0].address"),
      // --- real time and output --------------------------------------------------------------
      numerical("PeerTimeoutHuge", {"realtime.peer_timeout_s=1e9"}, "realtime.peer_timeout_s"),
      numerical("PeerTimeoutBelowTwoSteps", {"realtime.peer_timeout_s=0.001"}, "realtime.peer_timeout_s"),
      numerical("HandshakeTimeoutZero", {"realtime.handshake_timeout_s=0"}, "realtime.handshake_timeout_s"),
      numerical("HandshakeTimeoutHuge", {"realtime.handshake_timeout_s=1e9"}, "realtime.handshake_timeout_s"),
      numerical("StartDelayHuge", {"realtime.start_delay_s=1e9"}, "realtime.start_delay_s"),
      numerical("StartDelayNegative", {"realtime.start_delay_s=-1"}, "realtime.start_delay_s"),
      numerical("PriorityAbove99", {"realtime.priority=120"}, "realtime.priority"),
      numerical("SpinLongerThanAPeriod", {"realtime.spin_s=1"}, "realtime.spin_s"),
      numerical("CpuBelowMinusOne", {"realtime.cpu=-2"}, "realtime.cpu"),
      numerical("MemoryBudgetZero", {"output.memory_budget_mb=0"}, "output.memory_budget_mb"),
      numerical("MemoryBudgetNegative", {"output.memory_budget_mb=-1"}, "output.memory_budget_mb"),
      // --- the config file itself --------------------------------------------------------------
      edited("UnknownField", kMass, "mas_kg: [2701, 0, 0, 2701]", "mas_kg"),
      edited("SyntaxError", kMass, "mass_kg: [2701, 0, 0, 2701", "bad.textproto:"),
      numerical_cli("ConfigMissing", {"run", "DIR/absent.textproto", "--out", "OUT"}, "absent.textproto"),
      numerical_cli("ConfigIsAFolder", {"run", "DIR", "--out", "OUT"}, "Is a directory"),
      // --- overrides ---------------------------------------------------------------------------
      numerical("SetUnknownPath", {"nosuch.field=1"}, "nosuch"),
      numerical("SetBadNumber", {"duration_s=abc"}, "duration_s"),
      numerical("SetIndexOutOfRange", {"site[5].name=x"}, "site[5]"),
      numerical("SetUnknownSiteName", {"site[nosuch].compensation.mode=NONE"}, "nosuch"),
      numerical("SetWithoutEquals", {"duration_s"}, "--set duration_s"),
      numerical("SetBadListItem", {"structure.mass_kg=[1, x]"}, "structure.mass_kg"),
      numerical("SetBadEnum", {"site[0].compensation.mode=FAST"}, "FAST"),
      numerical("SetNegativeUnsigned", {"structure.dofs=-1"}, "structure.dofs"),
      numerical("SetBadMessageBody", {"site[0].link={ forward { delay: 1 } }"}, "delay"),
      numerical("SetEmptyPath", {"=3"}, "--set =3"),
      numerical("SetNegativeIndex", {"site[-1].name=x"}, "site"),
      // --- the command line --------------------------------------------------------------------
      numerical_cli("UnknownOption", {"run", "CONFIG", "--frobnicate"}, "--frobnicate"),
      numerical_cli("MissingConfig", {"run"}, "CONFIG"),
      numerical_cli("UnknownCommand", {"fly", "CONFIG"}, "fly"),
      numerical_cli("MissingCommand", {}, "missing command"),
      numerical_cli("OutWithoutValue", {"run", "CONFIG", "--out"}, "--out"),
      numerical_cli("SetWithoutValue", {"run", "CONFIG", "--set"}, "--set"),
      numerical_cli("ExtraArgument", {"run", "CONFIG", "CONFIG", "--out", "OUT"}, "unexpected argument"),
      numerical_cli("RealtimeFlagWithValue", {"run", "CONFIG", "--realtime=yes", "--out", "OUT"}, "--realtime"),
      numerical_cli("LoopbackBeyondTheMemoryBudget", {"loopback", "CONFIG", "--out", "OUT", "--set", "duration_s=1e5"},
                    "duration_s: 100000 s"),
      numerical_cli(
          "ConsoleOnASessionPort",
          {"run", "CONFIG", "--realtime", "--out", "OUT", "--console", "127.0.0.1:47000", "--console-key", "KEY"},
          "--console: 127.0.0.1:47000 is site[0]'s address (127.0.0.1:47000, \"lab\"), where its "
          "rths-physical takes the session's packets"),
      numerical_cli(
          "ConsoleOnASessionPortNamedTwoWays",
          {"run", "CONFIG", "--realtime", "--out", "OUT", "--console", "localhost:47000", "--console-key", "KEY"},
          "--console: localhost:47000 is site[0]'s address"),
      numerical_cli("ConsoleNotAnAddress", {"run", "CONFIG", "--realtime", "--out", "OUT", "--console", "nowhere"},
                    "--console: expected HOST:PORT (a name, an IPv4 address or [IPv6], and a port from 1 to 65535), "
                    "got 'nowhere'"),
      // --- rths-physical -----------------------------------------------------------------------
      physical("WaitNotANumber", {"--wait", "abc"}, "--wait: expected a time in seconds from 0 to 86400, got 'abc'"),
      physical("WaitNegative", {"--wait", "-1"}, "--wait: expected a time in seconds from 0 to 86400, got '-1'"),
      physical("WaitNaN", {"--wait", "nan"}, "--wait: expected a time in seconds from 0 to 86400, got 'nan'"),
      physical("WaitAbsurd", {"--wait", "1e300"}, "--wait"),
      physical(
          "ListenWithoutHost", {"--listen", ":0"},
          "--listen: expected HOST:PORT (a name, an IPv4 address or [IPv6], and a port from 0 to 65535), got ':0'"),
      physical("ListenNotIPv4", {"--listen", "256.1.1.1:0"}, "--listen"),
      physical("ListenPortAbove65535", {"--listen", "127.0.0.1:99999"}, "--listen"),
      physical("ListenWithoutPort", {"--listen", "127.0.0.1"}, "--listen"),
      physical("ListenUnresolvable", {"--listen", "nosuchhost.invalid:0"}, "--listen"),
      physical("SiteAddressNotIPv4", {"--set", "site[lab].address=256.1.1.1:47000"}, "site[0].address"),
      physical("SiteNotInTheConfig", {"--site", "nosuch", "--listen", "127.0.0.1:0"}, "nosuch"),
      physical("PhysicalBadOverride", {"--listen", "127.0.0.1:0", "--set", "realtime.peer_timeout_s=1e9"},
               "realtime.peer_timeout_s"),
      physical("PhysicalUnknownSetPath", {"--listen", "127.0.0.1:0", "--set", "nosuch=1"}, "nosuch"),
      physical("PhysicalConsoleOnItsListenPort",
               {"--listen", "127.0.0.1:47123", "--console", "127.0.0.1:47123", "--console-key", "KEY"},
               "--console: 127.0.0.1:47123 is the address this site listens on for the session"),
      physical_cli("PhysicalMissingSite", {"serve", "CONFIG", "--out", "OUT"}, "--site"),
      physical_cli("PhysicalMissingConfig", {"serve", "--site", "lab"}, "CONFIG"),
      physical_cli("PhysicalUnknownOption", {"serve", "CONFIG", "--site", "lab", "--fast"}, "--fast"),
      physical_cli("PhysicalUnknownCommand", {"run", "CONFIG", "--site", "lab"}, "run"),
      physical_cli("PhysicalConfigMissing", {"serve", "DIR/absent.textproto", "--site", "lab", "--out", "OUT"},
                   "absent.textproto"),
      // --- typed options of every executable: one line naming the option, what it takes, what it got ---
      command_line("NumericalSetMisspelt", Program::kNumerical, {"run", "CONFIG", "--sett", "duration_s=1"},
                   "unknown option --sett (did you mean --set?)"),
      command_line("NumericalRealtimeForCalibrate", Program::kNumerical, {"calibrate", "CONFIG", "--realtime"},
                   "--realtime is an option of run, not of calibrate (see --help)"),
      command_line("NumericalOutFollowedByAnOption", Program::kNumerical, {"run", "CONFIG", "--out", "--quiet"},
                   "--out: expected DIR, got the option '--quiet'"),
      command_line("NumericalOutEmpty", Program::kNumerical, {"run", "CONFIG", "--out="},
                   "--out: expected a DIR (not empty), got ''"),
      command_line("KeygenWithoutFile", Program::kNumerical, {"keygen"}, "keygen needs FILE (see --help)"),
      command_line("PhysicalSiteEmpty", Program::kPhysical, {"serve", "CONFIG", "--site", ""},
                   "--site: expected a NAME (not empty), got ''"),
      command_line("PhysicalSiteLongerThanAFileNameAllows", Program::kPhysical,
                   {"serve", "CONFIG", "--site", std::string(10000, 's')},
                   "--site: expected a site name of 1 to 128 letters, digits, '_' or '-', got '" +
                       std::string(80, 's') + "... (10000 bytes)'"),
      command_line("PhysicalSiteWithALineEnd", Program::kPhysical, {"serve", "CONFIG", "--site", "a\nb"},
                   "--site: expected a site name of 1 to 128 letters, digits, '_' or '-', got 'a\\nb'"),
      numerical_cli("NumericalPlantsWithALineEnd", {"campaign", "CONFIG", "--plants", "1\n2"},
                    "--plants: expected a number of runs from 1 from 1 to 100000, got '1\\n2'"),
      relay("RelayListenWithoutHost", {"--listen", ":0"},
            "--listen: expected HOST:PORT (a name, an IPv4 address or [IPv6], and a port from 0 to 65535), got ':0'"),
      relay("RelayListenNotIPv4", {"--listen", "256.1.1.1:0"},
            "--listen: expected HOST:PORT whose HOST of digits and dots is an IPv4 address (four numbers 0..255), "
            "got '256.1.1.1:0'"),
      relay("RelayToPortZero", {"--to", "127.0.0.1:0"},
            "--to: expected HOST:PORT (a name, an IPv4 address or [IPv6], and a port from 1 to 65535), got "
            "'127.0.0.1:0'"),
      relay("RelaySpinWord", {"--spin-us", "x"},
            "--spin-us: expected a time in microseconds from 0 to 1000000, got 'x'"),
      relay("RelaySpinNegative", {"--spin-us", "-1"},
            "--spin-us: expected a time in microseconds from 0 to 1000000, got '-1'"),
      relay("RelayIdleExitNaN", {"--idle-exit", "nan"},
            "--idle-exit: expected a time in seconds from 0 to 86400, got 'nan'"),
      relay("RelayUnknownOption", {"--idle", "3"}, "unknown option --idle (see --help)"),
      command_line("RelaySiteLongerThanAFileNameAllows", Program::kRelay,
                   {"CONFIG", "--site", std::string(300, 'r'), "--listen", "127.0.0.1:0", "--to", "127.0.0.1:47000",
                    "--out", "OUT"},
                   "--site: expected a site name of 1 to 128 letters, digits, '_' or '-', got '" +
                       std::string(80, 'r') + "... (300 bytes)'"),
      command_line("RelayWithoutTo", Program::kRelay, {"CONFIG", "--site", "lab", "--listen", "127.0.0.1:0"},
                   "missing --to HOST:PORT (see --help)"),
      command_line("RelayWithoutConfig", Program::kRelay,
                   {"--site", "lab", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:47000"},
                   "missing CONFIG (see --help)"),
      study("StudyJobsNegative", {"--jobs", "-3"},
            "--jobs: expected a whole number of threads from 1 to 1024, got '-3'"),
      study("StudyJobsZero", {"--jobs", "0"}, "--jobs: expected a whole number of threads from 1 to 1024, got '0'"),
      study("StudyJobsWord", {"--jobs", "many"},
            "--jobs: expected a whole number of threads from 1 to 1024, got 'many'"),
      study("StudyShardBackwards", {"--shard", "3/2"},
            "--shard: expected K/N, whole numbers with 1 <= K <= N, got '3/2'"),
      study("StudyShardZero", {"--shard", "0/4"}, "--shard: expected K/N, whole numbers with 1 <= K <= N, got '0/4'"),
      study("StudySetOnTheCommandLine", {"--set", "duration_s=1"},
            "--set: belongs in the study file (set: \"PATH=VALUE\"), not on the command line"),
      study("StudyQuietMisspelt", {"--quite"}, "unknown option --quite (did you mean --quiet?)"),
      command_line("StudyMergeWithoutOut", Program::kStudy, {"merge", "DIR"}, "merge needs --out DIR (see --help)"),
      command_line("StudyJobsForMerge", Program::kStudy, {"merge", "DIR", "--out", "OUT", "--jobs", "2"},
                   "--jobs is an option of run, not of merge (see --help)"),
      command_line("StudyCommandMisspelt", Program::kStudy, {"rn", "STUDY"}, "unknown command rn (did you mean run?)"),
      bench_loop("BenchSecondsNegative", {"--seconds", "-1"},
                 "--seconds: expected a duration in seconds above 0 and up to 86400, got '-1'"),
      bench_loop("BenchRateZero", {"--rate", "0"}, "--rate: expected a rate in Hz above 0 and up to 100000, got '0'"),
      bench_loop("BenchSpinWord", {"--spin-us", "x"},
                 "--spin-us: expected a time in microseconds from 0 to 1000000, got 'x'"),
      bench_loop("BenchPriorityAbove99", {"--priority", "100"},
                 "--priority: expected a SCHED_FIFO priority from 1 to 99, got '100'"),
      bench_loop("BenchCpuNegative", {"--cpu", "-1"}, "--cpu: expected a CPU number from 0 to 1023, got '-1'"),
      bench_loop("BenchLockWithValue", {"--lock=yes"}, "--lock: expected no value, got 'yes'"),
      bench_loop("BenchOperand", {"fast"}, "unexpected argument 'fast' (see --help)"),
  };
}

class Campaign : public test::RunFolderTest, public ::testing::WithParamInterface<BadInput> {
 protected:
  void SetUp() override {
    test::RunFolderTest::SetUp();
    const std::string title = "PEER NGA STRONG MOTION DATABASE RECORD\nTITLE\nACCELERATION TIME SERIES IN UNITS OF G\n";
    const std::vector<std::pair<std::string, std::string>> files{
        {"ok.dat", "0 0.1\n0.01 0.2\n0.02 0.1\n"},
        {"absurd.dat", "0 0.1\n0.01 0.2\n0.02 1e308\n"},
        {"nan.dat", "0 0.1\n0.01 nan\n"},
        {"uneven.dat", "0 0.1\n0.01 0.2\n0.02 0.1\n0.035 0.1\n"},
        // 500 cm/s^2 (0.5 g) read as m/s^2 is 500 m/s^2.
        {"cm.dat", "0 10\n0.01 500\n0.02 10\n"},
        {"ok.AT2", title + "NPTS= 3, DT= .01 SEC\n .1 .2 .1\n"},
        {"huge.AT2", title + "NPTS= 1e96, DT= .01 SEC\n .1 .2 .1\n"},
        {"nan.AT2", title + "NPTS= nan, DT= .01 SEC\n .1 .2 .1\n"},
        {"negative.AT2", title + "NPTS= -3, DT= .01 SEC\n .1 .2 .1\n"},
        {"fraction.AT2", title + "NPTS= 2.5, DT= .01 SEC\n .1 .2 .1\n"},
        {"negdt.AT2", title + "NPTS= 3, DT= -.01 SEC\n .1 .2 .1\n"},
        {"roomless.AT2", title + "NPTS= 4000000, DT= .01 SEC\n .1 .2 .1\n"},
        {"bad_trace.txt", "0.01\n0.02\nfast\n"},
        {"long_line.dat", "0 0.1\n" + std::string(kMaxInputLineBytes + 1, '1') + "\n"},
        {"long_line.AT2", title + "NPTS= 3, DT= .01 SEC\n" + std::string(kMaxInputLineBytes + 1, '1') + "\n"},
        {"m.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 2701\n2 2 2701\n"},
        {"k.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 558343\n2 1 -279171\n2 2 279171\n"},
        {"k.txt", "558343, -279171\n-279171, 279171\n"},
        // The sizes a size line may claim without entries to match.
        {"huge.mtx", "%%MatrixMarket matrix coordinate real symmetric\n200000000 200000000 1\n1 1 1000\n"},
        {"few_m.mtx", "%%MatrixMarket matrix coordinate real symmetric\n900000 900000 1\n1 1 2701\n"},
        {"few_k.mtx", "%%MatrixMarket matrix coordinate real symmetric\n900000 900000 1\n1 1 558343\n"},
        {"over.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n1 1 1\n2 1 1\n2 2 1\n2 2 1\n"},
        {"ok.study",
         "config: \"bad.textproto\"\n"
         "axis { name: \"delay\" path: \"site[0].link.forward.delay_s\" value: [\"0\", \"0.01\"] }\n"},
    };
    for (const auto& [name, text] : files) {
      std::ofstream(dir_ / name) << text;
    }
    write_key_file(dir_ / "console.key");  // a valid console key: the cases that give --console-key
    // 600 MiB without writing them: a sparse file (its size is all a reader's first check sees).
    std::ofstream(dir_ / "huge.dat") << "0 0.1\n";
    fs::resize_file(dir_ / "huge.dat", std::uintmax_t{600} << 20U);
  }

  // A case's text with DIR as this case's folder (expected messages that name a file's full path).
  [[nodiscard]] std::string with_dir(std::string text) const {
    for (auto at = text.find("DIR/"); at != std::string::npos; at = text.find("DIR/", at)) {
      text.replace(at, 3, dir_.string());
    }
    return text;
  }

  [[nodiscard]] std::string resolved(const std::string& arg) const {
    if (arg == "CONFIG") return (dir_ / "bad.textproto").string();
    if (arg == "STUDY") return (dir_ / "ok.study").string();
    if (arg == "OUT") return (dir_ / "out").string();
    if (arg == "KEY") return (dir_ / "console.key").string();
    if (arg == "DIR") return dir_.string();
    if (arg.starts_with("DIR/")) return (dir_ / arg.substr(4)).string();
    return arg;
  }
};

std::vector<std::string> csv_files(const fs::path& dir) {
  std::vector<std::string> found;
  if (fs::exists(dir)) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.path().extension() == ".csv") found.push_back(entry.path().string());
    }
  }
  return found;
}

TEST_P(Campaign, RefusedBeforeMotionWithOneLineNamingTheFieldAndNoRecord) {
  const BadInput& bad = GetParam();
  std::string text = valid_config();
  if (!bad.from.empty()) {
    const auto at = text.find(bad.from);
    ASSERT_NE(at, std::string::npos) << bad.from;
    text.replace(at, bad.from.size(), bad.to);
  }
  std::ofstream(dir_ / "bad.textproto") << text;
  std::vector<std::string> args;
  args.reserve(bad.args.size());
  for (const auto& a : bad.args) args.push_back(resolved(a));
  test::Process process(executable(bad.program), args, dir_ / "case");
  EXPECT_EQ(process.wait(std::chrono::seconds(30)), kExitBadInput) << process.err();
  const std::string err = process.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(with_dir(bad.expected)), std::string::npos) << err;
  EXPECT_EQ(csv_files(dir_), std::vector<std::string>{});
  // Nothing started: the numerical node started no site process (a loopback run's sites log there).
  if (bad.program == Program::kNumerical) {
    EXPECT_FALSE(fs::exists(dir_ / "out/site_lab.log"));
  }
}

INSTANTIATE_TEST_SUITE_P(BadInputs, Campaign, ::testing::ValuesIn(campaign()),
                         [](const ::testing::TestParamInfo<BadInput>& param) { return param.param.name; });

}  // namespace
}  // namespace rths::test_bad_inputs
