// What every registered ground-motion source must do, whichever it is: tests that run over the
// registry, so that a source added to config::GroundMotion's oneof is held to them without a line here
// beyond its sample config (docs/architecture.md §9). The readers' own rules (file and line in every
// error, the bounds on a record) are in test_ground_motion.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include "common/core/component_registry.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "common/ground_motions/synthetic_motion.hpp"
#include "experiment.pb.h"
#include "support/contract_support.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_ground_motion_contract {
namespace {

namespace pb = google::protobuf;

// A valid config of each source the oneof can hold, by member name: what the contract runs. A record
// is read from the folder of the examples' ground motions.
const std::map<std::string, std::string>& samples() {
  static const std::map<std::string, std::string> s{
      {"record", "record { path: \"elcentro_1940_ns_g.dat\" unit: G }"},
      {"synthetic", "synthetic { seed: 3 duration_s: 4 sample_rate_hz: 100 }"},
  };
  return s;
}

std::filesystem::path records() {
  return std::filesystem::path(RTHS_DATA_DIR) / "ground_motions";
}

config::GroundMotion sample(const std::string& member) {
  return test::parse_sample<config::GroundMotion>(samples(), member);
}

std::vector<std::string> members() {
  return test::oneof_members(*config::GroundMotion::descriptor(), "source");
}

// The problems the registered rules find in `motion`'s source (an empty list: valid).
std::vector<std::string> problems_of(const config::GroundMotion& motion) {
  return test::component_problems(motion, ComponentContext{}, "ground_motion", "source");
}

TEST(GroundMotionContract, EverySourceTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<GroundMotion>(*config::GroundMotion::descriptor(), "source", samples());
}

// The registry builds the source the config names, scaled by the ground motion that holds it.
TEST(GroundMotionContract, TheMotionBuiltIsTheSourceTheConfigNamesScaled) {
  for (const std::string& member : members()) {
    config::GroundMotion config = sample(member);
    ASSERT_TRUE(problems_of(config).empty()) << member << ": " << problems_of(config).front();
    const GroundMotion motion = load_ground_motion(config, records());
    config.set_scale(-0.5);
    const GroundMotion scaled = load_ground_motion(config, records());
    ASSERT_EQ(scaled.samples().size(), motion.samples().size()) << member;
    EXPECT_GE(motion.samples().size(), 2U) << member;
    for (std::size_t i = 0; i < motion.samples().size(); ++i) {
      ASSERT_EQ(scaled.samples()[i], -0.5 * motion.samples()[i]) << member << " sample " << i;
    }
    EXPECT_NE(scaled.source().find(" x -0.5"), std::string::npos) << member << ": " << scaled.source();
  }
  EXPECT_EQ(load_ground_motion(sample("record"), records()).source(), "elcentro_1940_ns_g.dat");
  EXPECT_EQ(load_ground_motion(sample("synthetic"), records()).source(), "synthetic Kanai-Tajimi seed 3");
  EXPECT_THROW(load_ground_motion(config::GroundMotion{}, records()), std::invalid_argument);
}

// What the rules accept, the factory builds, finite and within the bound on a ground acceleration:
// the rules are the only statement of the config's bounds, and a source keeps only the guards that
// protect memory. Every numeric field of each sample is swept over values on both sides of any bound
// a rule might draw (both verdicts must occur for a source that has numbers), and so is the scale of
// the ground motion that holds it. A record's values are checked as its file is read, so a scale that
// takes one beyond the bound is refused there, naming it.
TEST(GroundMotionContract, WhatTheRulesAcceptIsBuiltFiniteAndBounded) {
  const std::vector<double> values{-1.0, 0.0, 1e-3, 0.5, 1.0, 2.0, 3.0, 16.0, 100.0, 1e4};
  const auto valid = [](const config::GroundMotion& config) { return problems_of(config).empty(); };
  for (const std::string& member : members()) {
    const auto built = [&](const config::GroundMotion& config, const std::string& what, bool /*changed*/) {
      GroundMotion motion;
      try {
        motion = load_ground_motion(config, records());
      } catch (const std::runtime_error& e) {
        EXPECT_TRUE(config.has_record()) << member << " " << what << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find("beyond the 100 m/s^2"), std::string::npos) << e.what();
        return;
      }
      const double peak = motion.peak_m_per_s2();
      EXPECT_TRUE(std::isfinite(peak) && peak <= kMaxGroundAccelerationMPerS2) << member << " " << what;
      EXPECT_GE(motion.samples().size(), 2U) << member << " " << what;
    };
    const config::GroundMotion base = sample(member);
    test::sweep_verdicts<config::GroundMotion>(base, member, values, valid, built);
    for (const double scale : {-1e3, -1.0, 0.0, 0.2, 1.0, 10.0, 100.0, 1e3}) {
      config::GroundMotion scaled = base;
      scaled.set_scale(scale);
      if (valid(scaled)) built(scaled, "scale = " + std::to_string(scale), true);
    }
  }
}

