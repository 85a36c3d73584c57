// A setup transformation between a site's channels and the actuators of its equipment: every
// actuator gets the stroke, rate and acceleration of its channel commands' geometry, what the
// actuators read comes back as interface displacements, velocities and forces, a stroke beyond an
// actuator's limit trips the interlock before anything is sent, and a reading the setup cannot be in
// stops the site.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "node_physical/controllers/actuator_controller.hpp"
#include "node_physical/plants/setup_driver.hpp"
#include "node_physical/setups/inclined_actuator_setup.hpp"
#include "node_physical/setups/matrix_setup.hpp"
#include "node_physical/setups/two_actuators_setup.hpp"
#include "node_physical/site/physical_substructure.hpp"
#include "support/alloc_counter.hpp"

namespace rths::test_setup_driver {
namespace {

constexpr double kDtS = 1.0 / 1024;
// Closed form against the driver's double-precision arithmetic on metre lengths: a few roundings.
constexpr double kExactM = 1e-13;
// The curvature term of the stroke acceleration and the interface velocity are central differences
// (over one step and over 1e-4 s): truncation of order (v h)^2 / L^2, 1e-8 of the value at 0.2 m/s
// and metre lengths; a missing curvature term is off by h^2 v^2 / L^3 ~ 0.01 m/s^2 here, 1e-2 of it.
constexpr double kDifferenceRelative = 1e-6;

// The equipment behind the setup, scripted: records the commands it gets, answers with the readings
// set by the test, or fails with a reason.
class ScriptedActuators final : public PlantDriver {
 public:
  explicit ScriptedActuators(std::size_t actuators) : reading(actuators), sent(actuators) {}
  [[nodiscard]] std::size_t channels() const override { return reading.size(); }
  void open(std::span<Measurement> measured) override { std::copy(reading.begin(), reading.end(), measured.begin()); }
  bool exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured, double dt_s) override {
    (void)dt_s;
    ++exchanges;
    std::copy(commands.begin(), commands.end(), sent.begin());
    std::copy(reading.begin(), reading.end(), measured.begin());
    return failure.empty();
  }
  [[nodiscard]] std::uint32_t status(std::size_t channel) const override { return bits.at(channel); }
  [[nodiscard]] std::string fault() const override { return failure; }
  void report(std::size_t channel, results::PlantReport& out) const override {
    (void)channel;
    (void)out;
  }

