#include "rths/node_physical/site_controller.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "node_physical/controllers/actuator_controller.hpp"
#include "rths/node_physical/frame_plant_model.hpp"
#include "rths/node_physical/ukf_controller.hpp"

namespace rths {
namespace {

// One controller per actuator, each on its own stroke (seed 001's decentralised RLS): the actuators'
// coupling is left to each controller's adaptation.
class DecentralisedController final : public SiteController {
 public:
  explicit DecentralisedController(std::vector<std::unique_ptr<ActuatorController>> controllers)
      : controllers_(std::move(controllers)) {}
  [[nodiscard]] std::size_t actuators() const override { return controllers_.size(); }
  void command(std::span<const InterfaceMotion> targets, std::span<const Measurement> previous,
               std::span<InterfaceMotion> commands, double dt_s) override {
    for (std::size_t i = 0; i < controllers_.size(); ++i) {
      commands[i] = controllers_[i]->command(targets[i], previous[i], dt_s);
    }
  }
  void report(std::size_t actuator, results::ControllerReport& out) const override {
    controllers_[actuator]->report(out);
  }
  [[nodiscard]] std::string warning() const override {
    std::string all;
    for (std::size_t i = 0; i < controllers_.size(); ++i) {
      if (const std::string w = controllers_[i]->warning(); !w.empty()) {
        all += fmt::format("{}actuator {}: {}", all.empty() ? "" : "; ", i, w);
      }
    }
    return all;
  }

 private:
  std::vector<std::unique_ptr<ActuatorController>> controllers_;
};

}  // namespace

std::unique_ptr<SiteController> make_site_controller(const config::Site& site, double rate_hz) {
  const config::SiteController& controller = site.actuator_controller();
  switch (controller.kind_case()) {
    case config::SiteController::kDecentralised: {
      std::vector<std::unique_ptr<ActuatorController>> each;
      for (const config::Controller& c : controller.decentralised().actuator()) {
        each.push_back(make_controller(c, rate_hz));
      }
      return std::make_unique<DecentralisedController>(std::move(each));
    }
    case config::SiteController::kUkf: {
      // The estimate starts from the configured model, else from the site's plant as identified (its
      // nominal: the uncertainty is what the estimate must find).
      const config::UkfInverseDynamics& ukf = controller.ukf();
      const FramePlantModel initial = FramePlantModel::from_config(
          ukf.has_initial_model() ? ukf.initial_model() : site.actuator_plant().two_actuator_frame());
      return make_ukf_controller(ukf, initial, rate_hz);
    }
    case config::SiteController::KIND_NOT_SET:
      break;
  }
  throw std::invalid_argument("actuator_controller: has no controller the site can build");
}

}  // namespace rths
