#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "common/core/problems.hpp"
#include "experiment.pb.h"

namespace rths {

// What a component's rules and its factory may need beside its own config message: the step rate,
// and the experiment, site and channel it is part of (nullptr where there is none, as for a
// controller built on its own). The channel is an actuator's dynamics': its limits.
struct ComponentContext {
  double rate_hz = 0.0;
  const config::Experiment* experiment = nullptr;
  const config::Site* site = nullptr;
  const config::Channel* channel = nullptr;
  // The message whose oneof holds the component, for what it says of all its members (a ground
  // motion's scale): check_component and make_member set it; nullptr for a component made alone.
  const google::protobuf::Message* holder = nullptr;
  // The folder a relative path of the config starts from (the config file's); empty: the working
  // directory.
  std::filesystem::path base_dir{};
};

// The registry of components (docs/architecture.md, "Components"): every plant, driver, controller,
// model... registers itself in its own source file, keyed by its config message, with its rules (the
// only statement of them) and its factory. A config oneof then needs no switch: the member it holds
// names the component.
//
// Registration happens before main (a namespace-scope initialiser in the component's file, whose
// library is linked whole); the index by message is built at the first lookup, after every
// registration and without calling into protobuf during static initialisation.
namespace registry {

using Descriptor = google::protobuf::Descriptor;
using Message = google::protobuf::Message;
using Rules = std::function<void(const Message&, const ComponentContext&, const Checker&)>;

using FieldDescriptor = google::protobuf::FieldDescriptor;

// The messages (or fields) and rules registered so far, in registration order; what an index is built from.
template <class Entry, class Key = Descriptor>
struct Table {
  std::vector<std::pair<const Key* (*)(), Entry>> entries;
  std::unordered_map<const Key*, const Entry*> index;
  std::once_flag indexed;  // lookups may come from several threads (a study's runs)

  void add(const Key* (*key)(), Entry entry) { entries.emplace_back(key, std::move(entry)); }
  const Entry* find(const Key& key) {
    std::call_once(indexed, [this] {
      for (const auto& [of, entry] : entries) index.emplace(of(), &entry);
    });
    const auto it = index.find(&key);
    return it == index.end() ? nullptr : it->second;
  }
};

Table<Rules>& rules();
// The rules of a oneof member that is a number rather than a message (Loss's probability), by its
// field; they are given the message that holds it.
Table<Rules, FieldDescriptor>& scalar_rules();

// The field of a scalar member, as the tables key it.
template <class Holder, int kField>
const FieldDescriptor* scalar_member() {
  return Holder::descriptor()->FindFieldByNumber(kField);
}

// The member a oneof holds (nullptr when none): the config of the component it names.
const Message* member(const Message& holder, std::string_view oneof);
// Its field name, for error paths ("rls" in controller.rls.taps).
std::string member_name(const Message& holder, std::string_view oneof);
// The message types a oneof can hold (nullptr for a number): what a test compares with the registry.
std::vector<const Descriptor*> member_types(const Descriptor& holder, std::string_view oneof);
// Its members, messages and numbers alike.
std::vector<const FieldDescriptor*> members(const Descriptor& holder, std::string_view oneof);
// The member a oneof holds (nullptr when none).
const FieldDescriptor* held_member(const Message& holder, std::string_view oneof);

[[noreturn]] void unregistered(const Descriptor& message, const char* product);
[[noreturn]] void unregistered(const FieldDescriptor& member, const char* product);

// The members a oneof can hold, for the message of a config that names none: each written as its
// component's ConfigSketch says ("matrix { actuators: ... value: [...] }", "name { ... }" without
// one), joined as "a, b or c".
std::string member_sketches(const Descriptor& holder, std::string_view oneof);
// Their names only: "linear or servo_hydraulic".
std::string member_names(const Descriptor& holder, std::string_view oneof);

}  // namespace registry

// Whether `message` has registered rules (tests: every component a oneof can hold must).
bool has_component_rules(const google::protobuf::Descriptor& message);
// Whether a oneof's member has registered rules: its message's, or a scalar member's own.
bool has_member_rules(const google::protobuf::FieldDescriptor& member);

// Checks the component that `holder`'s oneof holds by its registered rules, at the member's path
// below `check`, its context's holder set to `holder`. False when the oneof holds none (the caller
// says whether that is allowed).
bool check_component(const google::protobuf::Message& holder, std::string_view oneof, const ComponentContext& context,
                     const Checker& check);

// The factories of one interface (ActuatorController, PlantDriver...), keyed by config message.
template <class Product>
class ComponentFactories {
 public:
  using Make = std::function<std::unique_ptr<Product>(const google::protobuf::Message&, const ComponentContext&)>;

