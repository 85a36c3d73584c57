#pragma once

namespace rths {

// What the site's sensors read at a step's tick: what plants and drivers return and what a
// controller learns from.
struct Measurement {
  double displacement_m = 0.0;
  // The actuator's velocity (as a velocity transducer or the controller's own estimate reads it).
  double velocity_m_per_s = 0.0;
  double force_n = 0.0;
  // No new reading came this step (a bridge's reply missing): the values are the last reading,
  // repeated. A controller that learns from the measurement must not learn from it.
  bool held = false;
};

}  // namespace rths
