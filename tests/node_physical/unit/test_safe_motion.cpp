// The site's safe motion outside the test's steps: the start ramp from the measured position to the
// initial position, the stop ramp to the safe position, their checks, and a site that runs both.
// (A site that runs both, in real time: realtime/test_safe_motion.cpp.)
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/exit_codes.hpp"
#include "node_physical/controllers/pass_through.hpp"
#include "node_physical/site/physical_substructure.hpp"
#include "node_physical/site/safe_motion.hpp"
#include "support/process.hpp"
#include "support/safe_motion.hpp"

namespace rths::test_safe_motion {
namespace {
using test::ramping_config;

constexpr double kRate = 1024.0;
constexpr double kDt = 1.0 / kRate;

std::vector<double> positions(const RampPlan& plan, std::size_t channel) {
  std::vector<double> x;
  std::vector<InterfaceMotion> step(plan.channels());
  for (std::int64_t k = 0; k < plan.steps(); ++k) {
    plan.commands(k, step);
    x.push_back(step[channel].displacement_m);
  }
  return x;
}

// Largest |x(k) - x(k-1)| / dt, the first step measured from `from`.
double largest_velocity(const std::vector<double>& x, double from) {
  double v = 0.0;
  double last = from;
  for (const double xi : x) {
    v = std::max(v, std::abs(xi - last) / kDt);
    last = xi;
  }
  return v;
}

TEST(RampPlan, StartsAtRestAndEndsExactlyAtItsTarget) {
  const std::vector<double> from{0.010, -0.002};
  const std::vector<double> to{0.0, 0.003};
  const RampPlan plan(from, to, 512, 0, kDt);
  ASSERT_EQ(plan.steps(), 512);
  for (std::size_t c = 0; c < 2; ++c) {
    const std::vector<double> x = positions(plan, c);
    EXPECT_EQ(x.back(), to[c]);  // exactly: a safe position is reached, not approached
    // The first step moves (1 - cos(pi / N)) / 2 of the way: a start at rest, no jump.
    EXPECT_NEAR(x.front() - from[c], (to[c] - from[c]) * (1 - std::cos(std::numbers::pi / 512)) / 2, 1e-18);
    // Monotonic: a ramp never overshoots its target.
    for (std::size_t k = 1; k < x.size(); ++k) {
      EXPECT_GE((x[k] - x[k - 1]) * (to[c] - from[c]), 0.0) << k;
    }
  }
}

TEST(RampPlan, PeakVelocityIsPiTimesTheDistanceOverTwiceTheTime) {
  const std::vector<double> from{0.0};
  const std::vector<double> to{0.02};
  const RampPlan plan(from, to, 1024, 0, kDt);  // 1 s
  const double expected = std::numbers::pi * 0.02 / 2.0;
  EXPECT_DOUBLE_EQ(plan.peak_velocity_m_per_s(0), expected);
  // A chord is never steeper than the curve's peak slope, and at this resolution nearly as steep.
  const double measured = largest_velocity(positions(plan, 0), 0.0);
  EXPECT_LE(measured, expected * (1 + 1e-12));
  EXPECT_GT(measured, expected * (1 - 1e-5));
}

TEST(RampPlan, StopRampHoldsThenMovesAtTheConfiguredVelocity) {
  config::SafeMotion motion;
  motion.set_stop_hold_s(0.25);
  motion.set_stop_velocity_m_per_s(0.01);
  motion.add_safe_position_m(0.0);
  motion.add_safe_position_m(0.004);
  const std::vector<double> last{0.012, 0.004};
  const RampPlan plan = stop_ramp(motion, last, kRate);
  // Hold 256 steps; move time pi * 0.012 / (2 * 0.01) = 1.885 s: 1931 whole steps (rounded up);
  // settle 51 steps (0.05 s).
  const auto move_steps = static_cast<std::int64_t>(std::ceil(std::numbers::pi * 0.012 / 0.02 * kRate));
  EXPECT_EQ(plan.steps(), 256 + move_steps + 51);
  const std::vector<double> x0 = positions(plan, 0);
  for (std::size_t k = 0; k < 256; ++k) {
    ASSERT_EQ(x0[k], 0.012) << k;  // the hold is the last command, exactly
  }
  EXPECT_EQ(x0.back(), 0.0);
  const double v = largest_velocity(x0, 0.012);
  EXPECT_LE(v, 0.01);
  EXPECT_GT(v, 0.01 * (1 - 1e-3));
  // The channel already at its safe position stays there.
  for (const double x : positions(plan, 1)) {
    ASSERT_EQ(x, 0.004);
  }
}

config::Site limited_site(double stroke_m, double velocity_m_per_s) {
  config::Site site;
  site.set_name("lab");
  config::Channel* channel = site.add_channel();
  channel->set_stroke_limit_m(stroke_m);
  channel->set_velocity_limit_m_per_s(velocity_m_per_s);
  return site;
}

TEST(RampPlan, AStartFasterThanTheVelocityLimitOrFromBeyondTheStrokeIsRefused) {
  const config::Site site = limited_site(0.05, 0.02);
  config::SafeMotion motion;
  motion.set_start_ramp_s(1.0);
  // 0.01 m in 1 s: peak pi * 0.01 / 2 = 0.0157 m/s, within 0.02.
  const std::vector<double> near{0.01};
  EXPECT_EQ(start_ramp_refusal(site, start_ramp(motion, near, kRate), near), "");
  // 0.02 m in 1 s: peak 0.0314 m/s, beyond 0.02.
  const std::vector<double> far{0.02};
  const std::string fast = start_ramp_refusal(site, start_ramp(motion, far, kRate), far);
  EXPECT_NE(fast.find("channel 0 at 0.03142 m/s, beyond its velocity limit 0.02 m/s"), std::string::npos) << fast;
  const std::vector<double> outside{0.06};
  const std::string stroke = start_ramp_refusal(site, start_ramp(motion, outside, kRate), outside);
  EXPECT_NE(stroke.find("measured at 0.06 m, beyond its stroke limit 0.05 m"), std::string::npos) << stroke;
  const std::vector<double> nan{std::nan("")};
  EXPECT_NE(start_ramp_refusal(site, start_ramp(motion, nan, kRate), nan), "");
}

// A plant that remembers every command it was given.
class CommandLog final : public Plant {
 public:
  explicit CommandLog(std::vector<double>& log) : log_(log) {}
  Measurement step(const InterfaceMotion& command, double /*dt_s*/) override {
    log_.push_back(command.displacement_m);
    return {command.displacement_m, 0.0, 0.0};
  }
  void report(results::PlantReport& out) const override { out.mutable_ideal(); }