  static void add(const google::protobuf::Descriptor* (*message)(), Make make) {
    table().add(message, std::move(make));
  }
  [[nodiscard]] static bool has(const google::protobuf::Descriptor& message) {
    return table().find(message) != nullptr;
  }
  // The component `config` describes (a validated config). A message no component registered is
  // a program error (a component without its registration): std::logic_error.
  static std::unique_ptr<Product> make(const google::protobuf::Message& config, const ComponentContext& context) {
    const Make* make = table().find(*config.GetDescriptor());
    if (make == nullptr) registry::unregistered(*config.GetDescriptor(), typeid(Product).name());
    return (*make)(config, context);
  }
  // The component a oneof holds, its context's holder set to `holder`; nullptr when it holds none.
  static std::unique_ptr<Product> make_member(const google::protobuf::Message& holder, std::string_view oneof,
                                              const ComponentContext& context) {
    const google::protobuf::FieldDescriptor* member = registry::held_member(holder, oneof);
    if (member == nullptr) return nullptr;
    ComponentContext within = context;
    within.holder = &holder;
    if (member->message_type() != nullptr) return make(holder.GetReflection()->GetMessage(holder, member), within);
    const Make* make = scalar_table().find(*member);
    if (make == nullptr) registry::unregistered(*member, typeid(Product).name());
    return (*make)(holder, within);
  }

  // A scalar member's factory, given the message that holds it (register_scalar_component).
  static void add_scalar(const google::protobuf::FieldDescriptor* (*member)(), Make make) {
    scalar_table().add(member, std::move(make));
  }
  // Whether a oneof's member has a factory: its message's, or a scalar member's own.
  [[nodiscard]] static bool has_member(const google::protobuf::FieldDescriptor& member) {
    return member.message_type() != nullptr ? has(*member.message_type()) : scalar_table().find(member) != nullptr;
  }

 private:
  static registry::Table<Make>& table() {
    static registry::Table<Make> t;
    return t;
  }
  static registry::Table<Make, google::protobuf::FieldDescriptor>& scalar_table() {
    static registry::Table<Make, google::protobuf::FieldDescriptor> t;
    return t;
  }
};

// What a component states of itself beside its rules and its factory, for code that cannot see its
// class: common/ asks a setup kind how many actuators it drives. `Fact` is the question, a type
// naming its answer's type (struct SetupActuators { using Value = std::size_t; }); one table per
// question, keyed by config message as the factories are.
template <class Fact>
class ComponentFacts {
 public:
  using Value = typename Fact::Value;  // NOLINT(readability-redundant-typename): clang 14 requires it
  using Answer = std::function<Value(const google::protobuf::Message&)>;

  static void add(const google::protobuf::Descriptor* (*message)(), Answer answer) {
    table().add(message, std::move(answer));
  }
  [[nodiscard]] static bool has(const google::protobuf::Descriptor& message) {
    return table().find(message) != nullptr;
  }
  // The answer of the component `config` describes; a message no component answered for is a
  // program error (std::logic_error), as for a factory.
  static Value of(const google::protobuf::Message& config) {
    const Answer* answer = table().find(*config.GetDescriptor());
    if (answer == nullptr) registry::unregistered(*config.GetDescriptor(), typeid(Fact).name());
    return (*answer)(config);
  }
  // That of the component a oneof holds; std::nullopt when it holds none.
  static std::optional<Value> of_member(const google::protobuf::Message& holder, std::string_view oneof) {
    const google::protobuf::Message* config = registry::member(holder, oneof);
    return config == nullptr ? std::nullopt : std::optional<Value>(of(*config));
  }

