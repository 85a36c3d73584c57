// What each DOF and channel is (a translation or a rotation) and the units that follow: the config's
// dof_kind, the DOF map's kind column, the name's rule when neither says; the records' columns (m, rad,
// N, Nm), the report, summary.json and the telemetry columns. The maRTHS example, whose frame has
// 14 joint rotations and a rotational interface channel, shows all of it.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/dof_kind.hpp"
#include "common/core/exit_codes.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/records/telemetry.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/structure/model_ladder.hpp"
#include "support/process.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_dof_kinds {
namespace {

using test::Process;

::testing::AssertionResult has_all(const std::vector<std::string>& header, const std::vector<std::string>& wanted) {
  for (const std::string& w : wanted) {
    if (std::find(header.begin(), header.end(), w) == header.end()) {
      return ::testing::AssertionFailure() << "no column " << w << " in " << ::testing::PrintToString(header);
    }
  }
  return ::testing::AssertionSuccess();
}

// The report's line of one response (its name first), "" when there is none.
std::string report_line(const std::string& out, const std::string& response) {
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    if (line.starts_with(response + " ")) return line;
    at = end + 1;
  }
  return {};
}

TEST(DofKinds, TheNameSaysRotationOnlyForARotationsPrefix) {
  for (const char* rotation : {"rz_c0_s1", "RZ12", "r1", "r1b", "rx", "Ry_3", "theta_3", "thetaz2", "rot4", "r"}) {
    EXPECT_EQ(kind_from_name(rotation), DofKind::kRotation) << rotation;
  }
  for (const char* translation : {"x1", "ux_c0_s1", "uy2", "roof", "floor2", "q7", "rigid1", "rotor", "th1", ""}) {
    EXPECT_EQ(kind_from_name(translation), DofKind::kTranslation) << translation;
  }
}

TEST(DofKinds, AnExplicitKindBeatsTheName) {
  const auto kinds = [](const std::vector<std::string>& overrides) {
    std::vector<std::string> all{R"(structure.dof_name=["r1", "x2"])"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    return dof_kinds(test::load_example("seed002/spring.textproto", all).experiment.structure());
  };
  EXPECT_EQ(kinds({}), (std::vector{DofKind::kRotation, DofKind::kTranslation}));
  EXPECT_EQ(kinds({"structure.dof_kind=[TRANSLATION, ROTATION]"}),
            (std::vector{DofKind::kTranslation, DofKind::kRotation}));
  EXPECT_EQ(kinds({"structure.dof_kind=[DOF_KIND_FROM_NAME, ROTATION]"}),
            (std::vector{DofKind::kRotation, DofKind::kRotation}));
}

// A channel on a rotation is a rotational channel; one on DOFs of both kinds, a spring between
// them, or a dof_kind of the wrong length is refused naming the field.
TEST(DofKinds, AChannelIsItsDofsKindAndMixingKindsIsRefused) {
  const LoadedConfig loaded =
      test::load_example("seed002/spring.textproto", {"structure.dof_kind=[ROTATION, TRANSLATION]"});
  EXPECT_EQ(channel_kinds(loaded.experiment.structure(), loaded.experiment.site(0)), (std::vector{DofKind::kRotation}));
  const auto refused = [](const std::vector<std::string>& overrides, const std::string& part) {
    try {
      (void)test::load_example("seed002/spring.textproto", overrides);
    } catch (const ConfigError& e) {
      return std::string(e.what()).find(part) != std::string::npos
                 ? ::testing::AssertionSuccess()
                 : ::testing::AssertionFailure() << e.what() << "\n  lacks " << part;
    }
    return ::testing::AssertionFailure() << "accepted";
  };
  EXPECT_TRUE(refused({"structure.dof_kind=[ROTATION, TRANSLATION]", "site[0].influence=[-1, 1]"},
                      "site[0].influence: site \"spring\" channel 0 acts on x2 (a translation) and x1 (a rotation)"));
  EXPECT_TRUE(refused({"structure.dof_kind=[ROTATION]"}, "structure.dof_kind: has 1 entries, expected none"));
}

// The DOF map's kind column fills structure.dof_kind; a kind it does not know is refused naming the
// file and line.
TEST(DofKinds, TheDofMapsKindColumnSaysWhatEachDofIs) {
  const test::ScratchFolder dir;
  std::ofstream(dir.path() / "m.csv") << "2701,0\n0,2701\n";
  std::ofstream(dir.path() / "k.csv") << "558343,-279171\n-279171,279171\n";
  const auto with_map = [&](const std::string& map) {
    std::ofstream(dir.path() / "dofs.csv") << map;
    return test::load_example(
        "seed002/spring.textproto",
        {"structure.mass_kg=", "structure.stiffness_n_per_m=", "structure.damping_ns_per_m=",
         "structure.rayleigh={ mode_a: 1 zeta_a: 0.05 mode_b: 2 zeta_b: 0.05 }",
         fmt::format(
             R"(structure.matrix_files={{ mass_path: "{0}/m.csv" stiffness_path: "{0}/k.csv" dof_map_path: "{0}/dofs.csv" }})",
             dir.path().string())});
  };
  const config::Structure s = with_map("dof,name,kind\n1,rz1,translation\n2,x2,rotation\n").experiment.structure();
  ASSERT_EQ(s.dof_kind_size(), 2);
  EXPECT_EQ(dof_kinds(s), (std::vector{DofKind::kTranslation, DofKind::kRotation}));
  // An empty cell: the name decides.
  EXPECT_EQ(dof_kinds(with_map("dof,kind,name\n1,,rz1\n2,,x2\n").experiment.structure()),
            (std::vector{DofKind::kRotation, DofKind::kTranslation}));
  try {
    (void)with_map("dof,kind\n1,twist\n2,\n");
    ADD_FAILURE() << "a kind twist was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find((dir.path() / "dofs.csv").string() +
                                         ":2: kind \"twist\"; expected translation or rotation"),
              std::string::npos)
        << e.what();
  }
}

