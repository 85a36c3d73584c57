// The maRTHS benchmark's frame as rths builds it (examples/marths): the reference model read from the
// package's SAP2000 export, its modes with the massless rotations condensed out, the experimental
// frame's share removed from it (seed 000 Eq. 5), and Newmark stepping massless DOFs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <vector>

#include <Eigen/Dense>

#include "common/config/config.hpp"
#include "common/dynamics/eigen_problems.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_numerical/structure/structure.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_marths_structure {
namespace {

namespace fs = std::filesystem;
const char* const kExample = "marths/elcentro_rls.textproto";

TEST(MarthsStructure, ReferenceModesAreThePapers) {
  // Seed 000 §2.1 lists the reference's first five natural frequencies to two decimals: 2.29, 12.74,
  // 26.28, 26.53, 29.91 Hz. The package's matrices give them within 0.01 Hz (12.748 is printed 12.74).
  const LoadedConfig loaded = test::load_example(kExample);
  const StructuralModel whole = make_whole_structure(loaded.experiment.structure());
  ASSERT_EQ(whole.dofs(), 29);
  const Eigen::VectorXd f = squared_frequencies(whole.mass, whole.stiffness).cwiseSqrt() / (2 * std::numbers::pi);
  const double paper[] = {2.29, 12.74, 26.28, 26.53, 29.91};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(f(i), paper[i], 0.01) << "mode " << i + 1;
  // The acceptance bound: the first within 2 % of the paper's.
  EXPECT_NEAR(f(0), 2.29, 0.02 * 2.29);
  std::printf("[ measured ] reference natural frequencies %.4f %.4f %.4f %.4f %.4f Hz\n", f(0), f(1), f(2), f(3), f(4));
}

TEST(MarthsStructure, TheExperimentalFrameIsRemovedOnItsEquationsOnly) {
  const LoadedConfig loaded = test::load_example(kExample);
  const config::Structure& spec = loaded.experiment.structure();
  const StructuralModel whole = make_whole_structure(spec);
  const StructuralModel numerical = make_structure(spec);
  // The 3-DOF frame of the package's build_physical_ideal.m, computed here from its section
  // properties: x27, theta29, theta21.
  const double inch = 0.0254;
  const double e = 200e9;
  const double lb = 0.762;
  const double lc = 0.635;
  const double ic = 2.520 * std::pow(inch, 4);
  const double ib = 0.6132 * std::pow(inch, 4);
  Eigen::Matrix3d kp;
  kp << 6 * e * ic / std::pow(lc, 3), -3 * e * ic / (lc * lc), -3 * e * ic / (lc * lc),  //
      -3 * e * ic / (lc * lc), 3 * e * ic / lc + 4 * e * ib / lb, -2 * e * ib / lb,      //
      -3 * e * ic / (lc * lc), -2 * e * ib / lb, 3 * e * ic / lc + 4 * e * ib / lb;
  const double rho = 785e3;  // the package's (sic)
  const double mb = rho * 0.947 * inch * inch * lb;
  const double mc = rho * 1.670 * inch * inch * lc;
  const double m1 = mb + mc;
  const double m2 = mb / 2 * lb * lb / 12 + mc / 2 * lc * lc / 12;
  const Eigen::Matrix3d mp = Eigen::Vector3d(m1, m2, m2).asDiagonal();
  // Rayleigh, 5 % at that frame's modes 1 and 3.
  const Eigen::VectorXd squared = generalized_symmetric_eigen(kp, mp, false).values;
  const double w1 = std::sqrt(squared(0));
  const double w3 = std::sqrt(squared(2));
  const double a1 = 2 * 0.05 / (w1 + w3);
  const double a0 = a1 * w1 * w3;
  const Eigen::Matrix3d cp = a0 * mp + a1 * kp;

  const std::vector<Eigen::Index> eq{26, 28, 20};  // 27, 29, 21 from 0
  Eigen::MatrixXd dk = whole.stiffness - numerical.stiffness;
  Eigen::MatrixXd dc = whole.damping - numerical.damping;
  Eigen::MatrixXd dm = whole.mass - numerical.mass;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(dk(eq[i], eq[j]), kp(i, j), 1e-9 * kp.norm()) << i << "," << j;
      EXPECT_NEAR(dc(eq[i], eq[j]), cp(i, j), 1e-9 * cp.norm()) << i << "," << j;
    }
  }
  // Only the lateral mass is removed (the package zeroes the frame's rotational masses).
  EXPECT_NEAR(dm(26, 26), m1, 1e-9 * m1);
  dk(eq, eq).setZero();
  dc(eq, eq).setZero();
  dm(26, 26) = 0;
  EXPECT_EQ(dk.cwiseAbs().maxCoeff(), 0.0) << "stiffness changed off the frame's equations";
  EXPECT_EQ(dc.cwiseAbs().maxCoeff(), 0.0) << "damping changed off the frame's equations";
  EXPECT_EQ(dm.cwiseAbs().maxCoeff(), 0.0) << "mass changed off the frame's equations";
}

