// Structures at an FE model's size: Matrix Market files, sparse structures in the config and their
// validation, and a sparse run against the same structure held dense.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/dynamics/matrix_market.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/structure/structure.hpp"
#include "support/allocation_ceiling.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_sparse_structure {
namespace {

void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file) << text;
}

// The message a Matrix Market file is refused with ("" and a failure when it is read).
std::string market_error(const test::ScratchFolder& dir, const std::string& text) {
  const auto file = dir.path() / "m.mtx";
  write(file, text);
  return test::error_of<ConfigError>([&] { (void)read_matrix_market(file); }, "read:\n" + text);
}

TEST(MatrixMarket, ASymmetricCoordinateFileGivesTheFullMatrixWithItsLowerTriangleMirrored) {
  const test::ScratchFolder dir;
  write(dir.path() / "k.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n\n3 3 4\n1 1 2.5\n2 1 -1\n2 2 2\n3 3 1e3\n");
  const SparseEntries k = read_matrix_market(dir.path() / "k.mtx");
  EXPECT_EQ(k.size, 3U);
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(3, 3);
  for (const MatrixEntry& e : k.entries) dense(e.row - 1, e.column - 1) += e.value;
  const Eigen::Matrix3d expected{{2.5, -1.0, 0.0}, {-1.0, 2.0, 0.0}, {0.0, 0.0, 1000.0}};
  EXPECT_EQ(dense, Eigen::MatrixXd(expected));
  EXPECT_EQ(k.entries.size(), 5U);  // the off-diagonal entry twice, nothing else added
}

TEST(MatrixMarket, AnArrayFileListsColumnsTopToBottom) {
  const test::ScratchFolder dir;
  write(dir.path() / "g.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n3\n2\n4\n");
  write(dir.path() / "s.mtx", "%%MatrixMarket matrix array real symmetric\n2 2\n5\n6\n7\n");
  Eigen::Matrix2d g = Eigen::Matrix2d::Zero();
  for (const MatrixEntry& e : read_matrix_market(dir.path() / "g.mtx").entries) g(e.row - 1, e.column - 1) = e.value;
  EXPECT_EQ(g, (Eigen::Matrix2d{{1.0, 2.0}, {3.0, 4.0}}));
  Eigen::Matrix2d s = Eigen::Matrix2d::Zero();
  for (const MatrixEntry& e : read_matrix_market(dir.path() / "s.mtx").entries) s(e.row - 1, e.column - 1) = e.value;
  EXPECT_EQ(s, (Eigen::Matrix2d{{5.0, 6.0}, {6.0, 7.0}}));
}

TEST(MatrixMarket, WhatItWritesItReadsBackExactly) {
  const test::ScratchFolder dir;
  SparseEntries m{3, {{1, 1, 1.0 / 3.0}, {3, 2, -2e-17}, {2, 3, 123456789.123456789}}};
  write_matrix_market(dir.path() / "w.mtx", m, "written by a test");
  const SparseEntries back = read_matrix_market(dir.path() / "w.mtx");
  ASSERT_EQ(back.entries.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.entries[i].row, m.entries[i].row);
    EXPECT_EQ(back.entries[i].column, m.entries[i].column);
    EXPECT_EQ(back.entries[i].value, m.entries[i].value);
  }
}

// Each bad file is refused naming the file, the line and what is wrong.
TEST(MatrixMarket, EveryBadFileIsRefusedNamingItsLine) {
  const test::ScratchFolder dir;
  const std::string f = (dir.path() / "m.mtx").string();
  EXPECT_EQ(market_error(dir, "1 2 3\n"),
            f + ":1: \"1 2 3\" is not a Matrix Market header; expected \"%%MatrixMarket matrix coordinate real "
                "symmetric\" or similar");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n"),
            f + ":1: field \"complex\"; expected real or integer (a structural matrix has real values)");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real skew-symmetric\n"),
            f + ":1: symmetry \"skew-symmetric\"; expected general or symmetric");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n% c\n2 3 1\n1 1 1\n"),
            f + ":3: the matrix is 2 x 3; expected a square structural matrix");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 1\n"),
            f + ":4: entry (3, 1) is outside the 2 x 2 matrix");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 1\n1 2 1\n"),
            f + ":4: entry (1, 2) is above the diagonal of a symmetric file, which holds the lower triangle only");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 nan\n"),
            f + ":3: value \"nan\" is not a finite number");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n"),
            f + ":4: the file ends after 2 entries; the size line (line 2) declares 3");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n"),
            f + ":4: an entry beyond the 1 the size line (line 2) declares");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n"),
            f + ":3: expected \"row column value\"");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n1 1 2\n"),
            f + ":5: entry (1, 1) again (first on line 3); expected each entry once");
}

