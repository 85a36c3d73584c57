#include "node_numerical/study/csv.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rths::study {

std::string csv_cell(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.find_first_of(",\"") == std::string::npos) {
    return text;
  }
  std::string quoted = "\"";
  for (const char c : text) {
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return quoted + "\"";
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) {
      line += ',';
    }
    line += csv_cell(cells[i]);
  }
  return line;
}

std::vector<std::string> csv_split(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::optional<std::size_t> CsvText::column(const std::string& name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(it - header.begin()));
}

CsvText parse_csv(std::string_view text, bool complete_lines_only) {
  if (complete_lines_only) {
    const auto last_newline = text.find_last_of('\n');
    text = text.substr(0, last_newline == std::string_view::npos ? 0 : last_newline + 1);
  }
  CsvText csv;
  int number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (number == 1) {
      csv.header = csv_split(line);
    } else if (!line.empty()) {
      csv.rows.push_back(csv_split(line));
      csv.lines.push_back(number);
    }
  }
  return csv;
}

CsvText read_csv(const std::filesystem::path& file, bool complete_lines_only) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    throw std::runtime_error("cannot read " + file.string());
  }
  return parse_csv(text.str(), complete_lines_only);
}

}  // namespace rths::study
