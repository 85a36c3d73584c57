// What the contract tests over the component registry share (docs/architecture.md, "Components"):
// the members of a family's oneof and their registration, and the sweep of a component's numeric
// config fields on both sides of its bounds.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include "common/core/component_registry.hpp"

namespace rths::test {

// The member names of a oneof, in the schema's order: every component of a family the config can name.
inline std::vector<std::string> oneof_members(const google::protobuf::Descriptor& holder,
                                              std::string_view oneof = "kind") {
  const google::protobuf::OneofDescriptor* kind = holder.FindOneofByName(std::string(oneof));
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(kind->field_count()));
  for (int i = 0; i < kind->field_count(); ++i) names.push_back(kind->field(i)->name());
  return names;
}

// The sample config of `member` (`samples`: text by member name) as its oneof's holder: what a
// contract runs.
template <class Holder>
Holder parse_sample(const std::map<std::string, std::string>& samples, const std::string& member) {
  Holder config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(samples.at(member), &config)) << member;
  return config;
}

// Every member of `holder`'s oneof (a message or a number) has registered rules and a factory of
// `Product`, and a sample in the contract (`samples`, by member name: a map), so that a member added
// to the schema is held to the contract or fails it.
template <class Product, class Samples>
void expect_every_member_registered(const google::protobuf::Descriptor& holder, std::string_view oneof,
                                    const Samples& samples) {
  for (const google::protobuf::FieldDescriptor* member : registry::members(holder, oneof)) {
    EXPECT_TRUE(has_member_rules(*member)) << member->full_name() << ": no rules";
    EXPECT_TRUE(ComponentFactories<Product>::has_member(*member)) << member->full_name() << ": no factory";
  }
  for (const std::string& member : oneof_members(holder, oneof)) {
    EXPECT_EQ(samples.count(member), 1U) << member << ": no sample";
  }
}

struct SweepOptions {
  // A repeated double field is set to v entries (1, 1/2, 1/3, ...) for each v in 0..16; otherwise skipped.
  bool repeated_doubles = false;
  // A field the sweep cannot set (a string, a message) is a test failure rather than skipped: for a
  // family whose configs are all numbers, so that a new kind of field is not left out unseen.
  bool every_field_known = false;
  // The fields of a message field are swept too: of a singular one (set where the base has none), and
  // of each element of a repeated one the base holds ("actuator[1].length_m").
  bool nested_messages = false;
};

namespace detail {

namespace pb = google::protobuf;

// A field the sweep sets: the message fields from the member down to its message (an element's index
// for a repeated one, -1 for a singular one), the field, and its name for a message.
struct SweptField {
  std::vector<std::pair<const pb::FieldDescriptor*, int>> path;
  const pb::FieldDescriptor* field;
  std::string name;
};

inline void collect_fields(const pb::Message& message, const SweptField& at, const SweepOptions& options,
                           const std::string& member, std::vector<SweptField>& out) {
  const pb::Descriptor* type = message.GetDescriptor();
  for (int f = 0; f < type->field_count(); ++f) {
    const pb::FieldDescriptor* field = type->field(f);
    const std::string name = at.name + field->name();
    if (options.nested_messages && field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      const pb::Reflection* r = message.GetReflection();
      const int count = field->is_repeated() ? r->FieldSize(message, field) : 1;
      for (int i = 0; i < count; ++i) {
        SweptField inner{at.path, nullptr, field->is_repeated() ? name + "[" + std::to_string(i) + "]." : name + "."};
        inner.path.emplace_back(field, field->is_repeated() ? i : -1);
        collect_fields(field->is_repeated() ? r->GetRepeatedMessage(message, field, i) : r->GetMessage(message, field),
                       inner, options, member, out);
      }
      continue;
    }
    const bool is_double = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE;
    const bool is_uint32 = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT32;
    const bool settable = field->is_repeated() ? options.repeated_doubles && is_double : is_double || is_uint32;
    if (settable) {
      out.push_back(SweptField{at.path, field, name});
    } else if (options.every_field_known) {
      ADD_FAILURE() << member << "." << name << ": a field the sweep does not know; extend it";
    }
  }
}

// The message of `path` below `message`: mutable (made where absent), or as it is.
inline pb::Message* descend(pb::Message* message, const SweptField& swept) {
  for (const auto& [field, index] : swept.path) {
    const pb::Reflection* r = message->GetReflection();
    message = index < 0 ? r->MutableMessage(message, field) : r->MutableRepeatedMessage(message, field, index);
  }
  return message;
}
inline const pb::Message& descend(const pb::Message& message, const SweptField& swept) {
  const pb::Message* at = &message;
  for (const auto& [field, index] : swept.path) {
    const pb::Reflection* r = at->GetReflection();
    at = index < 0 ? &r->GetMessage(*at, field) : &r->GetRepeatedMessage(*at, field, index);
  }
  return *at;
}

}  // namespace detail