// The size line is a claim, checked before anything is read on: at most kMaxDofs rows, and no more
// entries than the matrix has.
TEST(MatrixMarket, TheSizeLineIsBoundedByWhatAMatrixCanHold) {
  const test::ScratchFolder dir;
  const std::string f = (dir.path() / "m.mtx").string();
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real symmetric\n200000000 200000000 1\n1 1 1\n"),
            f + ":2: the matrix is 200000000 x 200000000; expected at most 1000000 DOFs");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n1000001 1000001 1\n1 1 1\n"),
            f + ":2: the matrix is 1000001 x 1000001; expected at most 1000000 DOFs");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n1 1 1\n"),
            f + ":2: declares 4 entries, more than the 3 a 2 x 2 symmetric (lower triangle) matrix has");
  EXPECT_EQ(market_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 5\n1 1 1\n"),
            f + ":2: declares 5 entries, more than the 4 a 2 x 2 general matrix has");
  // The largest size is read (a 1000000-DOF diagonal would be a model; here one entry of it).
  write(dir.path() / "big.mtx", "%%MatrixMarket matrix coordinate real general\n1000000 1000000 1\n1 1 1\n");
  EXPECT_EQ(read_matrix_market(dir.path() / "big.mtx").size, 1000000U);
}

// ---------------------------------------------------------------------------------------------
// Sparse structures in the config

