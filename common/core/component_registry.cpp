#include "common/core/component_registry.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace rths {
namespace registry {

Table<Rules>& rules() {
  static Table<Rules> t;
  return t;
}

Table<Rules, FieldDescriptor>& scalar_rules() {
  static Table<Rules, FieldDescriptor> t;
  return t;
}

const FieldDescriptor* held_member(const Message& holder, std::string_view oneof) {
  const google::protobuf::OneofDescriptor* const group = holder.GetDescriptor()->FindOneofByName(std::string(oneof));
  if (group == nullptr) {
    throw std::logic_error(fmt::format("{} has no oneof {}", holder.GetDescriptor()->full_name(), oneof));
  }
  return holder.GetReflection()->GetOneofFieldDescriptor(holder, group);
}

const Message* member(const Message& holder, std::string_view oneof) {
  const google::protobuf::FieldDescriptor* const field = held_member(holder, oneof);
  if (field != nullptr && field->message_type() == nullptr) {
    throw std::logic_error(fmt::format("{}: a number, not a message", field->full_name()));
  }
  return field == nullptr ? nullptr : &holder.GetReflection()->GetMessage(holder, field);
}

std::string member_name(const Message& holder, std::string_view oneof) {
  const google::protobuf::FieldDescriptor* const field = held_member(holder, oneof);
  return field == nullptr ? std::string{} : field->name();
}

std::vector<const FieldDescriptor*> members(const Descriptor& holder, std::string_view oneof) {
  const google::protobuf::OneofDescriptor* const group = holder.FindOneofByName(std::string(oneof));
  std::vector<const FieldDescriptor*> fields;
  if (group == nullptr) return fields;
  for (int i = 0; i < group->field_count(); ++i) fields.push_back(group->field(i));
  return fields;
}

std::vector<const Descriptor*> member_types(const Descriptor& holder, std::string_view oneof) {
  std::vector<const Descriptor*> types;
  for (const FieldDescriptor* field : members(holder, oneof)) types.push_back(field->message_type());
  return types;
}

void unregistered(const Descriptor& message, const char* product) {
  throw std::logic_error(
      fmt::format("no component registered for config message {} (a {}): its library is not "
                  "linked whole, or its file lacks its register_component line",
                  message.full_name(), product));
}

void unregistered(const FieldDescriptor& member, const char* product) {
  if (member.message_type() != nullptr) unregistered(*member.message_type(), product);
  throw std::logic_error(
      fmt::format("no component registered for config field {} (a {}): its library is not linked whole, or "
                  "its file lacks its register_scalar_component line",
                  member.full_name(), product));
}

namespace {

// "a", "a or b", "a, b or c".
std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  }
  return text;
}

template <class Each>
std::string each_member(const Descriptor& holder, std::string_view oneof, const Each& each) {
  std::vector<std::string> items;
  for (const FieldDescriptor* field : members(holder, oneof)) items.push_back(each(*field));
  return joined(items);
}

}  // namespace

std::string member_sketches(const Descriptor& holder, std::string_view oneof) {
  return each_member(holder, oneof, [](const google::protobuf::FieldDescriptor& field) {
    if (field.message_type() == nullptr) return fmt::format("{}: ...", field.name());  // a number
    // A sketch is the same for every config of the message: its default instance answers for all.
    const Descriptor& type = *field.message_type();
    const google::protobuf::Message* prototype =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(&type);
    const std::string inside =
        ComponentFacts<ConfigSketch>::has(type) ? ComponentFacts<ConfigSketch>::of(*prototype) : std::string("...");
    return fmt::format("{} {{ {} }}", field.name(), inside);
  });
}

std::string member_names(const Descriptor& holder, std::string_view oneof) {
  return each_member(holder, oneof, [](const google::protobuf::FieldDescriptor& field) { return field.name(); });
}

}  // namespace registry

bool has_component_rules(const google::protobuf::Descriptor& message) {
  return registry::rules().find(message) != nullptr;
}

bool has_member_rules(const google::protobuf::FieldDescriptor& member) {
  return member.message_type() != nullptr ? has_component_rules(*member.message_type())
                                          : registry::scalar_rules().find(member) != nullptr;
}

bool check_component(const google::protobuf::Message& holder, std::string_view oneof, const ComponentContext& context,
                     const Checker& check) {
  const google::protobuf::FieldDescriptor* const field = registry::held_member(holder, oneof);
  if (field == nullptr) return false;
  const bool scalar = field->message_type() == nullptr;
  const google::protobuf::Message& config = scalar ? holder : holder.GetReflection()->GetMessage(holder, field);
  const registry::Rules* const rules =
      scalar ? registry::scalar_rules().find(*field) : registry::rules().find(*config.GetDescriptor());
  if (rules == nullptr) registry::unregistered(*field, "component");
  ComponentContext within = context;
  within.holder = &holder;
  (*rules)(config, within, check.at(field->name()));
  return true;
}

}  // namespace rths