  std::vector<Measurement> reading;
  std::vector<InterfaceMotion> sent;
  std::vector<std::uint32_t> bits = std::vector<std::uint32_t>(reading.size(), 0);
  std::string failure;
  int exchanges = 0;
};

// One actuator at 30 degrees to its DOF, 1.5 m long, the specimen point 20 mm off its line.
constexpr double kLengthM = 1.5;
constexpr double kAngleDeg = 30.0;
constexpr double kOffsetM = 0.02;
constexpr double kLimitM = 0.1;

struct Rig {
  ScriptedActuators* actuators = nullptr;
  std::unique_ptr<SetupDriver> driver;
};

Rig inclined_rig() {
  auto actuators = std::make_unique<ScriptedActuators>(1);
  Rig rig{actuators.get(), nullptr};
  rig.driver = std::make_unique<SetupDriver>(std::make_unique<InclinedActuatorSetup>(kLengthM, kAngleDeg, kOffsetM),
                                             std::vector<double>{kLimitM}, std::move(actuators));
  return rig;
}

// The geometry written out: the specimen end at (a0 + u, h) from the fixed end.
struct Inclined {
  double a0 = kLengthM * std::cos(kAngleDeg * std::numbers::pi / 180);
  double h = kLengthM * std::sin(kAngleDeg * std::numbers::pi / 180) + kOffsetM;
  [[nodiscard]] double length(double u) const { return std::hypot(a0 + u, h); }
  [[nodiscard]] double stroke(double u) const { return length(u) - kLengthM; }
  [[nodiscard]] double cosine(double u) const { return (a0 + u) / length(u); }  // ds/du
};

TEST(SetupDriver, EachActuatorGetsItsStrokeRateAndAccelerationOfTheGeometry) {
  Rig rig = inclined_rig();
  const Inclined g;
  const double u = 0.03;
  const double v = 0.2;
  const double a = 1.5;
  std::vector<InterfaceMotion> command{{u, v, a}};
  std::vector<Measurement> measured(1);
  rig.actuators->reading[0].displacement_m = g.stroke(0.0);
  ASSERT_TRUE(rig.driver->exchange(command, measured, kDtS)) << rig.driver->fault();
  const InterfaceMotion& sent = rig.actuators->sent[0];
  EXPECT_NEAR(sent.displacement_m, g.stroke(u), kExactM);
  EXPECT_NEAR(sent.velocity_m_per_s, g.cosine(u) * v, kExactM);
  // d2s/dt2 = (ds/du) a + (d2s/du2) v^2, d2s/du2 = h^2 / L^3.
  const double curvature = g.h * g.h / std::pow(g.length(u), 3);
  const double expected = g.cosine(u) * a + curvature * v * v;
  EXPECT_NEAR(sent.acceleration_m_per_s2, expected, kDifferenceRelative * std::abs(expected));
}

TEST(SetupDriver, TheReadingsComeBackAsInterfaceDisplacementVelocityAndForce) {
  Rig rig = inclined_rig();
  const Inclined g;
  const double u = -0.04;      // where the specimen point is
  const double v = -0.15;      // and how fast it moves
  const double load = 2500.0;  // the load cell, compression
  rig.actuators->reading[0] = Measurement{g.stroke(u), g.cosine(u) * v, load};
  std::vector<InterfaceMotion> command{{u, 0.0, 0.0}};
  std::vector<Measurement> measured(1);
  ASSERT_TRUE(rig.driver->exchange(command, measured, kDtS)) << rig.driver->fault();
  EXPECT_NEAR(measured[0].displacement_m, u, kExactM);
  EXPECT_NEAR(measured[0].velocity_m_per_s, v, kDifferenceRelative * std::abs(v));
  // Virtual work: the interface force is the load cell's projected on the DOF at the current angle.
  EXPECT_NEAR(measured[0].force_n, g.cosine(u) * load, 1e-12 * load);
}

TEST(SetupDriver, TwoActuatorsDriveAPointAndReadItBack) {
  auto owned = std::make_unique<ScriptedActuators>(2);
  ScriptedActuators& actuators = *owned;
  // Fixed ends at -L0 (cos theta, sin theta) from the point's reference position (the origin).
  const double l0 = 1.8;
  const double l1 = 2.5;
  const double t0 = 20.0 * std::numbers::pi / 180;
  const double t1 = 135.0 * std::numbers::pi / 180;
  SetupDriver driver(std::make_unique<TwoActuatorsSetup>(l0, 20.0, l1, 135.0), {kLimitM, kLimitM}, std::move(owned));
  const double x = 0.02;
  const double y = -0.01;
  const double s0 = std::hypot(x + l0 * std::cos(t0), y + l0 * std::sin(t0)) - l0;
  const double s1 = std::hypot(x + l1 * std::cos(t1), y + l1 * std::sin(t1)) - l1;
  actuators.reading = {Measurement{s0, 0.0, 1000.0}, Measurement{s1, 0.0, -400.0}};
  std::vector<InterfaceMotion> command{{x, 0.0, 0.0}, {y, 0.0, 0.0}};
  std::vector<Measurement> measured(2);
  ASSERT_TRUE(driver.exchange(command, measured, kDtS)) << driver.fault();
  EXPECT_NEAR(actuators.sent[0].displacement_m, s0, kExactM);
  EXPECT_NEAR(actuators.sent[1].displacement_m, s1, kExactM);
  EXPECT_NEAR(measured[0].displacement_m, x, kExactM);
  EXPECT_NEAR(measured[1].displacement_m, y, kExactM);
  // J^T f: each load cell along its actuator's current unit axis.
  const double n0x = (x + l0 * std::cos(t0)) / (l0 + s0);
  const double n0y = (y + l0 * std::sin(t0)) / (l0 + s0);
  const double n1x = (x + l1 * std::cos(t1)) / (l1 + s1);
  const double n1y = (y + l1 * std::sin(t1)) / (l1 + s1);
  EXPECT_NEAR(measured[0].force_n, 1000.0 * n0x - 400.0 * n1x, 1e-9);
  EXPECT_NEAR(measured[1].force_n, 1000.0 * n0y - 400.0 * n1y, 1e-9);
}

// The interlock's rule on each side: a stroke beyond its actuator's limit trips before anything is
// sent, although the channel's own command is inside the channel's stroke; just inside, it moves.
TEST(SetupDriver, AStrokeBeyondItsActuatorsLimitTripsTheInterlockBeforeAnythingIsSent) {
  const Inclined g;
  // The interface displacement whose stroke is the limit: s = L - L0 = limit.
  const double at_limit = std::sqrt(std::pow(kLengthM + kLimitM, 2) - g.h * g.h) - g.a0;
  for (const double margin : {-1e-6, 1e-6}) {
    Rig rig = inclined_rig();
    ScriptedActuators& actuators = *rig.actuators;
    actuators.reading[0].displacement_m = g.stroke(0.0);
    std::vector<std::unique_ptr<ActuatorController>> controllers;
    controllers.push_back(make_controller(config::Controller{}, 1024));
    // The channel's stroke limit (0.5 m) is far wider than the actuator's.
    PhysicalSubstructure site(std::move(controllers), std::move(rig.driver), Interlock({{0.5, 0.0, 0.0}}, kDtS));
    site.open();
    std::vector<InterfaceMotion> wanted{{at_limit + margin, 0.0, 0.0}};
    std::vector<Measurement> measured(1);
    const bool moved = site.step(wanted, measured, kDtS);
    if (margin < 0) {
      EXPECT_TRUE(moved) << site.stop_reason();
      EXPECT_EQ(actuators.exchanges, 1);
      EXPECT_NEAR(actuators.sent[0].displacement_m, kLimitM, 2e-6);
    } else {
      EXPECT_FALSE(moved);
      EXPECT_EQ(actuators.exchanges, 0);   // nothing was sent
      EXPECT_FALSE(site.driver_failed());  // an interlock trip (exit 8, the stop ramp runs), not an equipment failure
      EXPECT_NE(site.stop_reason().find("interlock: actuator 0 of the setup: stroke 0.1"), std::string::npos)
          << site.stop_reason();
      EXPECT_NE(site.stop_reason().find("beyond its limit setup.stroke_limit_m[0] = 0.1 m"), std::string::npos)
          << site.stop_reason();
    }
  }
}

TEST(SetupDriver, ACommandOutsideTheSetupsRangeTripsTheInterlock) {
  Rig rig = inclined_rig();
  // Beyond the foot of the perpendicular from the fixed end (u = -a0), no stroke reaches the point.
  std::vector<InterfaceMotion> command{{-2.0, 0.0, 0.0}};
  const InterlockTrip trip = rig.driver->check(command);
  EXPECT_EQ(trip.what, InterlockTrip::What::kOutsideSetup);
  // A driver that is handed it all the same refuses to send it.
  std::vector<Measurement> measured(1);
  EXPECT_FALSE(rig.driver->exchange(command, measured, kDtS));
  EXPECT_EQ(rig.actuators->exchanges, 0);
  EXPECT_NE(rig.driver->fault().find("valid range"), std::string::npos) << rig.driver->fault();
}

TEST(SetupDriver, AReadingTheSetupCannotBeInStopsTheSiteNamingTheStrokes) {
  Rig rig = inclined_rig();
  const Inclined g;
  // Shorter than the specimen end's distance from the DOF's line: no point of the line is there.
  rig.actuators->reading[0].displacement_m = g.h - kLengthM - 0.01;
  std::vector<InterfaceMotion> command{{0.0, 0.0, 0.0}};
  std::vector<Measurement> measured{{0.25, 0.0, 7.0}};
  EXPECT_FALSE(rig.driver->exchange(command, measured, kDtS));
  EXPECT_EQ(measured[0].displacement_m, 0.0);  // the last good reading (none yet: at rest) is held
  EXPECT_NE(rig.driver->fault().find("the actuators read strokes -0.7"), std::string::npos) << rig.driver->fault();
  EXPECT_NE(rig.driver->fault().find("outside the setup transformation's valid range"), std::string::npos);
  // And at the start, before anything moves.
  Rig other = inclined_rig();
  other.actuators->reading[0].displacement_m = g.h - kLengthM - 0.01;
  std::vector<Measurement> start(1);
  EXPECT_THROW(other.driver->open(start), DriverError);
}

TEST(SetupDriver, TheActuatorsStatusAndFailureReachTheSite) {
  auto owned = std::make_unique<ScriptedActuators>(3);
  ScriptedActuators& actuators = *owned;
  // Three actuators on two DOFs (one redundant): each channel shows any actuator's bits.
  const std::vector<double> t{1.0, 0.0, 0.0, 1.0, std::numbers::sqrt2 / 2, std::numbers::sqrt2 / 2};
  SetupDriver driver(std::make_unique<MatrixSetup>(3, t, 2), {kLimitM, kLimitM, kLimitM}, std::move(owned));
  actuators.bits = {0, 0, driver_status::kReplyMissing};
  std::vector<InterfaceMotion> command{{0.01, 0.0, 0.0}, {0.0, 0.0, 0.0}};
  std::vector<Measurement> measured(2);
  ASSERT_TRUE(driver.exchange(command, measured, kDtS));
  EXPECT_EQ(driver.status(0), driver_status::kReplyMissing);
  EXPECT_EQ(driver.status(1), driver_status::kReplyMissing);
  // Every DOF is computed from every actuator: one actuator's held reading holds them all, and only
  // while it is held.
  actuators.reading[2].held = true;
  ASSERT_TRUE(driver.exchange(command, measured, kDtS));
  EXPECT_TRUE(measured[0].held);
  EXPECT_TRUE(measured[1].held);
  actuators.reading[2].held = false;
  ASSERT_TRUE(driver.exchange(command, measured, kDtS));
  EXPECT_FALSE(measured[0].held);
  EXPECT_FALSE(measured[1].held);
  actuators.failure = "no reply from target 127.0.0.1:9 for 10 steps in a row";
  EXPECT_FALSE(driver.exchange(command, measured, kDtS));
  EXPECT_EQ(driver.fault(), actuators.failure);
}

TEST(SetupDriver, ItsStepAllocatesNothing) {
  Rig rig = inclined_rig();
  const Inclined g;
  rig.actuators->reading[0] = Measurement{g.stroke(0.01), 0.05, 100.0};
  std::vector<InterfaceMotion> command{{0.01, 0.05, 0.3}};
  std::vector<Measurement> measured(1);
  const std::uint64_t before = test::allocations_on_this_thread();
  bool ok = true;
  for (int step = 0; step < 100; ++step) {
    ok = !rig.driver->check(command).tripped() && ok;
    ok = rig.driver->exchange(command, measured, kDtS) && ok;
  }
  EXPECT_EQ(test::allocations_on_this_thread() - before, 0U);
  EXPECT_TRUE(ok);
}

// An actuator controller that commands each stroke target times a gain, and a force source that
// gives 1000 N/m of the interface displacement: enough to see where each sits in the step.
class ScaledController final : public SiteController {
 public:
  explicit ScaledController(double gain) : gain_(gain) {}
  [[nodiscard]] std::size_t actuators() const override { return 1; }
  void command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
               std::span<InterfaceMotion> commands, double dt_s) override {
    (void)previous;
    (void)dt_s;
    ++calls;
    commands[0] = InterfaceMotion{gain_ * targets[0].displacement_m, velocity_out, 0.0};
  }
  void report(std::size_t actuator, results::ControllerReport& out) const override {
    (void)actuator;
    out.mutable_pass_through();
  }
  int calls = 0;
  double velocity_out = 0.0;  // the velocity it commands

