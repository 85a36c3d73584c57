// The modified Smith predictor of a multi-axial site (FrameSmithPart1/2): a frame model of all the
// site's channels at both ends. Each part against an independent FrameForceModel fed by hand, the
// handshake text of the model, and the refusal of what is not finite.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "smith_predictor/frame_model/frame_force_model.hpp"
#include "smith_predictor/parts/frame_smith.hpp"
#include "support/alloc_counter.hpp"
#include "support/test_support.hpp"

namespace rths::test_frame_smith {
namespace {

constexpr double kDt = 1.0 / 1024.0;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The maRTHS site's force model (examples/marths: the experimental frame's 5 DOFs).
config::FrameForceModel frame_config() {
  return test::load_example("marths/elcentro_rls.textproto").experiment.site(0).force_model();
}

// A motion of both channels at step k: 2 mm and 8 mrad at 2.29 Hz and 7 Hz.
std::array<double, 2> motion_at(int k) {
  const double t = k * kDt;
  return {0.002 * std::sin(2 * M_PI * 2.29 * t), 0.008 * std::sin(2 * M_PI * 7.0 * t + 0.3)};
}

TEST(FrameSmith, PartOneIsTheModelOfTheCurrentMotionPlusEachChannelsNewestError) {
  const config::FrameForceModel config = frame_config();
  FrameSmithPart1 part1(config, 2);
  FrameForceModel independent(config, 2);
  for (int k = 0; k < 300; ++k) {
    const auto x = motion_at(k);
    const std::array<InterfaceMotion, 2> motion{InterfaceMotion{x[0], 1.0, 2.0}, InterfaceMotion{x[1], 3.0, 4.0}};
    // Errors that change every step, and feedback forces that must not be used.
    const std::array<ChannelFeedback, 2> newest{ChannelFeedback{0.1 * k, 1e9, 1.0},
                                                ChannelFeedback{-0.2 * k, -1e9, 1.0}};
    std::array<double, 2> force{};
    ASSERT_TRUE(part1.estimate(motion, newest, force, kDt));
    std::array<double, 2> model{};
    ASSERT_TRUE(independent.step(x, model, kDt));
    // The same arithmetic: equal to the last bit.
    EXPECT_EQ(force[0], model[0] + 0.1 * k) << k;
    EXPECT_EQ(force[1], model[1] - 0.2 * k) << k;
  }
}

TEST(FrameSmith, PartTwoIsTheMeasuredForceLessTheModelOfTheMotionItIsGiven) {
  const config::FrameForceModel config = frame_config();
  FrameSmithPart2 part2(config, 2);
  FrameForceModel independent(config, 2);
  for (int k = 0; k < 300; ++k) {
    const auto x = motion_at(k);
    const std::array<double, 2> measured{5.0 + k, -7.0 * k};
    std::array<double, 2> error{};
    ASSERT_TRUE(part2.model_error(x, measured, error, kDt));
    std::array<double, 2> model{};
    ASSERT_TRUE(independent.step(x, model, kDt));
    EXPECT_EQ(error[0], measured[0] - model[0]) << k;
    EXPECT_EQ(error[1], measured[1] - model[1]) << k;
  }
}

TEST(FrameSmith, AnExactModelAtBothEndsSendsNoErrorAndRebuildsTheForce) {
  // The site's force is the same frame model of the same motion: e is 0 at every step, and part 1
  // driven by that motion returns exactly the site's force, whatever delayed e it holds (here 0).
  const config::FrameForceModel config = frame_config();
  FrameForceModel specimen(config, 2);
  FrameSmithPart2 part2(config, 2);
  FrameSmithPart1 part1(config, 2);
  for (int k = 0; k < 300; ++k) {
    const auto x = motion_at(k);
    std::array<double, 2> measured{};
    ASSERT_TRUE(specimen.step(x, measured, kDt));
    std::array<double, 2> error{};
    ASSERT_TRUE(part2.model_error(x, measured, error, kDt));
    EXPECT_EQ(error[0], 0.0) << k;
    EXPECT_EQ(error[1], 0.0) << k;
    const std::array<InterfaceMotion, 2> motion{InterfaceMotion{x[0], 0, 0}, InterfaceMotion{x[1], 0, 0}};
    const std::array<ChannelFeedback, 2> newest{ChannelFeedback{error[0], 0, 0}, ChannelFeedback{error[1], 0, 0}};
    std::array<double, 2> force{};
    ASSERT_TRUE(part1.estimate(motion, newest, force, kDt));
    EXPECT_EQ(force[0], measured[0]) << k;
    EXPECT_EQ(force[1], measured[1]) << k;
  }
}

TEST(FrameSmith, NothingNotFiniteIsPassedOnAndTheOutputsAreLeftAlone) {
  const config::FrameForceModel config = frame_config();
  FrameSmithPart1 part1(config, 2);
  FrameSmithPart2 part2(config, 2);
  const std::array<InterfaceMotion, 2> motion{InterfaceMotion{kNaN, 0, 0}, InterfaceMotion{0.001, 0, 0}};
  const std::array<ChannelFeedback, 2> newest{};
  std::array<double, 2> force{11.0, 12.0};
  EXPECT_FALSE(part1.estimate(motion, newest, force, kDt));
  EXPECT_EQ(force[0], 11.0);
  EXPECT_EQ(force[1], 12.0);
  std::array<double, 2> error{13.0, 14.0};
  const std::array<double, 2> x{0.001, kNaN};
  const std::array<double, 2> measured{1.0, 2.0};
  EXPECT_FALSE(part2.model_error(x, measured, error, kDt));
  EXPECT_EQ(error[0], 13.0);
  EXPECT_EQ(error[1], 14.0);
  // A span of the wrong size is refused too.
  const std::array<double, 1> one{0.0};
  EXPECT_FALSE(part2.model_error(one, measured, error, kDt));
}

TEST(FrameSmith, BothPartsStepWithoutAllocating) {
  const config::FrameForceModel config = frame_config();
  FrameSmithPart1 part1(config, 2);
  FrameSmithPart2 part2(config, 2);
  std::array<InterfaceMotion, 2> motion{};
  const std::array<ChannelFeedback, 2> newest{};
  std::array<double, 2> force{};
  std::array<double, 2> error{};
  const std::array<double, 2> measured{1.0, 2.0};
  const std::uint64_t before = test::allocations_on_this_thread();
  for (int k = 0; k < 100; ++k) {
    const auto x = motion_at(k);
    motion[0].displacement_m = x[0];
    motion[1].displacement_m = x[1];
    ASSERT_TRUE(part1.estimate(motion, newest, force, kDt));
    ASSERT_TRUE(part2.model_error(x, measured, error, kDt));
  }
  EXPECT_EQ(test::allocations_on_this_thread() - before, 0U);
}

TEST(FrameSmith, TheHandshakeTextTellsEveryNumberToTheLastBit) {
  const config::FrameForceModel config = frame_config();
  config::FrameForceModel other = config;
  EXPECT_EQ(describe_frame_model(config), describe_frame_model(other));
  other.set_stiffness_n_per_m(7, std::nextafter(config.stiffness_n_per_m(7), 0.0));
  EXPECT_NE(describe_frame_model(config), describe_frame_model(other));
  other = config;
  other.set_mass_kg(0, std::nextafter(config.mass_kg(0), 1e9));
  EXPECT_NE(describe_frame_model(config), describe_frame_model(other));
  other = config;
  other.set_damping_ns_per_m(24, std::nextafter(config.damping_ns_per_m(24), 1e9));
  EXPECT_NE(describe_frame_model(config), describe_frame_model(other));
}

}  // namespace
}  // namespace rths::test_frame_smith
