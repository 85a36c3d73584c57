// A run that went wrong never reports success: metrics propagate a non-finite sample instead of
// skipping it, and a non-finite state or force stops the run with exit code 9, in virtual and in
// real time, with the step named and every record written up to the stop.
// (The real-time run: realtime/test_non_finite.cpp.)
#include <gtest/gtest.h>

#include <memory>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/config/config.hpp"
#include "common/core/exit_codes.hpp"
#include "common/dynamics/linear_system.hpp"
#include "common/metrics/metrics.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/protocol/session_keys.hpp"
#include "common/transport/virtual_link.hpp"
#include "node_numerical/engine/experiment.hpp"
#include "node_numerical/engine/numerical_node.hpp"
#include "node_numerical/integrators/integrator.hpp"
#include "node_physical/actuators/linear_actuator.hpp"
#include "node_physical/plants/actuator_plant.hpp"
#include "smith_predictor/parts/force_estimator.hpp"
#include "smith_predictor/site_models/site_models.hpp"
#include "support/non_finite.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test_non_finite {
namespace {

using test::all_finite;
using test::NonFiniteRun;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// One period of a sine: peak 1, range 2, SD 1/sqrt(2) (closed forms).
std::vector<double> sine(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = std::sin(2.0 * M_PI * static_cast<double>(i) / static_cast<double>(n));
  }
  return v;
}

TEST(NonFiniteMetrics, PeakOfAHistoryWithANaNIsNaNWhereverItIs) {
  // std::max(peak, NaN) keeps peak: a NaN first, last or in the middle must all give NaN.
  EXPECT_TRUE(std::isnan(peak_abs(std::vector<double>{kNaN, 1.0, 2.0})));
  EXPECT_TRUE(std::isnan(peak_abs(std::vector<double>{1.0, kNaN, 2.0})));
  EXPECT_TRUE(std::isnan(peak_abs(std::vector<double>{1.0, 2.0, kNaN})));
  EXPECT_EQ(peak_abs(std::vector<double>{1.0, -kInf, 2.0}), kInf);
  EXPECT_TRUE(std::isnan(rms(std::vector<double>{1.0, kNaN})));
  EXPECT_EQ(peak_abs(std::vector<double>{1.0, -3.0, 2.0}), 3.0);
}

TEST(NonFiniteMetrics, EveryResponseMetricPropagatesANaNResponse) {
  const std::vector<double> reference = sine(1000);
  std::vector<double> response = reference;
  response[500] = kNaN;
  const ResponseMetrics m = compare_responses(response, reference);
  EXPECT_TRUE(std::isnan(m.peak));
  EXPECT_TRUE(std::isnan(m.j_peak_pct));
  EXPECT_TRUE(std::isnan(m.j_rms_pct));
  EXPECT_TRUE(std::isnan(m.rho));
  EXPECT_TRUE(std::isnan(m.sd));
  // The reference's own metrics stay what they are (closed forms of the sine).
  EXPECT_NEAR(m.reference_peak, 1.0, 1e-5);
  EXPECT_NEAR(m.reference_sd, 1.0 / std::sqrt(2.0), 1e-12);
  EXPECT_FALSE(m.finite());
}

TEST(NonFiniteMetrics, EveryResponseMetricPropagatesANaNReference) {
  const std::vector<double> response = sine(1000);
  std::vector<double> reference = response;
  reference[0] = kNaN;  // the first sample: minmax_element would step over it
  const ResponseMetrics m = compare_responses(response, reference);
  EXPECT_TRUE(std::isnan(m.reference_peak));
  EXPECT_TRUE(std::isnan(m.j_peak_pct));
  EXPECT_TRUE(std::isnan(m.j_rms_pct));
  EXPECT_TRUE(std::isnan(m.rho));
  EXPECT_TRUE(std::isnan(m.reference_sd));
  EXPECT_FALSE(m.finite());
}

TEST(NonFiniteMetrics, OnlyAZeroReferenceMayLeaveARatioUndefined) {
  const std::vector<double> clean = sine(1000);
  EXPECT_TRUE(compare_responses(clean, clean).finite());
  // A reference that never moves: J_peak, J_RMS and rho have no denominator (NaN by definition),
  // yet every number the histories hold is finite.
  const std::vector<double> zeros(1000, 0.0);
  const ResponseMetrics still = compare_responses(clean, zeros);
  EXPECT_TRUE(std::isnan(still.j_peak_pct));
  EXPECT_TRUE(still.finite());
  // An infinite response: the peak is infinite, J_peak too.
  std::vector<double> blown = clean;
  blown[10] = kInf;
  const ResponseMetrics inf = compare_responses(blown, clean);
  EXPECT_EQ(inf.peak, kInf);
  EXPECT_FALSE(inf.finite());
}

