#include "common/core/problems.hpp"

#include <fmt/format.h>

#include "common/core/config_error.hpp"
#include "common/core/field_locations.hpp"

namespace rths {

Problems::Problems(std::string source_name, const FieldLocations* where)
    : source_(std::move(source_name)), where_(where) {}

void Problems::add(const std::string& path, const std::string& what) {
  std::string head;
  if (where_ != nullptr) {
    head = where_->prefix(source_, path);
  } else if (!source_.empty()) {
    head = source_ + ": ";
  }
  lines_.push_back(head + (path.empty() ? what : path + ": " + what));
}

void Problems::throw_if_any() const {
  if (lines_.empty()) return;
  if (lines_.size() == 1) throw ConfigError(lines_.front());
  throw ConfigError(lines_);
}

Checker Checker::at(std::string_view field, int index) const {
  return Checker(*problems_, fmt::format("{}[{}]", join(field), index));
}

Checker Checker::holder() const {
  const std::size_t dot = path_.rfind('.');
  return Checker(*problems_, dot == std::string::npos ? std::string{} : path_.substr(0, dot));
}

std::string Checker::join(std::string_view field) const {
  if (path_.empty()) return std::string(field);
  if (field.empty()) return path_;
  return fmt::format("{}.{}", path_, field);
}

bool Checker::expect(bool ok, std::string_view field, const std::string& what) const {
  if (!ok) problems_->add(join(field), what);
  return ok;
}

bool Checker::expect_positive(std::string_view field, bool given, double value, std::string_view what) const {
  return expect(given, field, fmt::format("missing; expected {} > 0", what)) &&
         expect(value > 0, field, fmt::format("is {}, expected {} > 0", value, what));
}

bool Checker::section(const std::function<void()>& checks) const {
  const std::size_t before = problems_->size();
  try {
    checks();
  } catch (const Stop&) {
    return false;  // the problem that ended the section is recorded: the next section goes on
  }
  return problems_->size() == before;
}

void Checker::fail(std::string_view field, const std::string& what) const {
  problems_->add(join(field), what);
  throw Stop{};
}

}  // namespace rths
