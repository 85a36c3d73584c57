// What every registered delay and loss model of a link's impairment must do, whichever it is: tests
// that run over the registry, so that a model added to config::Impairment's oneof jitter_model or
// config::Loss's oneof model is held to them without a line here beyond its sample config
// (docs/architecture.md §9). Each distribution against its closed form is in test_impairment.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include "common/config/config.hpp"
#include "common/core/component_registry.hpp"
#include "common/transport/impairment.hpp"
#include "experiment.pb.h"
#include "support/alloc_counter.hpp"
#include "support/contract_support.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_impairment_contract {
namespace {

namespace pb = google::protobuf;

// A valid config of each delay model the oneof can hold, by member name: what the contract runs.
const std::map<std::string, std::string>& jitter_samples() {
  static const std::map<std::string, std::string> s{
      {"normal", "delay_s: 0.02 normal { sd_s: 0.003 }"},
      {"pareto", "delay_s: 0.02 pareto { scale_s: 0.002 shape: 2.5 }"},
      {"gamma", "gamma { shape: 2 scale_s: 0.004 }"},
      {"empirical", "empirical { bin_edge_s: [0.01, 0.02, 0.04] bin_weight: [3, 1] }"},
  };
  return s;
}

// And of each loss model (a Loss).
const std::map<std::string, std::string>& loss_samples() {
  static const std::map<std::string, std::string> s{
      {"probability", "probability: 0.05"},
      {"gilbert_elliott", "gilbert_elliott { p_good_to_bad: 0.01 p_bad_to_good: 0.25 loss_in_bad: 0.8 }"},
  };
  return s;
}

template <class Message>
Message parsed(const std::string& text) {
  Message m;
  EXPECT_TRUE(pb::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

// The problems the registered rules find in the model `holder`'s oneof holds (empty: valid).
std::vector<std::string> problems_of(const pb::Message& holder, const char* oneof) {
  return test::component_problems(holder, ComponentContext{}, {}, oneof);
}

// A few thousand packets of `spec` (duplicates included) each delayed by a number >= 0.
void expect_sound_fates(const config::Impairment& spec, const std::string& member, const std::string& what) {
  Impairment impairment(spec);
  EXPECT_GE(impairment.max_delay_s(), spec.delay_s()) << member << " " << what;
  for (int i = 0; i < 2000; ++i) {
    const PacketFate fate = impairment.next_packet();
    ASSERT_TRUE(fate.copies >= 0 && fate.copies <= 2) << member << " " << what;
    ASSERT_GE(fate.delay_s[0], 0.0) << member << " " << what << " packet " << i;
    ASSERT_GE(fate.delay_s[1], 0.0) << member << " " << what << " packet " << i;
  }
}

TEST(ImpairmentContract, EveryDelayAndLossModelTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<JitterModel>(*config::Impairment::descriptor(), "jitter_model",
                                                    jitter_samples());
  test::expect_every_member_registered<LossModel>(*config::Loss::descriptor(), "model", loss_samples());
}

// What the rules accept, the factory builds and its packets are delayed by a number >= 0 (a heavy
// tail may reach infinity, a packet that never arrives): the rules are the only statement of the
// config's bounds, and a model keeps only the guards that protect its memory. Every numeric field of
// each sample, and a histogram's lists, is swept over values on both sides of any bound a rule might
// draw; both verdicts must occur.
TEST(ImpairmentContract, WhatTheRulesAcceptIsBuiltAndDelaysEveryPacket) {
  const std::vector<double> values{-1.0, 0.0, 1e-3, 0.5, 1.0, 2.0, 3.0, 16.0, 1e4};
  for (const std::string& member : test::oneof_members(*config::Impairment::descriptor(), "jitter_model")) {
    test::sweep_verdicts<config::Impairment>(
        test::parse_sample<config::Impairment>(jitter_samples(), member), member, values,
        [](const config::Impairment& spec) { return problems_of(spec, "jitter_model").empty(); },
        [&](const config::Impairment& spec, const std::string& what, bool /*changed*/) {
          expect_sound_fates(spec, member, what);
        },
        {.repeated_doubles = true});
  }
  const auto loss_valid = [](const config::Loss& loss) { return problems_of(loss, "model").empty(); };
  for (const std::string& member : test::oneof_members(*config::Loss::descriptor(), "model")) {
    const auto built = [&](const config::Loss& loss, const std::string& what, bool /*changed*/) {
      auto spec = parsed<config::Impairment>("delay_s: 0.01 jitter_s: 0.002 duplicate_probability: 0.1");
      *spec.mutable_loss() = loss;
      expect_sound_fates(spec, member, what);
    };
    const pb::FieldDescriptor* field = config::Loss::descriptor()->FindFieldByName(member);
    if (field->message_type() != nullptr) {
      test::sweep_verdicts<config::Loss>(test::parse_sample<config::Loss>(loss_samples(), member), member, values,
                                         loss_valid, built, {.every_field_known = true});
      continue;
    }
    int accepted = 0;  // a number rather than a message: swept here
    for (const double v : values) {
      config::Loss loss;
      config::Loss::GetReflection()->SetDouble(&loss, field, v);
      if (!loss_valid(loss)) continue;
      ++accepted;
      built(loss, member + " = " + std::to_string(v), true);
    }
    EXPECT_GT(accepted, 0) << member;
    EXPECT_LT(accepted, static_cast<int>(values.size())) << member << ": the sweep never crossed a rule";
  }
}

// The one guard a histogram keeps beside the rules, N + 1 edges for N >= 1 weights (what its draws
// index), refuses what the rules refuse of the lists' lengths and builds what they accept.
TEST(ImpairmentContract, TheHistogramGuardAgreesWithTheRules) {
  for (int edges = 0; edges <= 4; ++edges) {
    for (int weights = 0; weights <= 4; ++weights) {
      config::Impairment spec;
      config::EmpiricalDelay& empirical = *spec.mutable_empirical();
      for (int i = 0; i < edges; ++i) empirical.add_bin_edge_s(0.01 * (i + 1));
      for (int i = 0; i < weights; ++i) empirical.add_bin_weight(1.0);
      const bool accepted = problems_of(spec, "jitter_model").empty();
      EXPECT_EQ(accepted, edges >= 2 && weights == edges - 1) << edges << " edges, " << weights << " weights";
      if (accepted) {
        EXPECT_NO_THROW(Impairment{spec}) << edges << " edges, " << weights << " weights";
      } else {
        EXPECT_THROW(Impairment{spec}, std::runtime_error) << edges << " edges, " << weights << " weights";
      }
    }
  }
}

// The registry is asked when the impairment is built, never per packet: no packet allocates, with
// every delay model and every loss model.
TEST(ImpairmentContract, NoPacketAllocates) {
  for (const std::string& jitter : test::oneof_members(*config::Impairment::descriptor(), "jitter_model")) {
    for (const std::string& loss : test::oneof_members(*config::Loss::descriptor(), "model")) {
      auto spec = test::parse_sample<config::Impairment>(jitter_samples(), jitter);
      *spec.mutable_loss() = test::parse_sample<config::Loss>(loss_samples(), loss);
      spec.set_duplicate_probability(0.2);
      Impairment impairment(spec);
      double sink = 0;
      const auto before = test::allocations();
      for (int i = 0; i < 10000; ++i) sink += impairment.next_packet().delay_s[0];
      EXPECT_EQ(test::allocations(), before) << jitter << " with " << loss;
      EXPECT_GT(sink, 0.0);
    }
  }
}

// 64-bit FNV-1a over what the packets' fates are, bit for bit.
struct Digest {
  std::uint64_t value = 14695981039346656037ULL;
  void add(std::uint64_t word) {
    for (int byte = 0; byte < 8; ++byte) {
      value ^= (word >> (8 * byte)) & 0xffU;
      value *= 1099511628211ULL;
    }
  }
};

// The delays, losses and duplicates of a seed are the draws the models made before they were
// components (the digests were taken then): a config replays bit for bit across that change.
TEST(ImpairmentContract, SeededFatesAreTheDrawsTheModelsMadeBeforeTheRegistry) {
  const test::ScratchFolder scratch("rths_impairment_contract");
  std::ofstream(scratch.path() / "owd.txt") << "0.012\n0.015\n# a comment\n0.011\n0.040\n0.013\n";
  const std::string trace = (scratch.path() / "owd.txt").string();
  const std::vector<std::pair<std::string, std::uint64_t>> cases{
      {"delay_s: 0.003 jitter_s: 0.005 seed: 11", 0xc913c30e2353b8e8ULL},
      {"delay_s: 0.02 normal { sd_s: 0.003 } loss { probability: 0.05 } duplicate_probability: 0.1 seed: 5",
       0x9bdfc4a93814fae1ULL},
      {"pareto { scale_s: 0.002 shape: 1.8 } loss { gilbert_elliott { p_good_to_bad: 0.02 p_bad_to_good: 0.3 } } "
       "duplicate_probability: 0.03 seed: 17",
       0x7621e2d35787c8cbULL},
      {"delay_s: 0.001 gamma { shape: 0.7 scale_s: 0.004 } duplicate_probability: 0.2 seed: 3", 0x68831cf9084d956aULL},
      {"empirical { bin_edge_s: [0.01, 0.015, 0.03] bin_weight: [2, 1] } loss { probability: 0.2 } seed: 8",
       0x2e7ede0e453177a3ULL},
      {"empirical { trace_path: \"" + trace + "\" } duplicate_probability: 0.3 seed: 2", 0x8485b88b85e05422ULL},
      {"empirical { trace_path: \"" + trace +
           "\" order: REPLAY } duplicate_probability: 0.3 "
           "loss { gilbert_elliott { p_good_to_bad: 0.1 p_bad_to_good: 0.2 loss_in_good: 0.01 } } seed: 4",
       0xbef24c36b04233f7ULL},
  };
  for (const auto& [text, expected] : cases) {
    Impairment impairment(parsed<config::Impairment>(text));
    Digest digest;
    digest.add(std::bit_cast<std::uint64_t>(impairment.max_delay_s()));
    for (int i = 0; i < 5000; ++i) {
      const PacketFate fate = impairment.next_packet();
      digest.add(static_cast<std::uint64_t>(fate.copies));
      digest.add(std::bit_cast<std::uint64_t>(fate.delay_s[0]));
      digest.add(std::bit_cast<std::uint64_t>(fate.delay_s[1]));
    }
    for (int i = 0; i < 100; ++i) digest.add(std::bit_cast<std::uint64_t>(impairment.next_delay_s()));
    std::printf("[ digest   ] %016llx %s\n", static_cast<unsigned long long>(digest.value), text.c_str());
    EXPECT_EQ(digest.value, expected) << text;
  }
}

// Every problem of a link's impairment is reported in one run, each at its field: the rules across its
// models (the central validator's) and each model's own.
TEST(ImpairmentContract, AnImpairmentWithSeveralMistakesReportsThemAll) {
  const std::string config = R"txt(name: "t"
structure { dofs: 1 mass_kg: [1000] stiffness_n_per_m: [1e6] }
ground_motion { record { path: "elcentro.txt" unit: G } }
site {
  name: "lab"
  influence: [-1]
  channel { specimen { spring { stiffness_n_per_m: 1e5 } } }
  link {
    forward {
      delay_s: -1
      jitter_s: 0.001
      normal { }
      loss { gilbert_elliott { p_bad_to_good: 0 loss_in_bad: 2 } }
      duplicate_probability: 2
    }
    backward { empirical { bin_edge_s: [0.02, 0.01] bin_weight: [-1, 1] order: REPLAY } }
  }
}
)txt";
  std::string error;
  try {
    parse_experiment(config, "t.textproto");
  } catch (const ConfigError& e) {
    error = e.what();
  }
  const std::string forward = "site[0].link.forward.";
  const std::string backward = "site[0].link.backward.empirical.";
  for (const std::string& expected : {
           forward + "delay_s: is -1, expected a delay >= 0 s",
           forward + "jitter_s: is 0.001, but normal { ... } is given too; expected 0",
           forward + "normal.sd_s: missing; expected a standard deviation (s) > 0",
           forward + "loss.gilbert_elliott.p_good_to_bad: missing",
           forward + "loss.gilbert_elliott.p_bad_to_good: is 0, expected a per-packet transition probability",
           forward + "loss.gilbert_elliott.loss_in_bad: is 2, expected a loss probability in [0, 1]",
           forward + "duplicate_probability: is 2, expected a duplication probability in [0, 1]",
           backward + "order: is REPLAY, but a histogram has no order",
           backward + "bin_weight: has 2 entries for 2 bin edges",
           backward + "bin_edge_s[1]: is 0.01, not above the previous edge 0.02",
           backward + "bin_weight[0]: is -1, expected a weight >= 0",
       }) {
    EXPECT_NE(error.find(expected), std::string::npos) << "no \"" << expected << "\" in\n" << error;
  }
  EXPECT_EQ(error.find("normal.sd_s: is 0"), std::string::npos) << "a missing parameter is reported once";
  EXPECT_EQ(error.find("are all 0"), std::string::npos) << "a negative weight is not also a zero sum";
}

}  // namespace
}  // namespace rths::test_impairment_contract