 private:
  double gain_;
};

class Spring final : public InterfaceForceSource {
 public:
  [[nodiscard]] bool step(std::span<const double> u, std::span<double> f, double dt_s) override {
    (void)dt_s;
    f[0] = 1000.0 * u[0];
    return std::isfinite(f[0]);
  }
};

struct ControlledRig {
  ScriptedActuators* actuators = nullptr;
  ScaledController* controller = nullptr;
  std::unique_ptr<SetupDriver> driver;
};

ControlledRig controlled_rig(double gain) {
  auto actuators = std::make_unique<ScriptedActuators>(1);
  auto controller = std::make_unique<ScaledController>(gain);
  ControlledRig rig{actuators.get(), controller.get(), nullptr};
  rig.driver = std::make_unique<SetupDriver>(std::make_unique<InclinedActuatorSetup>(kLengthM, kAngleDeg, kOffsetM),
                                             std::vector<double>{kLimitM}, std::move(actuators), std::move(controller),
                                             std::make_unique<Spring>());
  return rig;
}

TEST(SetupDriver, AnActuatorControllerCommandsTheStrokeTargetAndAForceSourceGivesTheForce) {
  ControlledRig rig = controlled_rig(1.5);
  const Inclined g;
  std::vector<InterfaceMotion> command{{0.02, 0.0, 0.0}};
  std::vector<Measurement> measured(1);
  rig.actuators->reading[0].displacement_m = g.stroke(-0.01);
  rig.actuators->reading[0].force_n = 777.0;  // a load cell the force source replaces
  ASSERT_TRUE(rig.driver->exchange(command, measured, kDtS)) << rig.driver->fault();
  EXPECT_NEAR(rig.driver->actuator_targets()[0].displacement_m, g.stroke(0.02), kExactM);
  EXPECT_NEAR(rig.actuators->sent[0].displacement_m, 1.5 * g.stroke(0.02), kExactM);
  EXPECT_NEAR(measured[0].displacement_m, -0.01, kExactM);
  EXPECT_NEAR(measured[0].force_n, -10.0, 1e-9);
  // A ramp's step passes the controller by: the stroke itself is sent.
  ASSERT_TRUE(rig.driver->move(command, measured, kDtS));
  EXPECT_EQ(rig.controller->calls, 1);
  EXPECT_NEAR(rig.actuators->sent[0].displacement_m, g.stroke(0.02), kExactM);
}