TEST(NonFiniteMetrics, TrackingCriteriaPropagateANaNFromEitherHistory) {
  const std::vector<double> target = sine(2048);
  std::vector<double> measured = target;
  measured[1000] = kNaN;
  for (const auto& m : {tracking_metrics(target, measured, 1024.0), tracking_metrics(measured, target, 1024.0)}) {
    EXPECT_TRUE(std::isnan(m.j1_delay_ms));
    EXPECT_TRUE(std::isnan(m.j2_nrms_pct));
    EXPECT_TRUE(std::isnan(m.j3_peak_pct));
  }
  // A zero target still gives zeros (documented), and a clean copy exact tracking.
  const std::vector<double> zeros(100, 0.0);
  EXPECT_EQ(tracking_metrics(zeros, zeros, 1024.0).j2_nrms_pct, 0.0);
  EXPECT_EQ(tracking_metrics(target, target, 1024.0).j3_peak_pct, 0.0);
}

TEST(NonFiniteMetrics, ARunWithANonFiniteMetricIsNotASuccess) {
  RunReport report;
  report.responses.emplace_back("x1", compare_responses(sine(100), sine(100)));
  EXPECT_EQ(non_finite_metrics(report), "");
  std::vector<double> nan_history = sine(100);
  nan_history[7] = kNaN;
  report.responses.emplace_back("x2", compare_responses(nan_history, sine(100)));
  const std::string why = non_finite_metrics(report);
  EXPECT_NE(why.find("x2"), std::string::npos) << why;
  EXPECT_EQ(why.find("x1"), std::string::npos) << why;

  RunReport tracked;
  SiteReport site;
  site.name = "lab";
  site.tracking.push_back(tracking_metrics(sine(100), nan_history, 1024.0));
  tracked.sites.push_back(site);
  EXPECT_NE(non_finite_metrics(tracked).find("site lab"), std::string::npos);
}

// The tests' own helpers obey the same rule: a bound on a NaN difference must fail, not pass.
TEST(NonFiniteGuards, TestHelpersDoNotSkipNaN) {
  EXPECT_TRUE(std::isnan(test::peak({1.0, kNaN, 2.0})));
  EXPECT_TRUE(std::isnan(test::max_diff({1.0, kNaN, 2.0}, {1.0, 1.0, 2.0})));
  Recorder a({{"x", "m"}}, 3);
  Recorder b({{"x", "m"}}, 3);
  for (const double v : {0.0, kNaN, 0.0}) {
    a.record(std::vector<double>{v});
    b.record(std::vector<double>{0.0});
  }
  EXPECT_TRUE(std::isnan(test::max_abs_difference(a, b, "x")));
}

// Guards written `!(|x| <= limit)` catch NaN; `|x| > limit` lets it through.
TEST(NonFiniteGuards, AStepLengthThatIsNaNIsRefused) {
  config::Structure spec;
  spec.set_dofs(1);
  spec.add_mass_kg(1000);
  spec.add_stiffness_n_per_m(1e6);
  const StructuralModel structure = make_structure(spec);
  const auto newmark = make_newmark(structure, 1.0 / 1024);
  StructuralState state{Eigen::VectorXd::Zero(1), Eigen::VectorXd::Zero(1), Eigen::VectorXd::Zero(1)};
  const GroundMotion ground(std::vector<double>{0.0, 1.0}, 0.01, "test");
  EXPECT_THROW(newmark->step(state, Eigen::VectorXd::Zero(1), ground, 0.0, kNaN), std::invalid_argument);

  const std::vector<double> numerator{100.0};
  const std::vector<double> denominator{1.0, 100.0};
  LinearActuator actuator(from_transfer_function(numerator, denominator), 1.0 / 1024);
  EXPECT_THROW((void)actuator.step(0.001, 0.0, kNaN), std::invalid_argument);
}

