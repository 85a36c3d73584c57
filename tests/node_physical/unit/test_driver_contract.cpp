// Every driver the config can name is registered with rules and a factory, and has a fake of its
// equipment (support/driver_equipment.hpp), against which the contract tests in
// realtime/test_driver_contract.cpp drive it (docs/architecture.md, "Components";
// docs/plant-drivers.md).
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include "common/core/component_registry.hpp"
#include "experiment.pb.h"
#include "node_physical/interfaces/plant_driver.hpp"
#include "support/driver_equipment.hpp"

namespace rths::test_driver_contract {
namespace {

namespace pb = google::protobuf;

TEST(ComponentRegistry, EveryDriverTheConfigCanNameHasRulesAFactoryAndAFakeOfItsEquipment) {
  const pb::OneofDescriptor* kind = config::Driver::descriptor()->FindOneofByName("kind");
  ASSERT_GT(kind->field_count(), 0);
  for (int i = 0; i < kind->field_count(); ++i) {
    const pb::FieldDescriptor* member = kind->field(i);
    EXPECT_TRUE(has_component_rules(*member->message_type())) << member->name();
    EXPECT_TRUE(ComponentFactories<PlantDriver>::has(*member->message_type())) << member->name();
    EXPECT_TRUE(test::fakes().contains(member->name()))
        << member->name() << ": no fake of its equipment in support/driver_equipment.hpp";
  }
}

}  // namespace
}  // namespace rths::test_driver_contract
