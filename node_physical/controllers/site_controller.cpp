#include "node_physical/controllers/site_controller.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "node_physical/controllers/actuator_controller.hpp"

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

// The rules of each actuator's controller; how many there must be is the site's rule (one per
// actuator of its setup). A calibration file is written by `rths-numerical calibrate` for a
// channel's controller, which the config loader reads it into; an actuator's RLS here takes its
// initial values inline.
void validate(const config::DecentralisedControllers& decentralised, const ComponentContext& context,
              const Checker& check) {
  for (int i = 0; i < decentralised.actuator_size(); ++i) {
    const config::Controller& controller = decentralised.actuator(i);
    check_component(controller, "kind", context, check.at("actuator", i));
    check.at("actuator", i)
        .at("rls")
        .expect(!(controller.has_rls() && controller.rls().has_calibration_path()), "calibration_path",
                "is a calibration file, which is for a channel's controller; an actuator of a decentralised site "
                "controller takes initial_ff and initial_covariance inline");
  }
}

std::unique_ptr<SiteController> make(const config::DecentralisedControllers& decentralised,
                                     const ComponentContext& context) {
  std::vector<std::unique_ptr<ActuatorController>> each;
  for (const config::Controller& c : decentralised.actuator()) each.push_back(make_controller(c, context.rate_hz));
  return std::make_unique<DecentralisedController>(std::move(each));
}

[[maybe_unused]] const bool kSiteControllerRegistered =
    register_site_controller<config::DecentralisedControllers>(validate, make);

}  // namespace

std::unique_ptr<SiteController> make_site_controller(const config::Site& site, double rate_hz) {
  std::unique_ptr<SiteController> made = ComponentFactories<SiteController>::make_member(
      site.actuator_controller(), "kind", ComponentContext{.rate_hz = rate_hz, .site = &site});
  if (made == nullptr) throw std::invalid_argument("actuator_controller: has no controller the site can build");
  return made;
}

}  // namespace rths
