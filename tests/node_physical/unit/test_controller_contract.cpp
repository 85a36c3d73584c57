// What every registered actuator controller and site controller must do, whichever it is: tests that
// run over the registry, so that a controller added to the config's oneof is held to them without a
// line here beyond its sample config (docs/architecture.md, "Components").
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include "common/config/config.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "experiment.pb.h"
#include "node_physical/controllers/actuator_controller.hpp"
#include "node_physical/controllers/frame_inverse_command.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/iir_filter.hpp"
#include "node_physical/controllers/site_controller.hpp"
#include "node_physical/interfaces/measurement.hpp"
#include "results.pb.h"
#include "support/alloc_counter.hpp"
#include "support/contract_support.hpp"
#include "support/malloc_counter.hpp"
#include "support/marths_plant.hpp"
#include "support/test_support.hpp"
#include "support/zoh_frame_plant.hpp"

namespace rths::test_controller_contract {
namespace {

namespace pb = google::protobuf;

constexpr double kRateHz = 1024.0;
constexpr double kDt = 1.0 / kRateHz;

// A valid config of each controller the oneof can hold, by member name: what the contract runs.
const std::map<std::string, std::string>& samples() {
  static const std::map<std::string, std::string> s{
      {"pass_through", "pass_through {}"},
      {"extrapolation", "extrapolation { delay_s: 0.02 order: 3 }"},
      {"feedforward", "feedforward { denominator: [1, 60, 2000] }"},
      {"rls", "rls { taps: 4 }"},
  };
  return s;
}

config::Controller sample(const std::string& member) {
  return test::parse_sample<config::Controller>(samples(), member);
}

std::vector<std::string> members() {
  return test::oneof_members(*config::Controller::descriptor());
}

// The problems the registered rules find in `controller` (an empty list: valid).
std::vector<std::string> problems_of(const config::Controller& controller) {
  return test::component_problems(controller, ComponentContext{.rate_hz = kRateHz});
}

InterfaceMotion target_at(int step) {
  const double t = step * kDt;
  const double w = 2 * std::numbers::pi * 1.5;
  return {0.01 * std::sin(w * t), 0.01 * w * std::cos(w * t), -0.01 * w * w * std::sin(w * t)};
}

TEST(ComponentRegistry, EveryControllerTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<ActuatorController>(*config::Controller::descriptor(), "kind", samples());
}

TEST(ComponentRegistry, EveryActuatorPlantTheConfigCanNameHasRules) {
  for (const pb::Descriptor* type : registry::member_types(*config::ActuatorPlant::descriptor(), "kind")) {
    EXPECT_TRUE(has_component_rules(*type)) << type->full_name();
  }
}

// A site controller's rules see its site: the UKF starts from the site's plant unless given a model,
// and its filter's cutoff is bounded by the site's step rate.
TEST(ComponentRegistry, ASiteControllersRulesSeeItsSite) {
  config::Site site;
  config::SiteController& controller = *site.mutable_actuator_controller();
  controller.mutable_ukf()->set_filter_order(2);
  controller.mutable_ukf()->set_filter_cutoff_hz(600);
  const std::vector<std::string> problems =
      test::component_problems(controller, ComponentContext{.rate_hz = kRateHz, .site = &site}, "actuator_controller");
  ASSERT_EQ(problems.size(), 2U);
  EXPECT_NE(problems[0].find("actuator_controller.ukf.initial_model: missing, and the site has no "
                             "actuator_plant"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("actuator_controller.ukf.filter_cutoff_hz: is 600, expected a cutoff > 0 Hz "
                             "below half the step rate (512 Hz)"),
            std::string::npos)
      << problems[1];
}

// The registry builds the controller the config names: its report is the same member of the report's
// oneof (the names agree by design: controller { rls {} } reports as ControllerReport.rls).
TEST(ComponentRegistry, TheControllerBuiltIsTheOneTheConfigNames) {
  for (const std::string& member : members()) {
    const config::Controller config = sample(member);
    ASSERT_TRUE(problems_of(config).empty()) << member << ": " << problems_of(config).front();
    const std::unique_ptr<ActuatorController> controller = make_controller(config, kRateHz);
    results::ControllerReport report;
    controller->report(report);
    EXPECT_EQ(registry::member_name(report, "kind"), member);
  }
  results::ControllerReport none;
  make_controller(config::Controller{}, kRateHz)->report(none);
  EXPECT_TRUE(none.has_pass_through()) << "no controller given is the pass-through";
}

TEST(ControllerContract, AStepAllocatesNothing) {
  for (const std::string& member : members()) {
    const std::unique_ptr<ActuatorController> controller = make_controller(sample(member), kRateHz);
    Measurement previous;
    for (int i = 0; i < 8; ++i)
      previous.displacement_m = controller->command(target_at(i), previous, kDt).displacement_m;
    const std::uint64_t before = test::allocations_on_this_thread();
    const std::uint64_t mallocs_before = test::mallocs_on_this_thread();  // Eigen's temporaries
    for (int i = 8; i < 4096; ++i) {
      previous.displacement_m = 0.9 * controller->command(target_at(i), previous, kDt).displacement_m;
    }
    EXPECT_EQ(test::allocations_on_this_thread() - before, 0U) << member;
    EXPECT_EQ(test::mallocs_on_this_thread() - mallocs_before, 0U) << member;
  }
}

// A held measurement (no reading came) repeats an old value: whatever that value is, the commands are
// the same, so a controller that learns cannot learn from it. Two controllers see the same targets
// and only held measurements, of different values.
TEST(ControllerContract, LearnsNothingFromAHeldMeasurement) {
  for (const std::string& member : members()) {
    const std::unique_ptr<ActuatorController> a = make_controller(sample(member), kRateHz);
    const std::unique_ptr<ActuatorController> b = make_controller(sample(member), kRateHz);
    Measurement held_a{.held = true};
    Measurement held_b{.displacement_m = 0.004, .velocity_m_per_s = -0.1, .force_n = 250.0, .held = true};
    for (int i = 0; i < 3000; ++i) {
      const InterfaceMotion ca = a->command(target_at(i), held_a, kDt);
      const InterfaceMotion cb = b->command(target_at(i), held_b, kDt);
      ASSERT_EQ(ca.displacement_m, cb.displacement_m) << member << " at step " << i;
      ASSERT_EQ(ca.velocity_m_per_s, cb.velocity_m_per_s) << member << " at step " << i;
      held_b.displacement_m = 0.5 * cb.displacement_m + 0.001 * std::sin(i);  // a value it must not use
    }
  }
}

// What the rules accept, the constructor builds and the controller steps with finite commands: the
// rules are the only statement of the config's bounds, and a constructor keeps only the guards that
// protect its memory, which the rules must imply. Every numeric field of each sample is swept over
// values on both sides of any bound a rule might draw; both verdicts must occur.
TEST(ControllerContract, WhatTheRulesAcceptIsBuiltAndStepsFinite) {
  const std::vector<double> values{-1.0, 0.0, 1e-3, 0.5, 1.0,  2.0,   3.0,   4.0,
                                   5.0,  6.0, 8.0,  9.0, 16.0, 511.0, 600.0, 1e6};
  for (const std::string& member : members()) {
    const auto valid = [](const config::Controller& config) { return problems_of(config).empty(); };
    const auto built = [&](const config::Controller& config, const std::string& what, bool /*changed*/) {
      std::unique_ptr<ActuatorController> controller;
      ASSERT_NO_THROW(controller = make_controller(config, kRateHz)) << member << " " << what;
      Measurement previous;
      for (int i = 0; i < 512; ++i) {
        const InterfaceMotion c = controller->command(target_at(i), previous, kDt);
        ASSERT_TRUE(std::isfinite(c.displacement_m)) << member << " " << what << " step " << i;
        previous.displacement_m = 0.8 * c.displacement_m;
      }
    };
    test::sweep_verdicts<config::Controller>(sample(member), member, values, valid, built, {.repeated_doubles = true});
  }
}

// The rules of a component are all reported at once: five mistakes in one RLS config, five lines.
TEST(ControllerContract, EveryBrokenRuleOfAControllerIsReported) {
  config::Controller rls = sample("rls");
  rls.mutable_rls()->set_taps(9);
  rls.mutable_rls()->set_forgetting_factor(2);
  rls.mutable_rls()->set_filter_cutoff_hz(600);
  rls.mutable_rls()->set_signal_scale(0);
  rls.mutable_rls()->set_divergence_limit(-1);
  const std::vector<std::string> problems = problems_of(rls);
  ASSERT_EQ(problems.size(), 5U);
  EXPECT_EQ(problems[0], "rls.taps: is 9, expected 1..8 taps");
  EXPECT_NE(problems[1].find("rls.forgetting_factor: is 2"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("rls.filter_cutoff_hz: is 600"), std::string::npos) << problems[2];
  EXPECT_NE(problems[3].find("rls.signal_scale: is 0"), std::string::npos) << problems[3];
  EXPECT_NE(problems[4].find("rls.divergence_limit: is -1"), std::string::npos) << problems[4];
}

// The RLS compensator's one guard of its config's values (its low-pass's order, which the filter's
// arrays hold) agrees with its rules on the boundary: the largest order is accepted and built, the
// next refused by both.
TEST(ControllerContract, TheRlsFilterOrderGuardAgreesWithTheRules) {
  for (const std::uint32_t order :
       {static_cast<std::uint32_t>(IirFilter::kMaxOrder), static_cast<std::uint32_t>(IirFilter::kMaxOrder) + 1}) {
    config::Controller controller;
    controller.mutable_rls()->set_filter_order(order);
    const bool valid = problems_of(controller).empty();
    EXPECT_EQ(valid, order <= IirFilter::kMaxOrder) << "order " << order;
    if (valid) {
      EXPECT_NO_THROW(make_controller(controller, kRateHz)) << "order " << order;
    } else {
      EXPECT_THROW(make_controller(controller, kRateHz), std::invalid_argument) << "order " << order;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Site controllers (Site.actuator_controller), on the maRTHS site of examples/marths: its setup of two
// actuators and its actuator_plant, which the seed 003 controllers start from.

const std::map<std::string, std::string>& site_samples() {
  static const std::map<std::string, std::string> s{
      {"decentralised", "decentralised { actuator { rls {} } actuator { extrapolation { delay_s: 0.01 } } }"},
      {"ukf", "ukf {}"},
      {"ekf", "ekf {}"},
      {"lqg", "lqg {}"},
      {"ekf_tf", "ekf_tf {}"},
      {"ukf_tf", "ukf_tf {}"},
  };
  return s;
}

std::vector<std::string> site_members() {
  return test::oneof_members(*config::SiteController::descriptor());
}

// The maRTHS site with `controller` as its actuator controller.
config::Site marths_site(const config::SiteController& controller) {
  static const config::Experiment experiment = test::load_example("marths/elcentro_rls.textproto").experiment;
  config::Site site = experiment.site(0);
  *site.mutable_actuator_controller() = controller;
  return site;
}

config::Site marths_site(const std::string& member) {
  return marths_site(test::parse_sample<config::SiteController>(site_samples(), member));
}

std::vector<std::string> site_problems(const config::Site& site) {
  return test::component_problems(site.actuator_controller(), ComponentContext{.rate_hz = kRateHz, .site = &site},
                                  "actuator_controller");
}

// Stroke targets of the two actuators (m): sines of 2 mm and 1.5 mm at 1.5 Hz, out of phase.
std::array<InterfaceMotion, 2> site_targets(int step) {
  const InterfaceMotion t = target_at(step);
  return {InterfaceMotion{0.2 * t.displacement_m}, InterfaceMotion{-0.15 * t.displacement_m}};
}

// The maRTHS site's plant as identified (its nominal, an exact zero-order hold in mm: the plant a
// model-based controller of the site is designed for) and its last reading.
struct SitePlant {
  test::ZohFramePlant plant{
      FramePlantModel::from_config(marths_site(config::SiteController{}).actuator_plant().two_actuator_frame()), kDt};
  std::array<Measurement, 2> previous{};
};

// `steps` steps of the controller on the site's plant, from step `from`, each as the setup driver
// makes it: the command, the reading, then the reading offered for the strokes passed on
// (filtered_strokes; the LQG's eta_hat_m). Every command finite, else a failure naming `what` and
// the step.
void run_site(SiteController& controller, SitePlant& site, int from, int steps, const std::string& what) {
  std::array<InterfaceMotion, 2> commands{};
  std::array<double, 2> strokes_m{};
  for (int i = from; i < from + steps; ++i) {
    controller.command(site_targets(i), site.previous, commands, kDt);
    for (std::size_t a = 0; a < 2; ++a) {
      ASSERT_TRUE(std::isfinite(commands[a].displacement_m)) << what << " actuator " << a << " step " << i;
    }
    const std::array<double, 2> y =
        site.plant.step({commands[0].displacement_m * 1000.0, commands[1].displacement_m * 1000.0});
    for (std::size_t a = 0; a < 2; ++a) site.previous[a].displacement_m = y[a] / 1000.0;
    static_cast<void>(controller.filtered_strokes(site.previous, strokes_m));
  }
}

TEST(ComponentRegistry, EverySiteControllerTheConfigCanNameHasRulesAFactoryAndASample) {
  test::expect_every_member_registered<SiteController>(*config::SiteController::descriptor(), "kind", site_samples());
}

TEST(SiteControllerContract, AStepAllocatesNothing) {
  for (const std::string& member : site_members()) {
    const config::Site site = marths_site(member);
    ASSERT_TRUE(site_problems(site).empty()) << member << ": " << site_problems(site).front();
    const std::unique_ptr<SiteController> controller = make_site_controller(site, kRateHz);
    ASSERT_EQ(controller->actuators(), 2U) << member;
    SitePlant plant;
    run_site(*controller, plant, 0, 8, member);
    const std::uint64_t before = test::allocations_on_this_thread();
    const std::uint64_t mallocs_before = test::mallocs_on_this_thread();  // Eigen's temporaries
    run_site(*controller, plant, 8, 2048, member);
    EXPECT_EQ(test::allocations_on_this_thread() - before, 0U) << member;
    EXPECT_EQ(test::mallocs_on_this_thread() - mallocs_before, 0U) << member;
  }
}

// A held measurement (no reading came) repeats an old value: whatever that value is, the commands are
// the same. Two controllers see the same targets and the same readings, then only held ones, of
// different values.
TEST(SiteControllerContract, LearnsNothingFromAHeldMeasurement) {
  for (const std::string& member : site_members()) {
    const config::Site site = marths_site(member);
    const std::unique_ptr<SiteController> a = make_site_controller(site, kRateHz);
    const std::unique_ptr<SiteController> b = make_site_controller(site, kRateHz);
    SitePlant plant_a;
    SitePlant plant_b;
    run_site(*a, plant_a, 0, 512, member);
    run_site(*b, plant_b, 0, 512, member);
    std::array<Measurement, 2>& read_a = plant_a.previous;
    std::array<Measurement, 2>& read_b = plant_b.previous;
    std::array<InterfaceMotion, 2> ca{};
    std::array<InterfaceMotion, 2> cb{};
    for (int i = 512; i < 2048; ++i) {
      for (std::size_t k = 0; k < 2; ++k) {
        read_a[k].held = read_b[k].held = true;
        read_b[k].displacement_m = 0.5 * cb[k].displacement_m + 0.001 * std::sin(i + static_cast<int>(k));
      }
      a->command(site_targets(i), read_a, ca, kDt);
      b->command(site_targets(i), read_b, cb, kDt);
      for (std::size_t k = 0; k < 2; ++k) {
        ASSERT_EQ(ca[k].displacement_m, cb[k].displacement_m) << member << " actuator " << k << " step " << i;
      }
    }
  }
}

// What the rules accept, the registry builds and the controller steps with finite commands (the
// constructors keep their own guards, which the rules must imply); every numeric field of each sample
// swept over values on both sides of any bound a rule might draw.
TEST(SiteControllerContract, WhatTheRulesAcceptIsBuiltAndStepsFinite) {
  const std::vector<double> values{-20.0, -1.0, 0.0, 1e-3, 0.5, 1.0, 2.0, 6.0, 9.0, 20.0, 511.0, 600.0, 1e6};
  for (const std::string& member : site_members()) {
    const auto valid = [](const config::SiteController& config) { return site_problems(marths_site(config)).empty(); };
    const auto built = [&](const config::SiteController& config, const std::string& what, bool /*changed*/) {
      const config::Site site = marths_site(config);
      std::unique_ptr<SiteController> controller;
      ASSERT_NO_THROW(controller = make_site_controller(site, kRateHz)) << member << " " << what;
      SitePlant plant;
      run_site(*controller, plant, 0, 512, fmt::format("{} {}", member, what));
    };
    test::sweep_verdicts<config::SiteController>(test::parse_sample<config::SiteController>(site_samples(), member),
                                                 member, values, valid, built);
  }
}

// The rules of each site controller refuse a value out of range with one problem naming its field
// (the config then exits 2 with that line): every rule of a controller is in its validate, and its
// constructor keeps only the guards of its memory (below).
TEST(SiteControllerContract, TheRulesRefuseEachValueOutOfRangeNamingIt) {
  const std::vector<std::string> estimator{"signal_scale: 0",       "initial_covariance: 0",  "process_noise: -1e-11",
                                           "measurement_noise: 0",  "measurement_noise: nan", "filter_order: 9",
                                           "filter_cutoff_hz: 512", "target_window: 3",       "target_window: 33"};
  const std::vector<std::string> sigma_points{"alpha: 0", "alpha: 1.5", "beta: -1"};
  std::vector<std::pair<std::string, std::string>> cases;
  for (const char* member : {"ukf", "ekf", "ekf_tf", "ukf_tf"}) {
    for (const std::string& value : estimator) cases.emplace_back(member, value);
  }
  for (const char* member : {"ukf", "ukf_tf"}) {
    for (const std::string& value : sigma_points) cases.emplace_back(member, value);
  }
  cases.emplace_back("ukf", "kappa: -18");     // the augmented state's dimension
  cases.emplace_back("ukf_tf", "kappa: -10");  // theta's
  for (const char* value : {"output_weight: -1", "integral_weight_1: 0", "integral_weight_2: -1", "input_weight_1: 0",
                            "input_weight_2: nan", "process_noise: -1", "measurement_noise: 0"}) {
    cases.emplace_back("lqg", value);
  }
  for (const auto& [member, value] : cases) {
    config::SiteController controller;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(fmt::format("{} {{ {} }}", member, value), &controller))
        << value;
    const std::vector<std::string> problems = site_problems(marths_site(controller));
    const std::string field = "actuator_controller." + member + "." + value.substr(0, value.find(':')) + ":";
    ASSERT_EQ(problems.size(), 1U) << member << " { " << value << " }";
    EXPECT_NE(problems[0].find(field), std::string::npos) << problems[0];
  }
}

// The rules that need the model and the values together are the rules' too, not the build's (which
// would fail the run with exit 1): a seed 003 compensator whose starting model has a transmission zero
// at or below 0 (its inverse unstable), given or the site's, and an LQG whose regulator's Riccati
// equation has no stabilising solution, are refused with one problem naming the place; at 1.5 times
// the limiting p2 the model is accepted and built. A model whose own values are wrong (a gain of 0)
// gets only its own rules' problem, not the inverse's too.
TEST(SiteControllerContract, TheRulesRefuseWhatOnlyTheModelOrTheDesignShows) {
  const FramePlantModel nominal = test::marths_nominal_plant();
  const auto model_with_p2 = [](double p2, double k11_scale = 1.0) {
    config::TwoActuatorFramePlant model = test::marths_nominal_plant_config();
    model.set_p2_rad_per_s(p2);
    model.set_k11(model.k11() * k11_scale);
    google::protobuf::TextFormat::Printer printer;
    printer.SetSingleLineMode(true);
    std::string text;
    printer.PrintToString(model, &text);
    return "initial_model { " + text + "}";
  };
  // The transmission zero (k11 k22 p2 - k12 k21 p1) / (k11 k22 - k12 k21) is 0 at this p2.
  const double k = nominal.gain[FramePlantModel::kK11] * nominal.gain[FramePlantModel::kK22];
  const double p2_zero = nominal.gain[FramePlantModel::kK12] * nominal.gain[FramePlantModel::kK21] *
                         nominal.theta[FramePlantModel::kP1] / k;
  for (const char* member : {"ukf", "ekf", "ekf_tf", "ukf_tf"}) {
    for (const auto& [p2, refused] : {std::pair{0.5 * p2_zero, true}, std::pair{1.5 * p2_zero, false}}) {
      config::SiteController controller;
      ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(fmt::format("{} {{ {} }}", member, model_with_p2(p2)),
                                                                &controller));
      const std::vector<std::string> problems = site_problems(marths_site(controller));
      if (!refused) {
        EXPECT_TRUE(problems.empty()) << member << " p2 " << p2 << ": " << problems.front();
        EXPECT_NO_THROW(make_site_controller(marths_site(controller), kRateHz)) << member;
        continue;
      }
      ASSERT_EQ(problems.size(), 1U) << member << " p2 " << p2;
      EXPECT_NE(
          problems[0].find(fmt::format("actuator_controller.{}.initial_model: cannot be inverted stably", member)),
          std::string::npos)
          << problems[0];
    }
    config::SiteController zero_gain;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
        fmt::format("{} {{ {} }}", member, model_with_p2(0.5 * p2_zero, 0.0)), &zero_gain));
    const std::vector<std::string> own = site_problems(marths_site(zero_gain));
    ASSERT_EQ(own.size(), 1U) << member;
    EXPECT_NE(own[0].find("initial_model.k11: is 0, expected a nonzero gain"), std::string::npos) << own[0];
    // No initial_model: the site's plant is the model, and the site's is refused as such.
    config::Site site = marths_site(test::parse_sample<config::SiteController>(site_samples(), member));
    site.mutable_actuator_plant()->mutable_two_actuator_frame()->set_p2_rad_per_s(0.5 * p2_zero);
    const std::vector<std::string> problems = site_problems(site);
    ASSERT_EQ(problems.size(), 1U) << member;
    EXPECT_NE(
        problems[0].find("initial_model: absent, and the site's actuator_plant it starts from cannot be inverted"),
        std::string::npos)
        << problems[0];
  }
  for (const char* value : {"input_weight_1: 1e300", "input_weight_2: 1e-300"}) {
    config::SiteController controller;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(fmt::format("lqg {{ {} }}", value), &controller));
    const std::vector<std::string> problems = site_problems(marths_site(controller));
    ASSERT_EQ(problems.size(), 1U) << value;
    EXPECT_NE(problems[0].find("actuator_controller.lqg: LQG design: the regulator's Riccati equation has no "
                               "stabilising solution"),
              std::string::npos)
        << problems[0];
  }
}

// A calibration file is read into a channel's controller by the config loader; an actuator of a
// decentralised site controller cannot name one (its rules say so, where the build would fail).
TEST(SiteControllerContract, ADecentralisedRlsNamesNoCalibrationFile) {
  config::SiteController controller;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(decentralised { actuator { rls { calibration_path: "cal.textproto" } } actuator { rls { } } })", &controller));
  const std::vector<std::string> problems = site_problems(marths_site(controller));
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_NE(problems[0].find("decentralised.actuator[0].rls.calibration_path: is a calibration file"),
            std::string::npos)
      << problems[0];
}

// The guards of a seed 003 controller's constructor (the low-pass's order and the command law's target
// window, which arrays hold) agree with the rules on their boundaries: the largest value is accepted
// and built, the next refused by both.
TEST(SiteControllerContract, TheArrayGuardsAgreeWithTheRules) {
  const std::array<std::pair<const char*, std::uint32_t>, 2> largest{
      {{"filter_order", static_cast<std::uint32_t>(IirFilter::kMaxOrder)},
       {"target_window", static_cast<std::uint32_t>(FrameInverseCommand::kMaxTargetWindow)}}};
  for (const char* member : {"ukf", "ekf", "ekf_tf", "ukf_tf"}) {
    for (const auto& [field, most] : largest) {
      for (const std::uint32_t value : {most, most + 1}) {
        config::SiteController controller;
        const std::string text = fmt::format("{} {{ {}: {} }}", member, field, value);
        ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &controller)) << text;
        const config::Site site = marths_site(controller);
        const bool valid = site_problems(site).empty();
        EXPECT_EQ(valid, value <= most) << text;
        if (valid) {
          EXPECT_NO_THROW(make_site_controller(site, kRateHz)) << text;
        } else {
          EXPECT_THROW(make_site_controller(site, kRateHz), std::invalid_argument) << text;
        }
      }
    }
  }
}

}  // namespace
}  // namespace rths::test_controller_contract