TEST(SetupDriver, AControllerCommandBeyondTheStrokeLimitIsNeverSentAndTripsTheInterlock) {
  // The target's stroke is inside the limit (check() passes); the controller doubles it past 0.1 m.
  ControlledRig rig = controlled_rig(2.0);
  const Inclined g;
  std::vector<InterfaceMotion> command{{0.07, 0.0, 0.0}};
  ASSERT_LT(g.stroke(0.07), kLimitM);
  ASSERT_FALSE(rig.driver->check(command).tripped());
  std::vector<Measurement> measured(1);
  EXPECT_FALSE(rig.driver->exchange(command, measured, kDtS));
  EXPECT_EQ(rig.actuators->exchanges, 0) << "the refused command reached the actuators";
  const InterlockTrip refused = rig.driver->refused();
  EXPECT_EQ(refused.what, InterlockTrip::What::kActuatorStroke);
  EXPECT_NEAR(refused.value, 2.0 * g.stroke(0.07), kExactM);
  EXPECT_EQ(rig.driver->fault(), "") << "a refused command is a limit, not a failed driver";
  // The stop ramp can still move the actuator.
  std::vector<InterfaceMotion> back{{0.0, 0.0, 0.0}};
  EXPECT_TRUE(rig.driver->move(back, measured, kDtS));
  EXPECT_EQ(rig.actuators->exchanges, 1);
  EXPECT_FALSE(rig.driver->refused().tripped());
}