 private:
  static registry::Table<Answer>& table() {
    static registry::Table<Answer> t;
    return t;
  }
};

// How a component is written in a config, inside its member's braces ("actuators: ... value: [...]"
// for a setup's matrix): what the message of a oneof that holds none offers (registry::member_sketches).
struct ConfigSketch {
  using Value = std::string;
};

// Registers a component's answer to `Fact`, beside its register_component line:
//   register_fact<SetupActuators, config::SetupMatrix>(actuators)
//   with   std::size_t actuators(const config::SetupMatrix&);
// (Config named, not deduced: a unity build's file holds several components' functions of one name.)
template <class Fact, class Config>
bool register_fact(typename Fact::Value (*answer)(const Config&)) noexcept {
  ComponentFacts<Fact>::add(&Config::descriptor, [answer](const google::protobuf::Message& m) {
    return answer(dynamic_cast<const Config&>(m));
  });
  return true;
}

// Registers the rules of a config message whose component is built elsewhere (for now) or is a
// part of others (a plant model both a plant and a controller's estimate start from).
template <class Config>
bool register_rules(void (*validate)(const Config&, const ComponentContext&, const Checker&)) noexcept {
  registry::rules().add(&Config::descriptor,
                        [validate](const google::protobuf::Message& m, const ComponentContext& c, const Checker& k) {
                          validate(dynamic_cast<const Config&>(m), c, k);
                        });
  return true;
}

// Registers a component: one statement in its source file,
//   const bool kRlsCompensatorRegistered =
//       register_component<config::RlsCompensator, ActuatorController>(validate, make);
// (the constant named after its file: a unity build compiles a library's files in one unit)
// `validate` states every rule of the config (expect() for each that stands alone, so that all
// problems are reported); `make` builds the component from a config that passed them. noexcept: it
// runs before main, where only running out of memory could stop it, and that ends the program.
template <class Config, class Product>
bool register_component(void (*validate)(const Config&, const ComponentContext&, const Checker&),
                        std::unique_ptr<Product> (*make)(const Config&, const ComponentContext&)) noexcept {
  register_rules<Config>(validate);
  ComponentFactories<Product>::add(&Config::descriptor,
                                   [make](const google::protobuf::Message& m, const ComponentContext& c) {
                                     return make(dynamic_cast<const Config&>(m), c);
                                   });
  return true;
}

// Registers a component that a oneof names by a number rather than a message (Loss's probability:
// the independent loss model), keyed by its field: its rules and factory take the message that holds
// it, and its rules' checker stands at the field.
//   const bool kLossProbabilityRegistered =
//       register_scalar_component<config::Loss, config::Loss::kProbabilityFieldNumber, LossModel>(validate, make);
template <class Holder, int kField, class Product>
bool register_scalar_component(void (*validate)(const Holder&, const ComponentContext&, const Checker&),
                               std::unique_ptr<Product> (*make)(const Holder&, const ComponentContext&)) noexcept {
  registry::scalar_rules().add(&registry::scalar_member<Holder, kField>,
                               [validate](const google::protobuf::Message& m, const ComponentContext& c,
                                          const Checker& k) { validate(dynamic_cast<const Holder&>(m), c, k); });
  ComponentFactories<Product>::add_scalar(&registry::scalar_member<Holder, kField>,
                                          [make](const google::protobuf::Message& m, const ComponentContext& c) {
                                            return make(dynamic_cast<const Holder&>(m), c);
                                          });
  return true;
}

}  // namespace rths
