#include "rths/common/component_registry.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace rths {
namespace registry {
namespace {

// The member a oneof holds (nullptr: none), a message field: the config of the component it names.
const google::protobuf::FieldDescriptor* held_field(const Message& holder, std::string_view oneof) {
  const google::protobuf::OneofDescriptor* const group = holder.GetDescriptor()->FindOneofByName(std::string(oneof));
  if (group == nullptr) {
    throw std::logic_error(fmt::format("{} has no oneof {}", holder.GetDescriptor()->full_name(), oneof));
  }
  const google::protobuf::FieldDescriptor* const field = holder.GetReflection()->GetOneofFieldDescriptor(holder, group);
  if (field != nullptr && field->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
    throw std::logic_error(fmt::format("{}: a component oneof holds messages only", field->full_name()));
  }
  return field;
}

}  // namespace

Table<Rules>& rules() {
  static Table<Rules> t;
  return t;
}

const Message* member(const Message& holder, std::string_view oneof) {
  const google::protobuf::FieldDescriptor* const field = held_field(holder, oneof);
  return field == nullptr ? nullptr : &holder.GetReflection()->GetMessage(holder, field);
}

std::string member_name(const Message& holder, std::string_view oneof) {
  const google::protobuf::FieldDescriptor* const field = held_field(holder, oneof);
  return field == nullptr ? std::string{} : field->name();
}

std::vector<const Descriptor*> member_types(const Descriptor& holder, std::string_view oneof) {
  const google::protobuf::OneofDescriptor* const group = holder.FindOneofByName(std::string(oneof));
  std::vector<const Descriptor*> types;
  if (group == nullptr) return types;
  for (int i = 0; i < group->field_count(); ++i) types.push_back(group->field(i)->message_type());
  return types;
}

void unregistered(const Descriptor& message, const char* product) {
  throw std::logic_error(
      fmt::format("no component registered for config message {} (a {}): its library is not "
                  "linked whole, or its file lacks its register_component line",
                  message.full_name(), product));
}

}  // namespace registry

bool has_component_rules(const google::protobuf::Descriptor& message) {
  return registry::rules().find(message) != nullptr;
}

bool check_component(const google::protobuf::Message& holder, std::string_view oneof, const ComponentContext& context,
                     const Checker& check) {
  const google::protobuf::FieldDescriptor* const field = registry::held_field(holder, oneof);
  if (field == nullptr) return false;
  const google::protobuf::Message& config = holder.GetReflection()->GetMessage(holder, field);
  const registry::Rules* const rules = registry::rules().find(*config.GetDescriptor());
  if (rules == nullptr) registry::unregistered(*config.GetDescriptor(), "component");
  (*rules)(config, context, check.at(field->name()));
  return true;
}

}  // namespace rths