TEST(MarthsStructure, NewmarkStepsMasslessDofsAsTheirStaticCondensation) {
  // Undamped, the massless rotations carry neither inertia nor damping: each step ends with them in
  // static equilibrium, so Newmark on the 29 equations must give the floors exactly what Newmark gives
  // on the statically condensed model of the DOFs with mass (an independent integration).
  const LoadedConfig loaded = test::load_example(kExample, {"structure.rayleigh="});
  StructuralModel whole = make_whole_structure(loaded.experiment.structure());
  std::vector<Eigen::Index> t;
  std::vector<Eigen::Index> o = massless_dofs(whole.mass);
  for (Eigen::Index i = 0; i < whole.dofs(); ++i) {
    if (!std::binary_search(o.begin(), o.end(), i)) t.push_back(i);
  }
  ASSERT_FALSE(o.empty());
  StructuralModel condensed;
  condensed.mass = whole.mass(t, t);
  condensed.stiffness =
      whole.stiffness(t, t) - whole.stiffness(t, o) * whole.stiffness(o, o).ldlt().solve(whole.stiffness(o, t));
  condensed.damping = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(t.size()), static_cast<Eigen::Index>(t.size()));
  condensed.ground_influence = whole.ground_influence(t);

  const double dt = 1.0 / 1024;
  std::vector<double> record(2048);
  for (std::size_t i = 0; i < record.size(); ++i) {
    record[i] = std::sin(2 * std::numbers::pi * 2.3 * 0.005 * static_cast<double>(i));
  }
  const GroundMotion ground(record, 0.005, "2.3 Hz sine");
  const auto full = make_newmark(whole, dt);
  const auto reduced = make_newmark(condensed, dt);
  StructuralState a{Eigen::VectorXd::Zero(whole.dofs()), Eigen::VectorXd::Zero(whole.dofs()),
                    Eigen::VectorXd::Zero(whole.dofs())};
  StructuralState b{Eigen::VectorXd::Zero(condensed.dofs()), Eigen::VectorXd::Zero(condensed.dofs()),
                    Eigen::VectorXd::Zero(condensed.dofs())};
  const Eigen::VectorXd fa = Eigen::VectorXd::Zero(whole.dofs());
  const Eigen::VectorXd fb = Eigen::VectorXd::Zero(condensed.dofs());
  full->initialise(a, fa, ground, 0.0);
  reduced->initialise(b, fb, ground, 0.0);
  double peak = 0;
  double worst = 0;
  for (int k = 0; k < 5 * 1024; ++k) {
    full->step(a, fa, ground, k * dt, dt);
    reduced->step(b, fb, ground, k * dt, dt);
    peak = std::max(peak, b.displacement.cwiseAbs().maxCoeff());
    worst = std::max(worst, (Eigen::VectorXd(a.displacement(t)) - b.displacement).cwiseAbs().maxCoeff());
  }
  ASSERT_GT(peak, 1e-4);
  EXPECT_LT(worst, 1e-9 * peak) << "peak " << peak;
}

class MatrixFilesTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.path() / name) << text;
    return dir_.path() / name;
  }
  std::string load_error(const std::string& mass_text, const std::string& stiffness_text) {
    write("m.csv", mass_text);
    write("k.csv", stiffness_text);
    const fs::path cfg =
        write("c.textproto", R"(structure { matrix_files { mass_path: "m.csv" stiffness_path: "k.csv" } }
ground_motion { synthetic { duration_s: 1 } }
site { name: "s" placement: LOCAL influence: [1, 0] channel { specimen { spring { stiffness_n_per_m: 1 } } } })");
    try {
      load_experiment(cfg);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return {};
  }
  test::ScratchFolder dir_{"matrix_files"};
};

TEST_F(MatrixFilesTest, AreReadWithCrlfAndDropTheirPaths) {
  write("m.csv", "2,0\r\n0,3\r\n");
  write("k.csv", "5,-1\r\n-1,4\r\n");
  const fs::path cfg = write("c.textproto", R"(structure { matrix_files { mass_path: "m.csv" stiffness_path: "k.csv" } }
ground_motion { synthetic { duration_s: 1 } }
site { name: "s" placement: LOCAL influence: [1, 0] channel { specimen { spring { stiffness_n_per_m: 1 } } } })");
  const LoadedConfig loaded = load_experiment(cfg);
  const config::Structure& s = loaded.experiment.structure();
  EXPECT_EQ(s.dofs(), 2U);
  EXPECT_EQ(std::vector<double>(s.mass_kg().begin(), s.mass_kg().end()), (std::vector<double>{2, 0, 0, 3}));
  EXPECT_EQ(std::vector<double>(s.stiffness_n_per_m().begin(), s.stiffness_n_per_m().end()),
            (std::vector<double>{5, -1, -1, 4}));
  EXPECT_FALSE(s.has_matrix_files()) << "the run folder's config must hold the matrices, not paths";
}

TEST_F(MatrixFilesTest, ABadFileIsNamedWithItsLine) {
  EXPECT_NE(load_error("2,0\n0\n", "5,-1\n-1,4\n").find("m.csv:2: has 1 values, expected 2"), std::string::npos)
      << load_error("2,0\n0\n", "5,-1\n-1,4\n");
  EXPECT_NE(load_error("2,0\n0,x\n", "5,-1\n-1,4\n").find("m.csv:2: value 2 is \"x\""), std::string::npos);
  EXPECT_NE(load_error("2,0\n0,3\n", "5,-1,0\n-1,4,0\n").find("expected a square matrix"), std::string::npos);
  EXPECT_NE(load_error("2,0\n0,3\n", "5,-1\n-1,4\n2,2\n").find("expected a square matrix"), std::string::npos);
  EXPECT_NE(load_error("1,0,0\n0,1,0\n0,0,1\n", "5,-1\n-1,4\n").find("expected the same size"), std::string::npos);
  EXPECT_NE(load_error("2,0\n0,nan\n", "5,-1\n-1,4\n").find("expected a finite number"), std::string::npos);
}

}  // namespace
}  // namespace rths::test_marths_structure

