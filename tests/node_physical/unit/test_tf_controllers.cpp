// Seed 003's EKF-TF and UKF-TF compensators (ekf_tf_controller.hpp, ukf_tf_controller.hpp) in closed
// runs against an independent simulation of the maRTHS plant (frame_controller_run.hpp). Their
// estimation model is tested on its own (test_frame_command_model.cpp); what they share with the SS
// variants (the inverse, the filters, the start, the guards) in test_ukf_controller.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "experiment.pb.h"
#include "node_physical/controllers/ekf_tf_controller.hpp"
#include "node_physical/controllers/frame_plant_model.hpp"
#include "node_physical/controllers/ukf_tf_controller.hpp"
#include "node_physical/interfaces/measurement.hpp"
#include "results.pb.h"
#include "support/frame_controller_run.hpp"
#include "support/zoh_frame_plant.hpp"

namespace test_tf_controllers {
namespace {

using rths::EkfTfInverseDynamicsController;
using rths::EstimateFreeze;
using rths::FramePlantModel;
using rths::UkfTfInverseDynamicsController;
using namespace rths::test::frame;  // the closed runs and their measures

// Each variant with its config (the schema's defaults are seed 003 Table 1's values) and its report.
template <class Controller>
struct Variant;
template <>
struct Variant<EkfTfInverseDynamicsController> {
  using Config = rths::config::EkfTfInverseDynamics;
  static constexpr const char* kName = "EKF-TF";
  // How far EstimateMovesTowardAPerturbedPlant must get: band error and tracking below 1/this of the
  // start's and the held model's (measured: 31 and 60-70 times; 2 and 1.3-6 without the states'
  // root sensitivities).
  static constexpr double kConvergence = 10.0;
  // How far held readings may move the estimate (HeldReadingsNowAndThen...: measured 1.9e-5; 1.7e-4
  // if the observation waits 64 readings after a held one, 1.8e-3 if 3). A held reading that updates
  // the estimate as a new one moves it 1.0e-4, only just over: AHeldReadingsValueIsNeverRead is the
  // test that catches that (8.8e-4 there).
  static constexpr double kHeldBound = 1e-4;
  // The band error EstimateStaysNearTheTruePlant allows (measured 4.0e-4).
  static constexpr double kStayBound = 2e-3;
  static const rths::results::InverseDynamicsReport& report(const rths::results::ControllerReport& r) {
    EXPECT_TRUE(r.has_ekf_tf());
    return r.ekf_tf();
  }
};
template <>
struct Variant<UkfTfInverseDynamicsController> {
  using Config = rths::config::UkfTfInverseDynamics;
  static constexpr const char* kName = "UKF-TF";
  // Table 1's UKF-TF R is 100 times the EKF-TF's, and it learns slower (measured: 6 and 7-8 times; 4
  // and 4-7 without the states' root sensitivities).
  static constexpr double kConvergence = 5.0;
  // How far held readings may move the estimate: measured 9.8e-4, as far as the sigma points'
  // paths part whatever the held readings do (1.1e-3 if the observation waits 3 readings after a
  // held one, 6.9e-5 if a held reading updates the estimate as a new one). So this bound catches a
  // held reading that derails the estimate only; AHeldReadingsValueIsNeverRead, exact, catches a
  // held reading used, and the EKF-TF's bound the wait, which both variants share.
  static constexpr double kHeldBound = 2e-3;
  // The band error EstimateStaysNearTheTruePlant allows (measured 4.2e-3, the transform's bias).
  static constexpr double kStayBound = 1e-2;
  static const rths::results::InverseDynamicsReport& report(const rths::results::ControllerReport& r) {
    EXPECT_TRUE(r.has_ukf_tf());
    return r.ukf_tf();
  }
};

template <class Controller>
std::unique_ptr<Controller> make(const FramePlantModel& model, bool hold = false) {
  typename Variant<Controller>::Config parameters;
  if (hold) {
    parameters.set_initial_covariance(1e-30);
    parameters.set_process_noise(0.0);
  }
  return std::make_unique<Controller>(parameters, model, kRateHz);
}

// With the true plant as its model and no noise, the command meets the target a step later to the
// inverse's own residual (0.1 % NRMS, as for the SS variants).
template <class Controller>
void tracks_a_multi_sine_without_latency() {
  const FramePlantModel truth = nominal_plant();
  const auto controller = make<Controller>(truth);
  const Trace t = simulate(*controller, truth, 10 * kSecond);
  EXPECT_EQ(controller->frozen(), EstimateFreeze::kNone) << controller->freeze_message();
  for (std::size_t i = 0; i < 2; ++i) EXPECT_LT(nrms(t, i, 2 * kSecond, t.target.size()), 1e-3) << i;
}

// Started on the true plant, with the benchmark's sensor noise, the estimate stays near it: the
// model's response in the band within 1 % after 30 s (Table 1's Q lets theta walk: 0.2-0.6 rad/s over
// the run).
template <class Controller>
void estimate_stays_near_the_true_plant() {
  const FramePlantModel truth = nominal_plant();
  const auto controller = make<Controller>(truth);
  simulate(*controller, truth, 30 * kSecond, kNoiseMm);
  EXPECT_EQ(controller->frozen(), EstimateFreeze::kNone) << controller->freeze_message();
  std::printf("[ measured ] %s band error after 30 s on the true plant: %.3g\n", Variant<Controller>::kName,
              band_error(controller->model(), truth));
  EXPECT_LT(band_error(controller->model(), truth), Variant<Controller>::kStayBound);
}

// Seed 003's premise: a plant whose roots are all 5 % above the model's (13 % band error) and the
// benchmark's sensor noise, 60 s of the multi-sine: the estimate moves toward it, the band error and
// the tracking error of the last 5 s shrinking by the variant's factor against the start's and the
// held model's.
template <class Controller>
void estimate_moves_toward_a_perturbed_plant() {
  const PerturbedRun r =
      run_on_perturbed_plant([](const FramePlantModel& model, bool hold) { return make<Controller>(model, hold); });
  ASSERT_GT(r.band_before, 0.12);
  EXPECT_EQ(r.freeze_message, "");
  const double factor = Variant<Controller>::kConvergence;
  EXPECT_LT(r.band_after, r.band_before / factor);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_LT(r.tracking[i], r.held[i] / factor) << "actuator " << i + 1;
}

// A reading that is not finite freezes the estimate (the shared guard); the report is the config's
// member.
template <class Controller>
void non_finite_reading_freezes_and_reports_as_its_member() {
  const FramePlantModel model = nominal_plant();
  const auto controller = make<Controller>(model);
  simulate(*controller, model, 100, 0.0, 0, [](std::size_t k, std::array<rths::Measurement, 2>& reading) {
    if (k == 50) reading[0].displacement_m = std::numeric_limits<double>::quiet_NaN();
  });
  EXPECT_EQ(controller->frozen(), EstimateFreeze::kNotFinite);
  EXPECT_EQ(controller->frozen_at_step(), 50);
  const std::string message = controller->freeze_message();
  EXPECT_EQ(message.rfind(Variant<Controller>::kName, 0), 0U) << message;
  EXPECT_NE(message.find(" estimation frozen at step 50"), std::string::npos) << message;
  rths::results::ControllerReport report;
  controller->report(0, report);
  const rths::results::InverseDynamicsReport& r = Variant<Controller>::report(report);
  EXPECT_TRUE(r.frozen());
  EXPECT_EQ(r.updates(), 49u);
  EXPECT_EQ(r.final_theta_size(), FramePlantModel::kRoots);
}

template <class Controller>
void command_allocates_nothing() {
  const FramePlantModel truth = nominal_plant();
  const auto controller = make<Controller>(truth);
  EXPECT_EQ(closed_loop_allocations(*controller, truth, kSecond), 0U);
  EXPECT_EQ(controller->updates(), kSecond - 1);
}

// At rest away from zero (a rig's offset), with the true model: the first update compares the
// reading of the start with the command that held the plant there, u0, and the estimate does not
// move. Targets and readings stay at y0 = (2, -1.5) mm for 300 steps. (Compared with 0 instead,
// the band error was 0.041. The UKF-TF's estimate moves at rest by the unscented transform's bias,
// 0.0048, so the EKF-TF's is the test of the shared start.)
template <class Controller>
void at_rest_away_from_zero_the_estimate_stays() {
  const FramePlantModel truth = nominal_plant();
  const auto controller = make<Controller>(truth);
  const std::array<rths::InterfaceMotion, 2> targets{rths::InterfaceMotion{0.002}, rths::InterfaceMotion{-0.0015}};
  const std::array<rths::Measurement, 2> readings{rths::Measurement{0.002}, rths::Measurement{-0.0015}};
  std::array<rths::InterfaceMotion, 2> commands{};
  for (int k = 0; k < 300; ++k) controller->command(targets, readings, commands, kDt);
  EXPECT_EQ(controller->frozen(), EstimateFreeze::kNone) << controller->freeze_message();
  EXPECT_LT(band_error(controller->model(), truth), 1e-9);
}

// Which readings of a run are held (none came), and what a held one carries.
struct Held {
  std::array<bool, 2> actuators{};  // whose reading is held every 500th step
  double off_m = 0.0;               // a held reading's value less the last that came
};
constexpr Held kNoneHeld{};
constexpr Held kBothRepeated{{true, true}, 0.0};
constexpr Held kBothWrong{{true, true}, 0.001};
constexpr Held kSecondRepeated{{false, true}, 0.0};
constexpr Held kSecondWrong{{false, true}, 0.001};

// The estimate after 30 s of the multi-sine on the true plant without noise, with the held readings
// HELD (a site's interface marks a reading that did not come as held and repeats the last that did).
template <class Controller>
FramePlantModel estimate_after_30_s(const Held& held) {
  const FramePlantModel truth = nominal_plant();
  const auto controller = make<Controller>(truth);
  std::array<double, 2> last_m{};  // the last reading that came
  simulate(*controller, truth, 30 * kSecond, 0.0, 0, [&](std::size_t k, std::array<rths::Measurement, 2>& previous) {
    for (std::size_t i = 0; i < 2; ++i) {
      previous[i].held = held.actuators[i] && k % 500 == 0 && k > 0;
      if (!previous[i].held) last_m[i] = previous[i].displacement_m;
      previous[i].displacement_m = previous[i].held ? last_m[i] + held.off_m : last_m[i];
    }
  });
  EXPECT_EQ(controller->frozen(), EstimateFreeze::kNone) << controller->freeze_message();
  return controller->model();
}

// Held readings now and then teach the estimate nothing: it ends where the same run without them
// ends, within the variant's bound (measured against that run rather than the true plant, so that
// the UKF-TF's own drift, the unscented transform's bias of 4e-3, does not hide a held reading's).
template <class Controller>
void held_readings_now_and_then_end_where_the_run_without_them_ends() {
  const FramePlantModel with_held = estimate_after_30_s<Controller>(kBothRepeated);
  const double apart = band_error(with_held, estimate_after_30_s<Controller>(kNoneHeld));
  std::printf(
      "[ measured ] %s: the estimates with and without a held reading every 500 are %.3g apart, "
      "%.3g from the true plant\n",
      Variant<Controller>::kName, apart, band_error(with_held, nominal_plant()));
  EXPECT_LT(apart, Variant<Controller>::kHeldBound);
}

// A held reading's value is never read: held readings 1 mm off the last one leave the estimate
// exactly where held readings that repeat it do, whether both actuators' are held or one's.
template <class Controller>
void a_held_readings_value_is_never_read() {
  EXPECT_EQ(band_error(estimate_after_30_s<Controller>(kBothWrong), estimate_after_30_s<Controller>(kBothRepeated)),
            0.0)
      << Variant<Controller>::kName << ", both held";
  EXPECT_EQ(band_error(estimate_after_30_s<Controller>(kSecondWrong), estimate_after_30_s<Controller>(kSecondRepeated)),
            0.0)
      << Variant<Controller>::kName << ", the second actuator's held";
}

// Each rule for each variant.
TEST(EkfTfController, AtRestAwayFromZeroTheEstimateStays) {
  at_rest_away_from_zero_the_estimate_stays<EkfTfInverseDynamicsController>();
}
TEST(EkfTfController, HeldReadingsNowAndThenEndWhereTheRunWithoutThemEnds) {
  held_readings_now_and_then_end_where_the_run_without_them_ends<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, HeldReadingsNowAndThenEndWhereTheRunWithoutThemEnds) {
  held_readings_now_and_then_end_where_the_run_without_them_ends<UkfTfInverseDynamicsController>();
}
TEST(EkfTfController, AHeldReadingsValueIsNeverRead) {
  a_held_readings_value_is_never_read<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, AHeldReadingsValueIsNeverRead) {
  a_held_readings_value_is_never_read<UkfTfInverseDynamicsController>();
}
TEST(EkfTfController, TracksAMultiSineWithoutLatency) {
  tracks_a_multi_sine_without_latency<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, TracksAMultiSineWithoutLatency) {
  tracks_a_multi_sine_without_latency<UkfTfInverseDynamicsController>();
}
TEST(EkfTfController, EstimateStaysNearTheTruePlant) {
  estimate_stays_near_the_true_plant<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, EstimateStaysNearTheTruePlant) {
  estimate_stays_near_the_true_plant<UkfTfInverseDynamicsController>();
}
TEST(EkfTfController, EstimateMovesTowardAPerturbedPlant) {
  estimate_moves_toward_a_perturbed_plant<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, EstimateMovesTowardAPerturbedPlant) {
  estimate_moves_toward_a_perturbed_plant<UkfTfInverseDynamicsController>();
}
TEST(EkfTfController, NonFiniteReadingFreezesAndReportsAsItsMember) {
  non_finite_reading_freezes_and_reports_as_its_member<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, NonFiniteReadingFreezesAndReportsAsItsMember) {
  non_finite_reading_freezes_and_reports_as_its_member<UkfTfInverseDynamicsController>();
}
TEST(EkfTfController, CommandAllocatesNothing) {
  command_allocates_nothing<EkfTfInverseDynamicsController>();
}
TEST(UkfTfController, CommandAllocatesNothing) {
  command_allocates_nothing<UkfTfInverseDynamicsController>();
}

}  // namespace
}  // namespace test_tf_controllers
