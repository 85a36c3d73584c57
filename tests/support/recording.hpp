// What the tests of records share: an rths CSV read as a reader after a crash sees it, the check that a
// file holds every row of a recorder bit for bit, columns to record, and the fixture.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "common/records/recorder.hpp"
#include "support/process.hpp"

namespace rths::test {

// An rths CSV as a reader after a crash sees it: the header and every complete line (one that ends
// with a newline); a last line cut by a kill is not a row.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
};

inline Csv read_complete_rows(const std::filesystem::path& file) {
  std::string text = slurp(file);
  text.erase(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  Csv csv;
  std::size_t at = 0;
  bool first = true;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string_view line(text.data() + at, end - at);
    std::vector<double> row;
    for (std::size_t cell = 0; cell <= line.size();) {
      const std::size_t comma = std::min(line.find(',', cell), line.size());
      const std::string_view field = line.substr(cell, comma - cell);
      if (first) {
        csv.header.emplace_back(field);
      } else {
        double v = 0.0;
        const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
        EXPECT_TRUE(ec == std::errc() && ptr == field.data() + field.size()) << file << ": '" << field << "'";
        row.push_back(v);
      }
      cell = comma + 1;
    }
    if (!first) {
      csv.rows.push_back(std::move(row));
    }
    first = false;
    at = end + 1;
  }
  return csv;
}

inline bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Every row of rec, bit for bit, and nothing else.
inline void expect_file_holds(const std::filesystem::path& file, const Recorder& rec) {
  const Csv csv = read_complete_rows(file);
  ASSERT_EQ(csv.rows.size(), rec.rows()) << file;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    ASSERT_EQ(csv.rows[r].size(), rec.columns()) << file << " row " << r;
    for (std::size_t c = 0; c < rec.columns(); ++c) {
      ASSERT_TRUE(same_bits(csv.rows[r][c], rec.at(r, c)))
          << file << " row " << r << " column " << c << ": " << csv.rows[r][c] << " recorded " << rec.at(r, c);
    }
  }
}

// The time and n - 1 columns more, x1, x2, ..., in N and m by turns.
inline std::vector<Column> columns_named(std::size_t n) {
  std::vector<Column> cols{{"t", "s"}};
  for (std::size_t c = 1; c < n; ++c) {
    // fmt rather than "x" + std::to_string: GCC 12 raises a false -Wrestrict on the latter.
    cols.push_back({fmt::format("x{}", c), c % 2 == 0 ? "m" : "N"});
  }
  return cols;
}

// Each test's records in a run folder of its own.
class Recording : public RunFolderTest {};

}  // namespace rths::test