namespace rths::test_marths_structure {
namespace {

// Every rule of a multi-axial site names its field and what was expected (exit code 2 at the command
// line), applied to the benchmark's example by one override each.
struct BadMultiAxial {
  const char* name;
  std::vector<std::string> overrides;
  const char* expected;  // a part of the one-line error
};

class MarthsConfig : public ::testing::TestWithParam<BadMultiAxial> {};

// A valid 2-DOF frame prediction model (unit mass and stiffness, no damping).
const char* const kFramePrediction =
    "site[iisl].compensation.frame_prediction={ dofs: 2 mass_kg: [1, 0, 0, 1] damping_ns_per_m: [0, 0, 0, 0] "
    "stiffness_n_per_m: [1, 0, 0, 1] }";

TEST_P(MarthsConfig, IsRefusedNamingTheFieldAndWhatWasExpected) {
  std::string error;
  try {
    test::load_example(kExample, GetParam().overrides);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find(GetParam().expected), std::string::npos) << "error: " << error;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, MarthsConfig,
    ::testing::Values(
        BadMultiAxial{"NoSetup", {"site[iisl].setup="}, "site[0].actuator_plant: needs the site's setup"},
        BadMultiAxial{"RemoteWithoutFramePrediction",
                      {"site[iisl].placement=REMOTE"},
                      "site[0].compensation.frame_prediction: missing; a REMOTE multi-axial site"},
        BadMultiAxial{"RemoteClassicSmith",
                      {"site[iisl].placement=REMOTE", "site[iisl].compensation.mode=CLASSIC_SMITH"},
                      "site[0].compensation.mode: is CLASSIC_SMITH on a multi-axial site"},
        BadMultiAxial{"FramePredictionOnALocalSite", {kFramePrediction}, "frame_prediction: is given on a LOCAL site"},
        BadMultiAxial{"FramePredictionWithoutModifiedSmith",
                      {"site[iisl].placement=REMOTE", "site[iisl].compensation.mode=NONE", kFramePrediction},
                      "a frame prediction model is the modified Smith predictor's"},
        BadMultiAxial{"FramePredictionBesideAChannelPrediction",
                      {"site[iisl].placement=REMOTE", kFramePrediction,
                       "site[iisl].channel[1].prediction={ spring { stiffness_n_per_m: 1 } }"},
                      "site[0].channel[1].prediction: is given with compensation.frame_prediction"},
        BadMultiAxial{
            "FramePredictionTooSmall",
            {"site[iisl].placement=REMOTE", kFramePrediction, "site[iisl].compensation.frame_prediction.dofs=1"},
            "site[0].compensation.frame_prediction.dofs"},
        BadMultiAxial{"DelayGuardOnAMultiAxialSite",
                      {"site[iisl].placement=REMOTE", kFramePrediction, "site[iisl].delay_guard={ }"},
                      "site[0].delay_guard: is given on a multi-axial site"},
        BadMultiAxial{"UnknownEvaluationDof", {"site[iisl].evaluation_dof=[\"x9\"]"}, "\"x9\" is not a DOF"},
        BadMultiAxial{"OneControllerForTwoActuators",
                      {"site[iisl].actuator_controller={ decentralised { actuator { } } }"},
                      "expected one per actuator of the setup (2)"},
        BadMultiAxial{"NoForceModel", {"site[iisl].force_model="}, "has no load cells: expected force_model"},
        BadMultiAxial{"NegativeRoot",
                      {"site[iisl].actuator_plant.two_actuator_frame.a1_rad_per_s=-1"},
                      "a1_rad_per_s: is -1, expected a root magnitude > 0 rad/s"},
        BadMultiAxial{
            "SeedZero", {"site[iisl].actuator_plant.two_actuator_frame.uncertainty.seed=0"}, "expected a seed from 1"},
        BadMultiAxial{"ForceNoise", {"site[iisl].actuator_plant.noise.force_sd_n=1"}, "measures no force"},
        BadMultiAxial{"UkfAlpha", {"site[iisl].actuator_controller={ ukf { alpha: 0 } }"}, "ukf.alpha: is 0"},
        BadMultiAxial{"SpecimenBesideTheForceModel",
                      {"site[iisl].channel[0].specimen={ spring { stiffness_n_per_m: 1 } }"},
                      "the site's force_model gives its forces"},
        BadMultiAxial{"ForceModelTooSmall", {"site[iisl].force_model.dofs=1"}, "site[0].force_model.dofs"},
        BadMultiAxial{"EquationTwice", {"structure.removed[0].equation=[27, 27, 21]"}, "expected each equation once"},
        BadMultiAxial{"EquationBeyond",
                      {"structure.removed[0].equation=[27, 29, 30]"},
                      "expected an equation from 1 to dofs = 29"},
        BadMultiAxial{
            "MasslessDofsNeedNewmark", {"integrator=RK4"}, "expected integrator: NEWMARK_AVERAGE_ACCELERATION"},
        BadMultiAxial{"CouplerAngle", {"site[iisl].setup.rigid_coupler.angle_deg=0"}, "expected 1 to 89"}),
    [](const auto& rule) { return std::string(rule.param.name); });

}  // namespace
}  // namespace rths::test_marths_structure
