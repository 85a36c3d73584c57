#include "common/core/field_locations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/core/text.hpp"

namespace rths {

void FieldLocations::add_line(const std::string& path, int line) {
  lines_.insert_or_assign(path, line);
}

void FieldLocations::add_override(std::string path, std::string assignment) {
  overrides_.emplace_back(std::move(path), std::move(assignment));
}

namespace {

// `site[0].link` -> `site[0]` -> `site` -> "".
std::string_view enclosing(std::string_view path) {
  if (path.ends_with(']')) return path.substr(0, path.rfind('['));
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : path.substr(0, dot);
}

// True when `path` is `outer` or lies inside it.
bool within(std::string_view path, std::string_view outer) {
  if (!path.starts_with(outer)) return false;
  return path.size() == outer.size() || path[outer.size()] == '.' || path[outer.size()] == '[';
}

}  // namespace

std::string FieldLocations::prefix(const std::string& source_name, const std::string& path) const {
  std::string source = source_name.empty() ? std::string{} : source_name + ": ";
  // The latest override whose path satisfies `pred`, as the start of a message, or nothing.
  const auto from_override = [&](const auto& pred) -> std::optional<std::string> {
    const auto found =
        std::find_if(overrides_.rbegin(), overrides_.rend(), [&](const auto& o) { return pred(o.first); });
    if (found == overrides_.rend()) return std::nullopt;
    return fmt::format("{}--set {}: ", source, shortened(found->second, 100));
  };
  // An override is applied after parsing, so it replaced whatever the file said at or above path.
  if (auto set = from_override([&](std::string_view assigned) { return within(path, assigned); })) return *set;
  for (std::string_view at = path; !at.empty(); at = enclosing(at)) {
    if (const auto found = lines_.find(at); found != lines_.end()) {
      return fmt::format("{}:{}: ", source_name, found->second);
    }
    // Not written in the file, but an override created it by assigning something inside it.
    if (auto set = from_override([&](std::string_view assigned) { return within(assigned, at); })) return *set;
  }
  return source;
}

std::optional<int> FieldLocations::line(const std::string& path) const {
  const auto found = lines_.find(path);
  return found == lines_.end() ? std::nullopt : std::optional<int>(found->second);
}

}  // namespace rths
