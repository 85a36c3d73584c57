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
  const google::protobuf::OneofDescriptor* const group = holder.FindOneofByName(std::string(oneof));
  std::vector<std::string> items;
  for (int i = 0; group != nullptr && i < group->field_count(); ++i) items.push_back(each(*group->field(i)));
  return joined(items);
}

}  // namespace

std::string member_sketches(const Descriptor& holder, std::string_view oneof) {
  return each_member(holder, oneof, [](const google::protobuf::FieldDescriptor& field) {
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