// A controller command whose velocity is not finite is refused as such, whatever its displacement.
TEST(SetupDriver, AControllerCommandThatIsNotFiniteIsNeverSentAndNamesThePart) {
  ControlledRig rig = controlled_rig(1.0);
  rig.controller->velocity_out = std::nan("");
  std::vector<InterfaceMotion> command{{0.02, 0.0, 0.0}};
  std::vector<Measurement> measured(1);
  EXPECT_FALSE(rig.driver->exchange(command, measured, kDtS));
  EXPECT_EQ(rig.actuators->exchanges, 0) << "the refused command reached the actuators";
  const InterlockTrip refused = rig.driver->refused();
  EXPECT_EQ(refused.what, InterlockTrip::What::kActuatorNotFinite);
  EXPECT_EQ(refused.describe(), "actuator 0 of the setup: the command's velocity is not finite (nan)");
}

// A geometry whose every result is finite but whose Jacobian flips between -1e308 and 1e308 across
// u = 0.03: the stroke acceleration's dJ/dt term, (J(u + v h) v - J(u - v h) v) / 2h, overflows there
// though each J v is finite. Strokes are u itself; only what the driver adds up is tested.
class SteepGeometry final : public SetupTransform {
 public:
  SteepGeometry() : SetupTransform(1, 1) {}
  [[nodiscard]] bool strokes(std::span<const double> u, std::span<double> s) override {
    s[0] = u[0];
    return true;
  }
  [[nodiscard]] bool stroke_velocities(std::span<const double> u, std::span<const double> v,
                                       std::span<double> sv) override {
    sv[0] = (u[0] < 0.03 ? -1e308 : 1e308) * v[0];
    return std::isfinite(sv[0]);
  }
  [[nodiscard]] bool interface_displacements(std::span<const double> s, std::span<double> u) override {
    u[0] = s[0];
    return true;
  }
  [[nodiscard]] bool interface_forces(std::span<const double> s, std::span<const double> f,
                                      std::span<double> fi) override {
    (void)s;
    fi[0] = f[0];
    return true;
  }
  [[nodiscard]] bool actuator_forces(std::span<const double> s, std::span<const double> fi,
                                     std::span<double> f) override {
    (void)s;
    f[0] = fi[0];
    return true;
  }
  [[nodiscard]] std::string valid_range() const override { return "everywhere"; }
};