// A site that sends a NaN model error: the step that uses it stops the node, and the site gets no
// command computed from it (nothing non-finite reaches an actuator).
TEST(NonFiniteNode, ANaNForceFromASiteStopsTheNodeBeforeItSendsACommand) {
  config::Structure spec;
  spec.set_dofs(1);
  spec.add_mass_kg(1000);
  spec.add_stiffness_n_per_m(1e6);
  const StructuralModel structure = make_structure(spec);
  const GroundMotion ground(std::vector<double>{0.0, 1.0, 1.0}, 0.01, "test");
  VirtualClock clock(1024.0);
  VirtualLink link(clock, Impairment(), Impairment());
  config::Model spring;
  spring.mutable_spring()->set_stiffness_n_per_m(1e4);
  NumericalSite site;
  site.name = "lab";
  site.site_id = 1;
  site.influence = Eigen::MatrixXd::Constant(1, 1, -1.0);
  site.link = &link.numerical_end;
  site.estimators.push_back(make_force_estimator(config::MODIFIED_SMITH, make_model(spring), 0));
  std::vector<NumericalSite> sites;
  sites.push_back(std::move(site));
  constexpr std::uint64_t kSession = 42;
  NumericalNode node({kSession, 1024.0, 16, {"x1"}, {}, {}, {}}, structure, make_rk4(structure), ground, clock,
                     std::move(sites));
  clock.set_numerical_step(0);
  node.step(0);
  ASSERT_TRUE(node.finite());

  // The site's feedback for step 1 carries a NaN model error.
  auto site_codec_owner =
      std::make_unique<PacketCodec>(CodecRole::kSite, 1, virtual_session_keys(kSession, 1), 1024.0, 0);
  PacketCodec& site_codec = *site_codec_owner;
  clock.set_site_step(1);
  wire::Envelope& env = site_codec.start(clock.now_ns());
  wire::Feedback* fb = env.mutable_feedback();
  fb->set_echo_step(1);
  fb->add_model_error_n(kNaN);
  fb->add_force_n(0.0);
  fb->add_displacement_m(0.0);
  link.site_end.send(site_codec.seal());
  clock.set_numerical_step(1);
  node.step(1);
  EXPECT_FALSE(node.finite());
  EXPECT_EQ(node.non_finite_step(), 1);
  EXPECT_NE(node.non_finite_description().find("site \"lab\""), std::string::npos) << node.non_finite_description();
  EXPECT_EQ(node.recorder().rows(), 2U);  // rows 0 and 1: every step up to the stop

  // The site received the command step 0 computed, and none from step 1.
  clock.set_site_step(10);
  std::array<std::byte, kMaxDatagramBytes> rx{};
  std::vector<std::uint64_t> command_steps;
  while (const std::size_t n = link.site_end.receive(rx)) {
    ASSERT_EQ(site_codec.open(std::span(rx.data(), n), clock.now_ns()), DecodeStatus::kOk);
    if (site_codec.received().has_command()) command_steps.push_back(site_codec.received().command().step());
  }
  EXPECT_EQ(command_steps, std::vector<std::uint64_t>{1});
}

TEST_F(NonFiniteRun, VirtualTimeStopsAtTheFirstNonFiniteStepWithExitCode9) {
  Experiment ex(load_experiment(config_file()));
  const RunReport& report = ex.run();
  EXPECT_EQ(report.exit_code, kExitNonFinite) << report.stop_reason;
  ASSERT_GT(report.stop_step, 0);
  EXPECT_LT(report.stop_step, 200);  // ~90 steps of growth by 5e3 from the first ground motion
  // Steps 0..stop_step ran; the record holds each of them, every value finite (nothing after).
  EXPECT_EQ(report.steps, report.stop_step + 1);
  EXPECT_EQ(static_cast<std::int64_t>(ex.numerical().rows()), report.steps);
  EXPECT_DOUBLE_EQ(report.stop_time_s, static_cast<double>(report.stop_step) / 1024.0);
  for (const char* column : {"x1", "v_x1", "f_lab", "u_lab"}) {
    EXPECT_TRUE(all_finite(ex.numerical().column(ex.numerical().column_index(column)))) << column;
  }
  EXPECT_NE(report.stop_reason.find("step " + std::to_string(report.stop_step)), std::string::npos)
      << report.stop_reason;
  EXPECT_NE(report.stop_reason.find("non-finite"), std::string::npos) << report.stop_reason;
}

TEST_F(NonFiniteRun, TheCommandLineReportsWhyAndWhenAndWritesTheRecords) {
  const auto out = dir_ / "run";
  test::Process numerical("rths-numerical", {"run", config_file().string(), "--out", out.string()}, dir_ / "numerical");
  ASSERT_EQ(numerical.wait(std::chrono::seconds(60)), kExitNonFinite) << numerical.err();
  const results::RunSummary summary = test::read_summary(out / "summary.json");
  EXPECT_EQ(summary.exit_code(), kExitNonFinite) << summary.stop_reason();
  ASSERT_TRUE(summary.has_stop_step() && summary.has_stop_time_s());
  const std::int64_t stop_step = summary.stop_step();
  ASSERT_GT(stop_step, 0);
  EXPECT_DOUBLE_EQ(summary.stop_time_s(), static_cast<double>(stop_step) / 1024.0);
  EXPECT_EQ(summary.steps(), stop_step + 1);
  const std::string stopped = fmt::format("stopped: step {} (t = {:.6g} s) left the structure's state non-finite",
                                          stop_step, static_cast<double>(stop_step) / 1024);
  EXPECT_NE(numerical.out().find(stopped), std::string::npos) << numerical.out();
  const auto x1 = test::csv_column(out / "numerical.csv", "x1_m");
  EXPECT_EQ(static_cast<std::int64_t>(x1.size()), stop_step + 1);
  EXPECT_EQ(test::csv_column(out / "site_lab.csv", "t_s").size(), x1.size());
}

}  // namespace
}  // namespace rths::test_non_finite