 private:
  std::vector<double>& log_;
};

TEST(RampPlan, ARampCommandBeyondTheStrokeNeverReachesThePlant) {
  std::vector<double> log;
  std::vector<std::unique_ptr<ActuatorController>> controllers;
  controllers.push_back(std::make_unique<PassThroughController>());
  std::vector<std::unique_ptr<Plant>> plants;
  plants.push_back(std::make_unique<CommandLog>(log));
  PhysicalSubstructure site(std::move(controllers), std::make_unique<SimulatedPlants>(std::move(plants)),
                            Interlock({{0.05, 0.1, 1e4}}, kDt));
  const std::vector<InterfaceMotion> inside{{0.049, 0.0, 0.0}};
  const std::vector<InterfaceMotion> beyond{{0.051, 0.0, 0.0}};
  const std::vector<InterfaceMotion> nan{{std::nan(""), 0.0, 0.0}};
  EXPECT_TRUE(site.move(inside, kDt));
  EXPECT_FALSE(site.move(beyond, kDt));
  EXPECT_FALSE(site.move(nan, kDt));
  EXPECT_EQ(log, std::vector<double>{0.049});
  EXPECT_EQ(site.measured()[0].displacement_m, 0.049);
}

// ---------------------------------------------------------------------------------------------
// The config's bounds (a site that ramps: realtime/test_safe_motion.cpp).

class SafeMotionConfig : public test::RunFolderTest {
 protected:
  // The config error's text, or "" when the config loads.
  [[nodiscard]] std::string error(const std::string& text) const {
    const auto file = dir_ / "ramps.textproto";
    std::ofstream(file) << text;
    try {
      (void)load_experiment(file);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return {};
  }
};

TEST_F(SafeMotionConfig, EachBoundIsRefusedNamingItsField) {
  EXPECT_EQ(error(ramping_config("start_ramp_s: 0.4")), "");
  const std::string late = error(ramping_config("start_ramp_s: 0.45"));
  EXPECT_NE(late.find("site[0].safe_motion.start_ramp_s: is 0.45 s but realtime.start_delay_s is 0.5 s"),
            std::string::npos)
      << late;
  const std::string count = error(ramping_config("start_ramp_s: 0.2 safe_position_m: [0, 0]"));
  EXPECT_NE(count.find("safe_motion.safe_position_m: has 2 values, expected none"), std::string::npos) << count;
  const std::string stroke = error(ramping_config("start_ramp_s: 0.2 safe_position_m: [0.05]"));
  EXPECT_NE(stroke.find("safe_motion.safe_position_m[0]: is 0.05 m, expected a position inside"), std::string::npos)
      << stroke;
  const std::string fast = error(ramping_config("start_ramp_s: 0.2 stop_velocity_m_per_s: 0.3"));
  EXPECT_NE(fast.find("stop_velocity_m_per_s: is 0.3 m/s, expected at most channel 0's velocity_limit_m_per_s 0.2"),
            std::string::npos)
      << fast;
  const std::string none = error(ramping_config("start_ramp_s: 0.2 stop_velocity_m_per_s: 0"));
  EXPECT_NE(none.find("stop_velocity_m_per_s: is 0, expected a velocity > 0"), std::string::npos) << none;
  std::string local = ramping_config("start_ramp_s: 0.2");
  local.replace(local.find("name: \"lab\""), 11, "name: \"lab\" placement: LOCAL");
  EXPECT_NE(error(local).find("expected safe_motion only on a REMOTE site"), std::string::npos) << error(local);
}

}  // namespace
}  // namespace rths::test_safe_motion