// A record's rules are about its file's format and unit, not numbers: every combination the rules
// accept is read.
TEST(GroundMotionContract, EveryFormatAndUnitTheRulesAcceptIsRead) {
  const test::ScratchFolder scratch("rths_ground_motion_contract");
  std::ofstream(scratch.path() / "two.dat") << "0 0.01\n0.02 -0.02\n0.04 0.03\n";
  std::ofstream(scratch.path() / "peer.AT2") << "title\nevent\nunits\nNPTS=    3, DT=   .0200 SEC\n.01 -.02 .03\n";
  int accepted = 0;
  for (const config::RecordFormat format : {config::TWO_COLUMN, config::PEER_AT2}) {
    for (const int unit : {-1, static_cast<int>(config::G), static_cast<int>(config::M_PER_S2)}) {
      config::GroundMotion motion;
      config::RecordFile& record = *motion.mutable_record();
      record.set_path(format == config::PEER_AT2 ? "peer.AT2" : "two.dat");
      record.set_format(format);
      if (unit >= 0) record.set_unit(static_cast<config::AccelerationUnit>(unit));
      if (!problems_of(motion).empty()) continue;
      ++accepted;
      EXPECT_EQ(load_ground_motion(motion, scratch.path()).samples().size(), 3U) << record.ShortDebugString();
    }
  }
  EXPECT_EQ(accepted, 3);  // TWO_COLUMN in G or M_PER_S2, PEER_AT2 in G
}

// The one guard make_synthetic keeps beside the rules, the samples memory may hold, draws its line
// where the rules do: the most samples a ground motion may hold is accepted and built, one more is
// refused by both.
TEST(GroundMotionContract, TheSyntheticSampleGuardAgreesWithTheRules) {
  for (const double extra : {0.0, 1.0}) {
    config::GroundMotion motion;
    config::SyntheticMotion& synthetic = *motion.mutable_synthetic();
    synthetic.set_sample_rate_hz(1e6);
    synthetic.set_duration_s((static_cast<double>(kMaxGroundMotionSamples) - 1 + extra) / 1e6);
    const bool accepted = problems_of(motion).empty();
    EXPECT_EQ(accepted, extra == 0.0) << synthetic.ShortDebugString();
    if (accepted) {
      EXPECT_EQ(make_synthetic(synthetic).samples().size(), kMaxGroundMotionSamples);
    } else {
      EXPECT_THROW(make_synthetic(synthetic), std::invalid_argument);
    }
  }
}

// Every problem of a source is reported in one run, each at its field.
TEST(GroundMotionContract, ASourceWithSeveralMistakesReportsThemAll) {
  config::GroundMotion motion;
  ASSERT_TRUE(pb::TextFormat::ParseFromString(
      "synthetic { duration_s: -1 pga_m_per_s2: 0 ground_damping: -0.1 rise_s: -2 }", &motion));
  const std::vector<std::string> synthetic = problems_of(motion);
  ASSERT_EQ(synthetic.size(), 4U) << ::testing::PrintToString(synthetic);
  EXPECT_EQ(synthetic[0], "ground_motion.synthetic.duration_s: is -1, expected > 0");
  EXPECT_EQ(synthetic[1], "ground_motion.synthetic.pga_m_per_s2: is 0, expected > 0");
  EXPECT_EQ(synthetic[2], "ground_motion.synthetic.ground_damping: is -0.1, expected > 0");
  EXPECT_EQ(synthetic[3], "ground_motion.synthetic.rise_s: is -2, expected >= 0");

  ASSERT_TRUE(pb::TextFormat::ParseFromString("record { format: PEER_AT2 unit: M_PER_S2 }", &motion));
  const std::vector<std::string> record = problems_of(motion);
  ASSERT_EQ(record.size(), 2U) << ::testing::PrintToString(record);
  EXPECT_EQ(record[0],
            "ground_motion.record.path: missing; expected the record file (a relative path starts from the config "
            "file's folder)");
  EXPECT_EQ(record[1], "ground_motion.record.unit: is M_PER_S2, but PEER AT2 records are in g; expected G");

  // The peak after scale is named at the ground motion's scale when there is one.
  ASSERT_TRUE(pb::TextFormat::ParseFromString("synthetic { pga_m_per_s2: 50 } scale: 3", &motion));
  const std::vector<std::string> scaled = problems_of(motion);
  ASSERT_EQ(scaled.size(), 1U) << ::testing::PrintToString(scaled);
  EXPECT_TRUE(scaled[0].starts_with("ground_motion.scale: 50 m/s^2 (pga_m_per_s2) x 3 = 150 m/s^2 is beyond"))
      << scaled[0];
}

}  // namespace
}  // namespace rths::test_ground_motion_contract
