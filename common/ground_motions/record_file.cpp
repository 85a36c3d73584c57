// A ground motion read from a record file (config RecordFile): two columns of time and acceleration,
// or PEER NGA AT2 (the readers are common's, ground_motion.hpp).
#include <filesystem>
#include <memory>

#include "common/core/component_registry.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "experiment.pb.h"

namespace rths {
namespace {

// A record's values are checked as its file is read.
void validate(const config::RecordFile& record, const ComponentContext& /*context*/, const Checker& check) {
  check.expect(!record.path().empty(), "path",
               "missing; expected the record file (a relative path starts from the config file's folder)");
  check.expect(record.has_unit(), "unit", "missing; expected G or M_PER_S2 (the unit of a record is never guessed)");
  check.expect(record.format() != config::PEER_AT2 || record.unit() == config::G, "unit",
               "is M_PER_S2, but PEER AT2 records are in g; expected G");
}

// The readers scale as they read, so that a value beyond any ground motion is named by its line.
std::unique_ptr<GroundMotion> make(const config::RecordFile& record, const ComponentContext& context) {
  const double scale = ground_motion_scale(context);
  std::filesystem::path path(record.path());
  if (path.is_relative()) path = context.base_dir / path;
  if (record.format() == config::PEER_AT2) {
    // AT2 values are in g by definition of the format; the unit field does not apply.
    return std::make_unique<GroundMotion>(load_peer_at2(path, scale));
  }
  const double unit_scale = record.unit() == config::M_PER_S2 ? 1.0 : kStandardGravity;
  return std::make_unique<GroundMotion>(load_two_column(path, unit_scale, scale));
}

[[maybe_unused]] const bool kRecordFileRegistered =
    register_component<config::RecordFile, GroundMotion>(validate, make);

}  // namespace
}  // namespace rths
