// Naming help of the config loader: an unknown name (a field, an enum value, an element of a list an
// override picks by name) is answered with the valid ones and the closest of them.
#include <google/protobuf/descriptor.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config_loading.hpp"

namespace rths::loading {
namespace {

namespace pb = google::protobuf;

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0U : 1U)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

// `did you mean "mass_kg"? ` when one name is within a typo or two of `wrong`, else nothing.
std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& names) {
  const std::string* best = nullptr;
  std::size_t best_distance = std::max<std::size_t>(2, wrong.size() / 3) + 1;
  for (const auto& name : names) {
    const std::size_t distance = edit_distance(wrong, name);
    if (distance < best_distance) {
      best = &name;
      best_distance = distance;
    }
  }
  return best == nullptr ? std::string{} : fmt::format("did you mean \"{}\"? ", *best);
}

std::vector<std::string> field_names(const pb::Descriptor& type) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(type.field_count()));
  for (int i = 0; i < type.field_count(); ++i) names.push_back(type.field(i)->name());
  return names;
}

std::vector<std::string> value_names(const pb::EnumDescriptor& type) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(type.value_count()));
  for (int i = 0; i < type.value_count(); ++i) names.push_back(type.value(i)->name());
  return names;
}

std::string unknown_field(const pb::Descriptor& type, std::string_view wrong) {
  const auto names = field_names(type);
  return fmt::format("unknown field \"{}\" in {}; {}expected one of: {}", wrong, type.name(),
                     did_you_mean(wrong, names), fmt::join(names, ", "));
}

}  // namespace rths::loading