// rths-numerical model frame says which DOFs are rotations in its DOF map (rz_..., not by name).
TEST(DofKinds, TheGeneratedFramesDofMapSaysWhichDofsAreRotations) {
  const test::ScratchFolder dir;
  write_model(plane_frame(1, 2), dir.path(), "frame",
              (test::data_dir() / "ground_motions/elcentro_1940_ns_g.dat").string(), "a test");
  EXPECT_EQ(test::slurp(dir.path() / "dofs.csv").substr(0, 48), "dof,name,kind,ground_influence,record,interface\n");
  const config::Structure s = load_experiment(dir.path() / "frame.textproto").experiment.structure();
  ASSERT_EQ(s.dof_kind_size(), 12);
  for (int d = 0; d < 12; ++d) {
    EXPECT_EQ(s.dof_kind(d), d % 3 == 2 ? config::ROTATION : config::TRANSLATION) << s.dof_name(d);
  }
}

// Every column of a rotational DOF and channel is in rad, rad/s and N m: numerical.csv, reference.csv
// and the site's site_<name>.csv; summary.json says each response's unit and the report prints mrad
// and N·m.
TEST(DofKinds, ARotationIsRecordedReportedAndSummarisedInRadAndNewtonMetres) {
  const test::ScratchFolder dir;
  Process run("rths-numerical",
              {"run", test::example("seed002/spring.textproto").string(), "--out", (dir.path() / "run").string(),
               "--no-plots", "--set", "duration_s=4", "--set", "structure.dof_kind=[ROTATION, TRANSLATION]"},
              dir.path() / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  const std::vector<std::string> numerical = test::csv_header(dir.path() / "run/numerical.csv");
  EXPECT_TRUE(has_all(numerical, {"x1_rad", "x2_m", "v_x1_rad_per_s", "v_x2_m_per_s", "u_spring_rad", "f_spring_Nm",
                                  "e_spring_Nm", "fm_spring_Nm", "xm_spring_rad"}));
  EXPECT_EQ(test::csv_header(dir.path() / "run/reference.csv"), numerical);
  EXPECT_TRUE(has_all(
      test::csv_header(dir.path() / "run/site_spring.csv"),
      {"target_rad", "target_velocity_rad_per_s", "command_rad", "measured_rad", "force_Nm", "model_error_Nm"}));
  const results::RunSummary summary = test::read_summary(dir.path() / "run/summary.json");
  EXPECT_EQ(summary.responses().at("x1").unit(), "rad");
  EXPECT_EQ(summary.responses().at("x2").unit(), "m");
  EXPECT_EQ(summary.responses().at("f_spring").unit(), "Nm");
  const std::string x1 = report_line(run.out(), "x1");
  EXPECT_NE(x1.find(" mrad "), std::string::npos) << run.out();
  EXPECT_EQ(x1.find("mm"), std::string::npos) << x1;
  EXPECT_NE(report_line(run.out(), "x2").find(" mm "), std::string::npos) << run.out();
  EXPECT_NE(report_line(run.out(), "f_spring").find(" N·m "), std::string::npos) << run.out();
}

// The maRTHS example (its config says which of the frame's 29 equations are rotations): the joint
// rotations in rad, the rotational interface channel in rad and N m, the actuators' strokes in m.
TEST(DofKinds, TheMarthsExampleRecordsRotationsInRadAndMomentsInNewtonMetres) {
  const test::ScratchFolder dir;
  Process run("rths-numerical",
              {"run", test::example("marths/elcentro_rls.textproto").string(), "--out", (dir.path() / "run").string(),
               "--no-plots", "--set", "duration_s=8"},
              dir.path() / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  const std::vector<std::string> header = test::csv_header(dir.path() / "run/numerical.csv");
  EXPECT_TRUE(has_all(
      header, {"x1_m",        "x2_m",         "x3_m",          "q1_m",           "r1_rad",       "r2_rad",
               "r3_rad",      "r1b_rad",      "q2_rad",        "v_r1_rad_per_s", "v_x1_m_per_s", "u_iisl_1_m",
               "f_iisl_1_N",  "e_iisl_1_N",   "fm_iisl_1_N",   "xm_iisl_1_m",    "u_iisl_2_rad", "f_iisl_2_Nm",
               "e_iisl_2_Nm", "fm_iisl_2_Nm", "xm_iisl_2_rad", "st_iisl_a1_m",   "sc_iisl_a2_m", "sm_iisl_a2_m"}));
  int rotations = 0;
  for (const std::string& c : header) rotations += c.ends_with("_rad") ? 1 : 0;
  EXPECT_EQ(rotations, 14 + 2) << "the frame's 14 rotations, the interface's target and measured rotation";
  const results::RunSummary summary = test::read_summary(dir.path() / "run/summary.json");
  EXPECT_EQ(summary.responses().at("r2").unit(), "rad");
  EXPECT_EQ(summary.responses().at("x2").unit(), "m");
  const std::string r2 = report_line(run.out(), "r2");
  EXPECT_NE(r2.find(" mrad "), std::string::npos) << run.out();
  EXPECT_EQ(r2.find("mm"), std::string::npos) << r2;
  EXPECT_NE(report_line(run.out(), "x3").find(" mm "), std::string::npos) << run.out();
}

// The distributed maRTHS site records its rotational channel in rad and N m at the site, too, and
// summary.json's peak measured force (N) leaves its moment out.
TEST(DofKinds, TheDistributedMarthsSiteRecordsItsRotationalChannelInRad) {
  const test::ScratchFolder dir;
  Process run("rths-numerical",
              {"run", test::example("marths/elcentro_distributed.textproto").string(), "--out",
               (dir.path() / "run").string(), "--no-plots", "--set", "duration_s=9"},
              dir.path() / "numerical");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), kExitCompleted) << run.err();
  EXPECT_TRUE(has_all(test::csv_header(dir.path() / "run/site_iisl.csv"),
                      {"target1_m", "force1_N", "target2_rad", "target_velocity2_rad_per_s", "command2_rad",
                       "measured2_rad", "force2_Nm", "model_error2_Nm", "stroke_target_a1_m"}));
  // The site's peak measured force (N) is its force channel's, not the moment's (N m).
  const double force = test::peak(test::csv_column(dir.path() / "run/site_iisl.csv", "force1_N"));
  const double moment = test::peak(test::csv_column(dir.path() / "run/site_iisl.csv", "force2_Nm"));
  ASSERT_GT(moment, force) << "the case must tell the two apart";
  EXPECT_EQ(test::read_summary(dir.path() / "run/summary.json").sites().at("iisl").measured_force_peak_n(), force);
}

// The telemetry names a record's columns as its CSV header does: a rotation in rad, its rate in rad/s
// (the frame's first columns: a datagram holds what fits of 207).
TEST(DofKinds, TelemetryColumnsCarryTheKindsUnits) {
  const LoadedConfig loaded = test::load_example("marths/elcentro_rls.textproto", {"duration_s=0.01"});
  Experiment experiment(loaded);
  (void)experiment.run();
  TelemetryOptions options;
  options.console = "127.0.0.1:9";
  const std::array<unsigned char, SecretKey::kBytes> bytes{1, 2, 3};  // the frames' key: any
  options.key = SecretKey(bytes);
  TelemetryPublisher publisher("numerical", options);
  publisher.add_stream("numerical", experiment.numerical());
  const std::string datagram = publisher.datagram(0);
  for (const char* column : {R"("r1_rad")", R"("x1_m")", R"("q2_rad")", R"("v_q2_rad_per_s")", R"("v_q4_m_per_s")"}) {
    EXPECT_NE(datagram.find(column), std::string::npos) << column << " in " << datagram;
  }
}

}  // namespace
}  // namespace rths::test_dof_kinds
