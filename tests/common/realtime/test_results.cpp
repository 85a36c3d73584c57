// The results schema (proto/results.proto) against the real executables: every file they write is
// exactly the schema, parsed with unknown fields refused and printed back byte for byte, and refused
// once it holds a field the schema lacks (the parser's own rules and the schema's comments:
// unit/test_results.cpp).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "common/core/exit_codes.hpp"
#include "common/records/results.hpp"
#include "experiment.pb.h"
#include "node_numerical/engine/experiment.hpp"
#include "node_physical/drivers/udp_bridge.hpp"
#include "results.pb.h"
#include "support/contract_support.hpp"
#include "support/process.hpp"
#include "support/results_json.hpp"
#include "support/test_support.hpp"

namespace rths::test_results {
namespace {

using google::protobuf::Descriptor;

namespace fs = std::filesystem;

// The diverging structure of test_non_finite.cpp: RK4 far beyond its stability limit, so the state
// overflows within ~90 steps and the metrics hold NaN and infinities (exit code 9).
constexpr const char* kDiverging = R"(name: "diverging"
rate_hz: 1024
duration_s: 2
structure { dofs: 1 mass_kg: [1] stiffness_n_per_m: [4e8] }
ground_motion { synthetic { seed: 3 duration_s: 2 } }
site { name: "lab" influence: [-1] channel { specimen { spring { stiffness_n_per_m: 1000 } } } }
)";

using test::refusal;
using test::with_member;

// One results file of a real run: parsed against the schema, printed again identically, and refused
// once it holds a member the schema does not declare, at its top and in its last nested object.
template <typename Message>
Message expect_exactly_the_schema(const fs::path& file) {
  SCOPED_TRACE(file.string());
  const std::string text = test::slurp(file);
  EXPECT_FALSE(text.empty());
  Message message;
  EXPECT_NO_THROW(read_results_json(file, message));
  EXPECT_EQ(results_json(message), text) << "printed again, the file differs";

  const std::string top = refusal<Message>(with_member(text, text.find('{'), "\"undeclared_member\": 1,"));
  EXPECT_NE(top.find("undeclared_member"), std::string::npos) << top;
  const std::size_t nested = text.rfind(": {");
  EXPECT_NE(nested, std::string::npos);
  const std::string inner = refusal<Message>(with_member(text, nested + 2, R"("undeclared_nested": "0",)"));
  EXPECT_NE(inner.find("undeclared_nested"), std::string::npos) << inner;
  return message;
}

// Which member of each oneof the channels reported: e.g. "controller.rls", "plant.linear".
void collect_kinds(const google::protobuf::RepeatedPtrField<results::Channel>& channels, std::set<std::string>& kinds) {
  for (const results::Channel& c : channels) {
    // A oneof's case is the number of the member set (0: none, no field).
    const auto* controller_kind =
        results::ControllerReport::descriptor()->FindFieldByNumber(c.controller().kind_case());
    const auto* plant_kind = results::PlantReport::descriptor()->FindFieldByNumber(c.plant().kind_case());
    EXPECT_NE(controller_kind, nullptr) << "a channel without a controller report";
    EXPECT_NE(plant_kind, nullptr) << "a channel without a plant report";
    if (controller_kind != nullptr) kinds.insert("controller." + controller_kind->name());
    if (plant_kind != nullptr) kinds.insert("plant." + plant_kind->name());
  }
}

class ResultsSchema : public test::RunFolderTest {
 protected:
  // rths-numerical run CONFIG in virtual time into dir_/name; returns its exit code.
  int run(const std::string& name, const fs::path& config, const std::vector<std::string>& sets) {
    std::vector<std::string> args{"run", config.string(), "--out", (dir_ / name).string(), "--quiet"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    test::Process p("rths-numerical", args, dir_ / name);
    return p.wait(std::chrono::seconds(60));
  }
};

TEST_F(ResultsSchema, EveryFileOfRealRunsIsExactlyTheSchema) {
  std::set<std::string> kinds;
  // Virtual time: a local and a remote site (seed 002 Case III), the linear actuator under RLS (its
  // adaptation frozen, so the freeze is reported) and under the model feedforward, the servo-hydraulic
  // one under extrapolation, and a diverged run whose metrics are NaN and infinite.
  ASSERT_EQ(run("case3", test::example("seed002/case3.textproto"), {"duration_s=1"}), kExitCompleted);
  ASSERT_EQ(run("rls", test::example("actuator/spring_iisl.textproto"),
                {"duration_s=2", "site[0].channel[0].controller.rls={ divergence_limit: 1.2 }"}),
            kExitCompleted);
  ASSERT_EQ(run("feedforward", test::example("actuator/spring_iisl.textproto"),
                {"duration_s=1", "site[0].channel[0].controller.feedforward={ denominator: [1, 75] }"}),
            kExitCompleted);
  ASSERT_EQ(run("servo", test::example("actuator/spring_servo_hydraulic.textproto"), {"duration_s=1"}), kExitCompleted);
  std::ofstream(dir_ / "diverging.textproto") << kDiverging;
  ASSERT_EQ(run("diverging", dir_ / "diverging.textproto", {}), kExitNonFinite);
  // The maRTHS site: its actuator plant, and every site controller but the example's own decentralised
  // RLS (each report kind) as its actuator controller.
  std::vector<std::string> names{"case3", "rls", "feedforward", "servo", "diverging"};
  for (const std::string& controller : test::oneof_members(*config::SiteController::descriptor())) {
    if (controller == "decentralised") continue;
    names.push_back("marths_" + controller);
    ASSERT_EQ(run(names.back(), test::example("marths/elcentro_rls.textproto"),
                  {"duration_s=6", "site[iisl].actuator_controller={ " + controller + " { } }"}),
              kExitCompleted)
        << controller;
  }
  for (const std::string& name : names) {
    const auto summary = expect_exactly_the_schema<results::RunSummary>(dir_ / name / "summary.json");
    EXPECT_EQ(summary.mode(), results::virtual_time) << name;
    for (const auto& [site, s] : summary.sites()) {
      collect_kinds(s.channels(), kinds);
      collect_kinds(s.multi_axial().actuators(), kinds);
    }
  }
  const auto case3 = test::read_summary(dir_ / "case3/summary.json");
  EXPECT_EQ(case3.sites().at("uconn").placement(), results::RunSite::local);
  EXPECT_TRUE(case3.sites().at("purdue").has_site_side() && case3.sites().at("purdue").has_links());
  const auto rls = test::read_summary(dir_ / "rls/summary.json");
  EXPECT_EQ(rls.sites().at("spring").channels(0).controller().rls().frozen(), results::RlsController::diverged);
  // The diverged run's metrics went through the file as "NaN" and "Infinity" and came back as such.
  const auto diverged = test::read_summary(dir_ / "diverging/summary.json");
  EXPECT_TRUE(diverged.has_stop_step());
  EXPECT_TRUE(std::isnan(diverged.responses().at("x1").rho()));
  EXPECT_EQ(diverged.responses().at("x1").sd(), std::numeric_limits<double>::infinity());

  // Real time through the relay: the numerical node's summary, the site's and the relay's. The IISL
  // actuator under pass-through: a controller that extrapolates could trip the stroke interlock on a
  // burst of held commands on a loaded machine, and this test is about the files, not the control.
  fs::create_directories(dir_ / "rt");
  ASSERT_EQ(
      test::run_through_relay(dir_ / "rt", test::example("actuator/spring_iisl.textproto").string(), "spring", {}, 2.0),
      kExitCompleted);
  const auto rt = expect_exactly_the_schema<results::RunSummary>(dir_ / "rt/run/summary.json");
  EXPECT_EQ(rt.mode(), results::real_time);
  EXPECT_TRUE(rt.has_loop());
  EXPECT_TRUE(rt.sites().at("spring").numerical_side().has_socket());
  const auto site = expect_exactly_the_schema<results::SiteSummary>(dir_ / "rt/site/site_spring.json");
  EXPECT_EQ(site.exit_code(), kExitCompleted);
  collect_kinds(site.channels(), kinds);
  const auto relay = expect_exactly_the_schema<results::RelaySummary>(dir_ / "rt/relay/relay_spring.json");
  EXPECT_GT(relay.forward().received(), 0U);

  // A UDP bridge's report: the driver against rths-target on the bridge example, its channel in a
  // site summary written and read as rths-physical writes site_<name>.json.
  fs::create_directories(dir_ / "bridge");
  test::Process target("rths-target",
                       {test::example("hardware/spring_bridge.textproto").string(), "--site", "spring", "--listen",
                        "127.0.0.1:0", "--duration-s", "1", "--watchdog-s", "1"},
                       dir_ / "bridge" / "target");
  const std::string at = target.wait_for_line("listening on ", std::chrono::seconds(10));
  ASSERT_FALSE(at.empty()) << target.err();
  const config::Site bridge_site =
      load_experiment(test::example("hardware/spring_bridge.textproto"), {}, false).experiment.site(0);
  config::UdpBridge bridge = bridge_site.driver().udp_bridge();
  bridge.set_target(at);
  // The report's fields are tested here, not the latency nor the watchdog: a sanitized build's step
  // can pause for more than the target's default 4 ms between two commands.
  bridge.set_reply_timeout_s(0.1);
  const auto driver = make_udp_bridge(bridge, bridge_site, 1024);
  std::array<Measurement, 1> measured{};
  driver->open(measured);
  for (int j = 0; j < 100; ++j) {
    ASSERT_TRUE(driver->exchange(std::array<InterfaceMotion, 1>{}, measured, 1.0 / 1024)) << driver->fault();
  }
  results::SiteSummary bridged;
  results::Channel& channel = *bridged.add_channels();
  channel.mutable_controller()->mutable_pass_through();
  driver->report(0, *channel.mutable_plant());
  write_results_json(dir_ / "bridge" / "site_spring.json", bridged);
  const auto read = expect_exactly_the_schema<results::SiteSummary>(dir_ / "bridge" / "site_spring.json");
  EXPECT_EQ(read.channels(0).plant().udp_bridge().replies(), 100U);
  collect_kinds(read.channels(), kinds);
  EXPECT_EQ(target.wait(std::chrono::seconds(20)), 0) << target.err();

  // Between them the runs reported every controller and every plant the schema knows.
  for (const Descriptor* report : {results::ControllerReport::descriptor(), results::PlantReport::descriptor()}) {
    const std::string prefix = report == results::ControllerReport::descriptor() ? "controller." : "plant.";
    for (int f = 0; f < report->oneof_decl(0)->field_count(); ++f) {
      EXPECT_TRUE(kinds.contains(prefix + report->oneof_decl(0)->field(f)->name()))
          << prefix << report->oneof_decl(0)->field(f)->name() << " was never reported";
    }
  }
}

}  // namespace
}  // namespace rths::test_results