// Without a controller the setup's own stroke rate and acceleration go to the actuator; an acceleration
// that the dJ/dt term overflowed is refused before anything is sent, naming the part.
TEST(SetupDriver, AStrokeAccelerationTheGeometryOverflowsIsNeverSent) {
  auto owned = std::make_unique<ScriptedActuators>(1);
  ScriptedActuators& actuators = *owned;
  SetupDriver driver(std::make_unique<SteepGeometry>(), {kLimitM}, std::move(owned));
  std::vector<InterfaceMotion> command{{0.03, 1.0, 0.0}};
  ASSERT_FALSE(driver.check(command).tripped());
  std::vector<Measurement> measured(1);
  EXPECT_FALSE(driver.exchange(command, measured, kDtS));
  EXPECT_EQ(actuators.exchanges, 0) << "the overflowed acceleration reached the actuators";
  const InterlockTrip refused = driver.refused();
  EXPECT_EQ(refused.what, InterlockTrip::What::kActuatorNotFinite);
  EXPECT_EQ(refused.describe(), "actuator 0 of the setup: the command's acceleration is not finite (inf)");
  // Away from the flip the same velocity goes through, its J v finite.
  command[0].displacement_m = 0.06;
  EXPECT_TRUE(driver.exchange(command, measured, kDtS)) << driver.fault();
  EXPECT_EQ(actuators.exchanges, 1);
}

}  // namespace
}  // namespace rths::test_setup_driver
