#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/config/config.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "common/protocol/session_keys.hpp"
#include "common/records/recorder.hpp"

namespace rths::test {

// Whether `text` holds `part`: as an assertion, whose failure shows both.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\n  does not contain \"" << part << "\"";
}

// The message of the `Error` that `action` throws. An action that throws none gives "", and fails the
// test with `when_none` (what was accepted that should not have been) unless that is empty.
template <typename Error, typename Action>
std::string error_of(Action&& action, const std::string& when_none = {}) {
  try {
    std::forward<Action>(action)();
  } catch (const Error& error) {
    return error.what();
  }
  if (!when_none.empty()) ADD_FAILURE() << when_none;
  return {};
}

// The problems the registered rules find in the component `holder`'s oneof holds, each line's path
// under `path` (empty: valid).
inline std::vector<std::string> component_problems(const google::protobuf::Message& holder,
                                                   const ComponentContext& context, const std::string& path = {},
                                                   std::string_view oneof = "kind") {
  Problems problems;
  const Checker check(problems, path);
  check.section([&] { check_component(holder, oneof, context, check); });
  return problems.lines();
}

// The verdict `rths-numerical budget` prints ("budget: 100 % of the period = 976.6 us; the step's p99
// takes 23.4 % of the period: FITS"): the share and the p99, both in percent of the period, and
// whether it said FITS. nullopt when the output has no such line.
struct BudgetVerdict {
  double share_percent = 0;
  double p99_percent = 0;
  bool fits = false;
};
inline std::optional<BudgetVerdict> budget_verdict(const std::string& out) {
  static const std::regex line(
      R"re(budget: ([-+.e0-9]+) % of the period = [.0-9]+ us; the step's p99 takes ([.0-9]+) % of the period: (FITS|DOES NOT FIT))re");
  std::smatch m;
  if (!std::regex_search(out, m, line)) return std::nullopt;
  return BudgetVerdict{std::stod(m[1].str()), std::stod(m[2].str()), m[3].str() == "FITS"};
}

// A parameterised case's label as a test name: "missing ground-motion file" -> MissingGroundMotionFile.
inline std::string camel_case(const char* label) {
  std::string name;
  bool word_start = true;
  for (const char* c = label; *c != '\0'; ++c) {
    if (std::isalnum(static_cast<unsigned char>(*c)) == 0) {
      word_start = true;
      continue;
    }
    name += word_start ? static_cast<char>(std::toupper(static_cast<unsigned char>(*c))) : *c;
    word_start = false;
  }
  return name;
}

inline std::filesystem::path source_dir() {
  return RTHS_SOURCE_DIR;
}
inline std::filesystem::path data_dir() {
  return RTHS_DATA_DIR;
}
inline std::filesystem::path example(const std::string& relative) {
  return source_dir() / "examples" / relative;
}

// Every experiment under examples/, sorted: its *.textproto but the RLS calibrations that `rths-numerical
// calibrate` writes beside an example (git ignores them and the package leaves them out).
inline std::vector<std::filesystem::path> example_experiments() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(source_dir() / "examples")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".textproto" && !name.ends_with(".calibration.textproto")) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline LoadedConfig load_example(const std::string& relative, const std::vector<std::string>& overrides = {}) {
  return load_experiment(example(relative), overrides);
}

// Largest |a - b| over a column present in both recorders; NaN when a difference is (std::max would
// skip it, and a bound on the result would pass).
inline double max_abs_difference(const Recorder& a, const Recorder& b, const std::string& column) {
  const auto ca = a.column(a.column_index(column));
  const auto cb = b.column(b.column_index(column));
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(ca.size(), cb.size()); ++i) {
    const double diff = std::abs(ca[i] - cb[i]);
    if (std::isnan(diff)) {
      return diff;
    }
    worst = std::max(worst, diff);
  }
  return worst;
}

// Overrides that give a site an equal split of a round-trip delay, optionally with jitter.
// A session's keys that seal, as a handshake's do: what every frame on a socket carries (virtual
// time's own keys leave frames in clear).
inline SessionKeys sealing_keys(std::uint64_t session, std::uint32_t site_id) {
  SessionKeys keys = virtual_session_keys(session, site_id);
  keys.sealed = true;
  return keys;
}

inline std::vector<std::string> round_trip(double round_trip_s, double jitter_s = 0.0, const std::string& site = "0") {
  // Full precision: a leg of exactly n steps must not become n - 1 through a rounded decimal.
  const std::string half = fmt::format("{:.17g}", round_trip_s / 2.0);
  const std::string j = fmt::format("{:.17g}", jitter_s);
  return {"site[" + site + "].link.forward.delay_s=" + half, "site[" + site + "].link.backward.delay_s=" + half,
          "site[" + site + "].link.forward.jitter_s=" + j, "site[" + site + "].link.backward.jitter_s=" + j};
}

}  // namespace rths::test
