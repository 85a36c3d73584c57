#pragma once

#include <Eigen/SparseCore>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rths::config {
class SparseMatrix;
}  // namespace rths::config

namespace rths {

// One entry of a sparse matrix, row and column numbered from 1 (as Matrix Market and the DOFs).
struct MatrixEntry {
  std::uint32_t row;
  std::uint32_t column;
  double value;
};

// A square matrix read from a Matrix Market file (math.nist.gov/MatrixMarket/formats.html, the
// exchange format FE programs export or convert to): every nonzero entry of the full matrix, a
// symmetric file's lower triangle mirrored above the diagonal.
struct SparseEntries {
  std::uint32_t size = 0;
  std::vector<MatrixEntry> entries;
};

// The most DOFs a structure may have (its matrices' size): a hundred times the largest model rths is
// measured with (the 9996-DOF frame, docs/models.md), so that a size line or a `dofs` nobody meant
// is refused before a vector of that size is made.
inline constexpr std::uint32_t kMaxDofs = 1'000'000;

// Reads "%%MatrixMarket matrix coordinate|array real|integer general|symmetric". Anything else
// (complex, pattern, skew-symmetric, a rectangular matrix, an entry outside the matrix or above the
// diagonal of a symmetric file, a value that is not a finite number, fewer or more entries than the
// size line says) throws ConfigError naming the file and line. The size line is checked before
// anything is read on: at most kMaxDofs rows, and no more entries than the matrix (or its lower
// triangle) has. Nothing is sized by the size line: what is kept grows with the entries read.
SparseEntries read_matrix_market(const std::filesystem::path& file);

// The entries as an Eigen matrix (entries given twice are added, as an FE assembly adds its terms);
// each must lie within the matrix.
Eigen::SparseMatrix<double> to_sparse_matrix(const SparseEntries& matrix);
// A config's sparse entries (structure.sparse) as a dofs x dofs Eigen matrix; ConfigError when the
// lists differ in length or an entry lies outside the matrix.
Eigen::SparseMatrix<double> to_sparse_matrix(const config::SparseMatrix& matrix, std::uint32_t dofs);

// Writes `entries` as a coordinate real Matrix Market file (the example generators' and the tests'
// output), every value to 17 significant digits; symmetric: the entries are a symmetric matrix's
// lower triangle, and the file says so.
void write_matrix_market(const std::filesystem::path& file, const SparseEntries& matrix, const std::string& comment,
                         bool symmetric = false);

}  // namespace rths
