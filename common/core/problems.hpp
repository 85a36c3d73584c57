#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace rths {

class FieldLocations;

// Every problem a config has, so that a config with five mistakes takes one run, not five. Each
// problem is one line that names the field, where it was written and what was expected
// ("case1.textproto:12: site[0].influence: has 3 entries, expected 2").
class Problems {
 public:
  // `where` maps a field path to its source line (nullptr: the lines carry the field path only).
  explicit Problems(std::string source_name = {}, const FieldLocations* where = nullptr);

  void add(const std::string& path, const std::string& what);
  [[nodiscard]] bool empty() const { return lines_.empty(); }
  [[nodiscard]] std::size_t size() const { return lines_.size(); }
  [[nodiscard]] const std::vector<std::string>& lines() const { return lines_; }
  // Throws ConfigError naming every problem, one per line, when there is any.
  void throw_if_any() const;

 private:
  std::string source_;
  const FieldLocations* where_;
  std::vector<std::string> lines_;
};

// The problems at one place of a config (a field path), as a component's rules write them. Paths are
// spelt as in error messages: `site[0].channel[1].controller.rls.taps`.
//
// Two kinds of rule: expect() records a problem and the checks go on (the rule stands alone);
// require() and fail() record it and end the section (the checks after it rely on it: a size before
// an index, a positive rate before a division). A section is what section() runs: a component, a
// site, the structure; the validation goes on with the next one.
class Checker {
 public:
  explicit Checker(Problems& problems, std::string path = {}) : problems_(&problems), path_(std::move(path)) {}

  // The place of a member of this one, and of an element of a repeated member.
  [[nodiscard]] Checker at(std::string_view field) const { return Checker(*problems_, join(field)); }
  [[nodiscard]] Checker at(std::string_view field, int index) const;
  // The place that holds this one: where a component's rules name a field of the message whose oneof
  // holds the component (ground_motion.scale, from ground_motion.synthetic).
  [[nodiscard]] Checker holder() const;
  [[nodiscard]] const std::string& path() const { return path_; }
  // The path of a member of this place ("" names the place itself).
  [[nodiscard]] std::string join(std::string_view field) const;

  // NOLINTNEXTLINE(modernize-use-nodiscard): a rule is mostly a statement; its verdict is there when needed
  bool expect(bool ok, std::string_view field, const std::string& what) const;
  // A number the component has no default for: given ("missing; expected WHAT > 0"), and then > 0
  // ("is VALUE, expected WHAT > 0"); one problem at most. True when both hold.
  // NOLINTNEXTLINE(modernize-use-nodiscard): as expect()
  bool expect_positive(std::string_view field, bool given, double value, std::string_view what) const;
  void require(bool ok, std::string_view field, const std::string& what) const {
    if (!ok) fail(field, what);
  }
  [[noreturn]] void fail(std::string_view field, const std::string& what) const;

  // Runs `checks`; a failed require() inside ends them and no more. True when they added no problem.
  // NOLINTNEXTLINE(modernize-use-nodiscard): mostly a statement, as expect()
  bool section(const std::function<void()>& checks) const;

 private:
  struct Stop {};
  Problems* problems_;
  std::string path_;
};

}  // namespace rths