// Every numeric field of the config `member` of `base` (a oneof's holder), set in turn to each of
// `values` (an unsigned field: the value truncated, a negative one its maximum): visit(config, what,
// changed) with the holder so changed, `what` naming it ("taps = 4.000000") and `changed` whether
// the field's value differs from base's.
template <class Holder>
void sweep_numeric_fields(const Holder& base, const std::string& member, const std::vector<double>& values,
                          const std::function<void(const Holder&, const std::string&, bool)>& visit,
                          SweepOptions options = {}) {
  namespace pb = google::protobuf;
  const pb::FieldDescriptor* of_member = Holder::descriptor()->FindFieldByName(member);
  const pb::Message& base_member = Holder::GetReflection()->GetMessage(base, of_member);
  std::vector<detail::SweptField> fields;
  detail::collect_fields(base_member, detail::SweptField{{}, nullptr, ""}, options, member, fields);
  for (const detail::SweptField& swept : fields) {
    const pb::FieldDescriptor* field = swept.field;
    const pb::Message& base_message = detail::descend(base_member, swept);
    for (const double v : values) {
      Holder config = base;
      pb::Message* message = detail::descend(Holder::GetReflection()->MutableMessage(&config, of_member), swept);
      const pb::Reflection* r = message->GetReflection();
      bool changed = false;
      if (field->is_repeated()) {
        if (v < 0 || v > 16) continue;
        r->ClearField(message, field);
        for (int k = 0; k < static_cast<int>(v); ++k) r->AddDouble(message, field, 1.0 / (k + 1));
        changed = r->FieldSize(*message, field) != r->FieldSize(base_message, field);
        for (int k = 0; !changed && k < r->FieldSize(*message, field); ++k) {
          changed = r->GetRepeatedDouble(*message, field, k) != r->GetRepeatedDouble(base_message, field, k);
        }
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
        changed = v != r->GetDouble(base_message, field);
        r->SetDouble(message, field, v);
      } else {
        const std::uint32_t u = v < 0 ? std::numeric_limits<std::uint32_t>::max() : static_cast<std::uint32_t>(v);
        changed = u != r->GetUInt32(base_message, field);
        r->SetUInt32(message, field, u);
      }
      visit(config, swept.name + " = " + std::to_string(v), changed);
    }
  }
}

// The sweep (sweep_numeric_fields) sorted by the rules' verdict: `valid(config)` says whether they
// accept it, and `accepted(config, what, changed)` runs on each config they do. Both verdicts must
// occur for a member with a field to sweep: a sweep that never crosses a rule tests nothing.
template <class Holder>
void sweep_verdicts(const Holder& base, const std::string& member, const std::vector<double>& values,
                    const std::function<bool(const Holder&)>& valid,
                    const std::function<void(const Holder&, const std::string&, bool)>& accepted,
                    SweepOptions options = {}) {
  int accepted_count = 0;
  int refused_count = 0;
  sweep_numeric_fields<Holder>(
      base, member, values,
      [&](const Holder& config, const std::string& what, bool changed) {
        if (!valid(config)) {
          ++refused_count;
          return;
        }
        ++accepted_count;
        accepted(config, what, changed);
      },
      options);
  if (accepted_count + refused_count == 0) return;
  EXPECT_GT(accepted_count, 0) << member;
  EXPECT_GT(refused_count, 0) << member << ": the sweep never crossed a rule";
}

}  // namespace rths::test
