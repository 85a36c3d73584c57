#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rths::study {

// CSV as rths writes it: comma-separated cells, a cell with a comma or a double quote in double
// quotes with its quotes doubled (RFC 4180), one row per line (a newline inside a cell is written as
// a blank). The readers of study.csv, pure.csv and the run folders' time histories.

// One cell as written: quoted when it must be, newlines as blanks.
std::string csv_cell(std::string text);
// Cells joined into one line (without its newline), each through csv_cell.
std::string csv_line(const std::vector<std::string>& cells);
// The cells of one line, quotes understood (the inverse of csv_line).
std::vector<std::string> csv_split(std::string_view line);

// A whole CSV text: the header's cells and every other non-empty line's, in file order.
struct CsvText {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // each row's line in the file (the header is line 1)

  // The index of the column named `name`.
  [[nodiscard]] std::optional<std::size_t> column(const std::string& name) const;
};

// Parses text. With complete_lines_only, a last line without its newline (a file cut by a kill while
// it was written) is not a row.
CsvText parse_csv(std::string_view text, bool complete_lines_only = false);
// The file's text parsed; throws std::runtime_error "cannot read FILE" when it cannot be read or has
// no header line.
CsvText read_csv(const std::filesystem::path& file, bool complete_lines_only = false);

}  // namespace rths::study
