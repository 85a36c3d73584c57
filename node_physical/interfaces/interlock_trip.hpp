#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "node_physical/interfaces/measurement.hpp"
#include "smith_predictor/interfaces/prediction_model.hpp"

namespace rths {

// What tripped an interlock, kept as plain values so that a trip inside the step allocates nothing;
// describe() turns it into a sentence after the loop.
struct InterlockTrip {
  enum class What {
    kNone,
    kTargetNotFinite,
    kTargetStroke,
    kTargetVelocity,
    kCommandNotFinite,
    kCommandStroke,
    kMeasurementNotFinite,
    kMeasuredStroke,
    kMeasuredForce,
    // A plant driver's own limits (PlantDriver::check): channel is then the actuator of the site's
    // setup transformation, from 0.
    kActuatorStroke,  // the stroke a setup computes from the commands is beyond the actuator's limit
    kOutsideSetup,    // the commands leave the setup's valid range: no stroke can be computed
    // An actuator's command (a setup's stroke, rate and acceleration, or its controller's) that is not
    // finite: channel the actuator, quantity which part, value its value.
    kActuatorNotFinite,
    // The actuator does not do what the site asks:
    kTrackingError,  // |target - measured| above the tracking limit for its steps in a row
    // The equipment's reply says it holds another command than the one just sent (PlantDriver::refused):
    // value the counter it holds, limit the counter sent (channel unused) ...
    kAppliedCounter,
    // ... or on channel (the setup's actuator with a setup) the value it holds, limit the one sent.
    kAppliedCommand,
  };
  What what = What::kNone;
  std::size_t channel = 0;  // from 0
  double value = 0.0;
  double limit = 0.0;
  std::uint32_t steps = 0;  // kTrackingError: the consecutive steps it took
  // k...NotFinite: which quantity was not (a string literal: a trip inside the step allocates nothing).
  const char* quantity = "";

  [[nodiscard]] bool tripped() const { return what != What::kNone; }
  // "channel 1: target 0.5 m beyond the stroke limit 0.05 m; the actuator holds its last target".
  [[nodiscard]] std::string describe() const;
};

// A part of a motion or a reading that is not finite: which (a string literal) and its value.
struct NotFinite {
  const char* quantity;
  double value;
};

// The first of a target's or a command's displacement, velocity and acceleration that is not finite,
// or none. All three, not the displacement alone: a plant may act on the velocity or the acceleration
// (a damper, an ideal actuator), and a controller that differentiates a huge but finite target
// overflows them to infinity.
[[nodiscard]] std::optional<NotFinite> not_finite_part(const InterfaceMotion& m);
// The first of a reading's displacement, velocity and force that is not finite, or none.
[[nodiscard]] std::optional<NotFinite> not_finite_part(const Measurement& m);

}  // namespace rths
