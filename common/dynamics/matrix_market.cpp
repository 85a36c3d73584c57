#include "common/dynamics/matrix_market.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>
#include <unordered_map>

#include "common/core/config_error.hpp"
#include "common/core/input_file.hpp"
#include "common/core/text_lines.hpp"
#include "experiment.pb.h"

namespace rths {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The whitespace-separated words of a line.
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) != 0) ++i;
    const std::size_t start = i;
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) == 0) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <typename T>
bool parse(std::string_view word, T& value) {
  const auto [ptr, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  return error == std::errc() && ptr == word.data() + word.size();
}

}  // namespace

SparseEntries read_matrix_market(const std::filesystem::path& file) {
  TextLines lines(read_text_file(file));
  const std::string name = file.string();
  const auto fail = [&](std::size_t line, const std::string& what) {
    return ConfigError(fmt::format("{}:{}: {}", name, line, what));
  };
  std::string_view line;
  if (!lines.next(line)) throw ConfigError(fmt::format("{}: is empty, expected a Matrix Market file", name));
  const std::vector<std::string_view> banner = words(line);
  if (banner.size() != 5 || lower(banner[0]) != "%%matrixmarket" || lower(banner[1]) != "matrix") {
    throw fail(1, fmt::format("\"{}\" is not a Matrix Market header; expected \"%%MatrixMarket matrix coordinate real "
                              "symmetric\" or similar",
                              line));
  }
  const std::string format = lower(banner[2]);
  const std::string field = lower(banner[3]);
  const std::string symmetry = lower(banner[4]);
  if (format != "coordinate" && format != "array") {
    throw fail(1, fmt::format("format \"{}\"; expected coordinate or array", banner[2]));
  }
  if (field != "real" && field != "integer" && field != "double") {
    throw fail(1,
               fmt::format("field \"{}\"; expected real or integer (a structural matrix has real values)", banner[3]));
  }
  if (symmetry != "general" && symmetry != "symmetric") {
    throw fail(1, fmt::format("symmetry \"{}\"; expected general or symmetric", banner[4]));
  }
  const bool symmetric = symmetry == "symmetric";

  // The size line, after comments and blank lines.
  std::vector<std::string_view> size_words;
  while (lines.next(line)) {
    if (line.empty() || line.front() == '%') continue;
    size_words = words(line);
    if (!size_words.empty()) break;
  }
  const std::size_t size_line = lines.number();
  const std::size_t expected_words = format == "coordinate" ? 3 : 2;
  std::uint32_t rows = 0;
  std::uint32_t columns = 0;
  std::uint64_t declared = 0;
  if (size_words.size() != expected_words || !parse(size_words[0], rows) || !parse(size_words[1], columns) ||
      (format == "coordinate" && !parse(size_words[2], declared))) {
    throw fail(size_line, format == "coordinate" ? "expected the size line \"rows columns entries\""
                                                 : "expected the size line \"rows columns\"");
  }
  if (rows == 0 || rows != columns) {
    throw fail(size_line, fmt::format("the matrix is {} x {}; expected a square structural matrix", rows, columns));
  }
  // The size line is a claim: checked against what a matrix of that size can hold before anything is
  // read on (what the entries themselves allow is checked with the other matrices, inline_matrix_files).
  if (rows > kMaxDofs) {
    throw fail(size_line, fmt::format("the matrix is {} x {}; expected at most {} DOFs", rows, rows, kMaxDofs));
  }
  const std::uint64_t capacity = symmetric ? std::uint64_t{rows} * (rows + 1) / 2 : std::uint64_t{rows} * rows;
  if (format == "array") declared = capacity;
  if (declared > capacity) {
    throw fail(size_line, fmt::format("declares {} entries, more than the {} a {} x {} {} matrix has", declared,
                                      capacity, rows, rows, symmetric ? "symmetric (lower triangle)" : "general"));
  }

  SparseEntries out;
  out.size = rows;
  std::uint64_t read = 0;
  std::unordered_map<std::uint64_t, std::size_t> seen;  // row << 32 | column: the line it was on
  // An array file lists columns top to bottom, a symmetric one from the diagonal down.
  std::uint32_t array_row = 1;
  std::uint32_t array_column = 1;
  while (lines.next(line)) {
    if (line.empty() || line.front() == '%') continue;
    const std::vector<std::string_view> w = words(line);
    if (w.empty()) continue;
    if (read == declared) {
      throw fail(lines.number(),
                 fmt::format("an entry beyond the {} the size line (line {}) declares", declared, size_line));
    }
    MatrixEntry entry{};
    const std::size_t value_at = format == "coordinate" ? 2 : 0;
    if (w.size() != value_at + 1) {
      throw fail(lines.number(),
                 format == "coordinate" ? "expected \"row column value\"" : "expected one value per line");
    }
    if (format == "coordinate") {
      if (!parse(w[0], entry.row) || !parse(w[1], entry.column)) {
        throw fail(lines.number(), fmt::format("\"{} {}\" is not a row and column number", w[0], w[1]));
      }
    } else {
      entry.row = array_row;
      entry.column = array_column;
      if (++array_row > rows) {
        ++array_column;
        array_row = symmetric ? array_column : 1;
      }
    }
    if (!parse(w[value_at], entry.value) || !std::isfinite(entry.value)) {
      throw fail(lines.number(), fmt::format("value \"{}\" is not a finite number", w[value_at]));
    }
    if (entry.row < 1 || entry.row > rows || entry.column < 1 || entry.column > rows) {
      throw fail(lines.number(),
                 fmt::format("entry ({}, {}) is outside the {} x {} matrix", entry.row, entry.column, rows, rows));
    }
    if (symmetric && entry.column > entry.row) {
      throw fail(lines.number(),
                 fmt::format("entry ({}, {}) is above the diagonal of a symmetric file, which holds the lower triangle "
                             "only",
                             entry.row, entry.column));
    }
    ++read;
    // The format stores each entry once; an exporter that wrote one twice is wrong, and summing
    // (as an assembly would) could double a diagonal.
    if (const auto [at, fresh] = seen.emplace(std::uint64_t{entry.row} << 32U | entry.column, lines.number()); !fresh) {
      throw fail(lines.number(), fmt::format("entry ({}, {}) again (first on line {}); expected each entry once",
                                             entry.row, entry.column, at->second));
    }
    if (entry.value == 0.0) continue;
    out.entries.push_back(entry);
    if (symmetric && entry.row != entry.column) out.entries.push_back({entry.column, entry.row, entry.value});
  }
  if (read != declared) {
    throw fail(lines.number(), fmt::format("the file ends after {} entries; the size line (line {}) declares {}", read,
                                           size_line, declared));
  }
  return out;
}