// The seed 002 example with its structure from the given matrix files (absolute paths), written to dir.
std::filesystem::path seed002_with_files(const std::filesystem::path& dir, const std::string& matrix_files,
                                         const std::string& integrator = "RK4") {
  std::ifstream in(test::example("seed002/damper_3v.textproto"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto begin = text.find("structure {");
  const auto end = text.find("ground_motion {");
  text.replace(begin, end - begin, "structure { matrix_files { " + matrix_files + " } }\n\n");
  const auto data = text.find("../data/");
  text.replace(data, 8, (test::source_dir() / "examples/data").string() + "/");
  const auto rk4 = text.find("integrator: RK4");
  text.replace(rk4, 15, "integrator: " + integrator);
  const auto file = dir / "config.textproto";
  write(file, text);
  return file;
}

// The matrix_files fields naming dir's m.mtx, k.mtx and, with damping, c.mtx.
std::string matrix_files_in(const std::filesystem::path& dir, bool damping) {
  std::string files =
      "mass_path: \"" + (dir / "m.mtx").string() + "\" stiffness_path: \"" + (dir / "k.mtx").string() + "\"";
  if (damping) files += " damping_path: \"" + (dir / "c.mtx").string() + "\"";
  return files;
}

void write_seed002_matrices(const std::filesystem::path& dir) {
  write(dir / "m.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 2701\n2 2 2701\n");
  write(dir / "k.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 558343\n2 1 -279171\n2 2 279171\n");
  write(dir / "c.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 3684\n2 1 -1228\n2 2 2456\n");
}

TEST(SparseStructure, MatrixMarketFilesMakeASparseStructureInline) {
  const test::ScratchFolder dir;
  write_seed002_matrices(dir.path());
  const std::string files = matrix_files_in(dir.path(), true);
  const LoadedConfig loaded = load_experiment(seed002_with_files(dir.path(), files));
  const config::Structure& s = loaded.experiment.structure();
  EXPECT_FALSE(s.has_matrix_files());
  EXPECT_EQ(s.dofs(), 2U);
  ASSERT_TRUE(s.has_sparse());
  EXPECT_EQ(s.sparse().mass_kg().value_size(), 2);
  EXPECT_EQ(s.sparse().stiffness_n_per_m().value_size(), 4);
  EXPECT_EQ(s.mass_kg_size(), 0);
  const StructuralModel model = make_structure(s);
  ASSERT_TRUE(model.is_sparse());
  EXPECT_EQ(Eigen::MatrixXd(model.sparse_damping), (Eigen::Matrix2d{{3684.0, -1228.0}, {-1228.0, 2456.0}}));
}

// The seed 002 hybrid run with its frame read sparse is the inline dense run, to rounding, for the
// explicit RTHS integrators and RK4.
// A size line that its entries do not bear out (a typo, a corrupt export: 200 000 000 or 900 000 DOFs
// with one entry) is refused from the files themselves, before anything of that size is made: every
// DOF needs a diagonal entry in the stiffness or the mass. Under a ceiling of 16 MiB per allocation
// (test::AllocationCeiling) the load must end in that ConfigError; the files once took 62 s and 8 GB
// to end in std::bad_alloc.
TEST(SparseStructure, ASizeLineTheEntriesDoNotBearOutIsRefusedBeforeAnythingOfItsSizeIsMade) {
  const test::ScratchFolder dir;
  write(dir.path() / "dofs.csv", "dof,name\n1,x1\n2,x2\n");
  const std::string header = "%%MatrixMarket matrix coordinate real symmetric\n";
  for (const char* size : {"900000", "1000000"}) {
    write(dir.path() / "m.mtx", header + size + " " + size + " 1\n1 1 2701\n");
    write(dir.path() / "k.mtx", header + size + " " + size + " 2\n1 1 558343\n2 2 279171\n");
    const std::filesystem::path config =
        seed002_with_files(dir.path(), matrix_files_in(dir.path(), false) + " dof_map_path: \"" +
                                           (dir.path() / "dofs.csv").string() + "\"");
    const test::AllocationCeiling ceiling(16U << 20U);
    try {
      (void)load_experiment(config);
      ADD_FAILURE() << "loaded a " << size << "-DOF structure of two DOFs' entries";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()),
                config.string() + ": structure.matrix_files.stiffness_path: the matrices are " + size + " x " + size +
                    ", but 2 of those DOFs have a diagonal entry in the stiffness or the mass (DOF 3 has neither); "
                    "expected every DOF with stiffness or mass (a DOF with neither has no equation), and a size line "
                    "that counts the structure's DOFs");
    } catch (const std::bad_alloc&) {
      ADD_FAILURE() << "a " << size << "-DOF size line made something of its size before it was refused";
    }
  }
}

TEST(SparseStructure, TheSeed002RunFromSparseFilesIsTheDenseRun) {
  const test::ScratchFolder dir;
  write_seed002_matrices(dir.path());
  const std::string files = matrix_files_in(dir.path(), true);
  for (const std::string integrator : {"RK4", "CHEN_RICLES", "KR_ALPHA"}) {
    Experiment sparse(load_experiment(seed002_with_files(dir.path(), files, integrator)));
    Experiment dense(test::load_example("seed002/damper_3v.textproto", {"integrator=" + integrator}));
    const RunReport& a = sparse.run();
    const RunReport& b = dense.run();
    EXPECT_NEAR(a.response("x2").peak, b.response("x2").peak, 1e-9 * b.response("x2").peak) << integrator;
    EXPECT_NEAR(a.response("x1").reference_peak, b.response("x1").reference_peak,
                1e-9 * b.response("x1").reference_peak)
        << integrator;
  }
}

// What validation says of a sparse structure's matrices, each naming the field.
std::string sparse_error(const test::ScratchFolder& dir, const std::string& mass, const std::string& stiffness,
                         const std::string& integrator = "RK4") {
  write(dir.path() / "m.mtx", mass);
  write(dir.path() / "k.mtx", stiffness);
  const std::string files = matrix_files_in(dir.path(), false);
  return test::error_of<ConfigError>([&] { (void)load_experiment(seed002_with_files(dir.path(), files, integrator)); },
                                     "the sparse structure was accepted");
}