Eigen::SparseMatrix<double> to_sparse_matrix(const SparseEntries& matrix) {
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(matrix.entries.size());
  for (const MatrixEntry& e : matrix.entries) {
    triplets.emplace_back(static_cast<int>(e.row) - 1, static_cast<int>(e.column) - 1, e.value);
  }
  Eigen::SparseMatrix<double> out(matrix.size, matrix.size);
  out.setFromTriplets(triplets.begin(), triplets.end());
  return out;
}

Eigen::SparseMatrix<double> to_sparse_matrix(const config::SparseMatrix& matrix, std::uint32_t dofs) {
  if (matrix.row_size() != matrix.value_size() || matrix.column_size() != matrix.value_size()) {
    throw ConfigError(fmt::format("has {} rows, {} columns and {} values; expected one row and column per value",
                                  matrix.row_size(), matrix.column_size(), matrix.value_size()));
  }
  SparseEntries entries;
  entries.size = dofs;
  entries.entries.reserve(static_cast<std::size_t>(matrix.value_size()));
  for (int k = 0; k < matrix.value_size(); ++k) {
    if (matrix.row(k) < 1 || matrix.row(k) > dofs || matrix.column(k) < 1 || matrix.column(k) > dofs) {
      throw ConfigError(
          fmt::format("entry {} ({}, {}) is outside the {} x {} matrix; expected rows and columns from 1 "
                      "to dofs",
                      k, matrix.row(k), matrix.column(k), dofs, dofs));
    }
    entries.entries.push_back({matrix.row(k), matrix.column(k), matrix.value(k)});
  }
  return to_sparse_matrix(entries);
}

void write_matrix_market(const std::filesystem::path& file, const SparseEntries& matrix, const std::string& comment,
                         bool symmetric) {
  std::ofstream out(file);
  if (!out) throw ConfigError(fmt::format("{}: cannot be written", file.string()));
  out << "%%MatrixMarket matrix coordinate real " << (symmetric ? "symmetric" : "general") << "\n";
  if (!comment.empty()) out << "% " << comment << "\n";
  out << fmt::format("{} {} {}\n", matrix.size, matrix.size, matrix.entries.size());
  for (const MatrixEntry& e : matrix.entries) out << fmt::format("{} {} {:.17g}\n", e.row, e.column, e.value);
  if (!out.flush()) throw ConfigError(fmt::format("{}: writing failed", file.string()));
}

}  // namespace rths