using test::contains;

TEST(SparseStructure, ValidationNamesTheMatrixAndWhatIsWrong) {
  const test::ScratchFolder dir;
  const std::string mass = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 2701\n2 2 2701\n";
  const std::string stiffness =
      "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 558343\n2 1 -279171\n2 2 279171\n";
  EXPECT_TRUE(contains(
      sparse_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 2701\n2 2 2701\n1 2 5\n", stiffness),
      "structure.sparse.mass_kg: is not symmetric: entry (row 2, column 1) is 0 but (row 1, column "
      "2) is 5"));
  EXPECT_TRUE(contains(sparse_error(dir, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 2701\n", stiffness),
                       "structure.sparse.mass_kg: is singular; expected a symmetric positive-definite mass matrix"));
  EXPECT_TRUE(
      contains(sparse_error(dir, mass,
                            "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 1000\n2 1 -2000\n2 2 1000\n"),
               "structure.sparse.stiffness_n_per_m: has a negative eigenvalue"));
  // Indefinite with a zero first pivot ([[0, 1], [1, 0]]: eigenvalues +-1), which an unshifted LDL^T
  // breaks down on rather than showing a negative pivot.
  EXPECT_TRUE(contains(sparse_error(dir, mass, "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n2 1 1000\n"),
                       "structure.sparse.stiffness_n_per_m: has a negative eigenvalue"));
  // Semi-definite (a free body: [[1, -1], [-1, 1]]) and zero damping are allowed.
  write(dir.path() / "c.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 1 0\n");
  write(dir.path() / "m.mtx", mass);
  write(dir.path() / "k.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 1000\n2 1 -1000\n2 2 1000\n");
  EXPECT_NO_THROW((void)load_experiment(seed002_with_files(dir.path(), matrix_files_in(dir.path(), true))));
  EXPECT_TRUE(contains(sparse_error(dir, mass, stiffness, "NEWMARK_AVERAGE_ACCELERATION"),
                       "integrator: is NEWMARK_AVERAGE_ACCELERATION, which steps dense models only"));
  EXPECT_TRUE(contains(sparse_error(dir, mass, "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 1 5\n"),
                       "structure.matrix_files.stiffness_path: " + (dir.path() / "k.mtx").string() +
                           " is 3 x 3, the mass matrix 2 x 2; expected the same size"));
  EXPECT_TRUE(contains(sparse_error(dir, mass, "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n3 1 5\n"),
                       "structure.matrix_files.stiffness_path: " + (dir.path() / "k.mtx").string() +
                           ":3: entry (3, 1) is outside the 2 x 2 matrix"));
}

// Rayleigh damping of a sparse model from its lowest modes (Lanczos above 200 DOFs) is the dense
// model's: zeta at both modes, to the solver's tolerance.
TEST(SparseStructure, RayleighDampingOfALargeSparseModelMatchesTheDenseOne) {
  constexpr Eigen::Index kDofs = 300;
  Eigen::MatrixXd mass = 2.0e4 * Eigen::MatrixXd::Identity(kDofs, kDofs);
  Eigen::MatrixXd stiffness = Eigen::MatrixXd::Zero(kDofs, kDofs);
  for (Eigen::Index i = 0; i < kDofs; ++i) {
    stiffness(i, i) = i + 1 < kDofs ? 6.0e7 : 3.0e7;
    if (i + 1 < kDofs) stiffness(i, i + 1) = stiffness(i + 1, i) = -3.0e7;
  }
  const Eigen::MatrixXd dense = rayleigh_damping(mass, stiffness, 1, 0.02, 5, 0.05);
  const Eigen::SparseMatrix<double> sparse =
      rayleigh_damping(Eigen::SparseMatrix<double>(mass.sparseView()),
                       Eigen::SparseMatrix<double>(stiffness.sparseView()), 1, 0.02, 5, 0.05);
  EXPECT_LT((Eigen::MatrixXd(sparse) - dense).cwiseAbs().maxCoeff(), 1e-8 * dense.cwiseAbs().maxCoeff());
}

}  // namespace
}  // namespace rths::test_sparse_structure
