// The equipment behind each driver the config can name, played by the tests: the registry's test
// that every driver has a fake (unit) and the contract tests driving each driver against it
// (realtime) share it. A driver added to config::Driver's oneof gets its fake in fakes().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>

#include "experiment.pb.h"
#include "node_physical/drivers/bridge_layout.hpp"
#include "node_physical/interfaces/plant_driver.hpp"
#include "support/fake_bridge_target.hpp"

namespace rths::test {

// The equipment behind a driver, played by the test: one channel whose readings the test sets.
// Answers are given ahead of the step that takes them (a driver waits a bounded time for its reply;
// the answer is then already there, and the test needs no clock).
class Equipment {
 public:
  Equipment() = default;
  Equipment(const Equipment&) = delete;
  Equipment& operator=(const Equipment&) = delete;
  Equipment(Equipment&&) = delete;
  Equipment& operator=(Equipment&&) = delete;
  virtual ~Equipment() = default;

  // A valid one-channel site whose driver reaches this equipment.
  [[nodiscard]] virtual config::Site site() const = 0;
  // Opens the driver against the equipment, which reads `displacement_m` and `force_n`.
  virtual void open(PlantDriver& driver, double displacement_m, double force_n, std::span<Measurement> measured) = 0;
  // The answer to step `step` (1, 2, ...): what the sensors read, the command in force the one sent.
  virtual void answer(std::uint32_t step, double displacement_m, double force_n, double applied_m) = 0;
  // An answer the driver cannot read: shorter than it expects.
  virtual void answer_of_wrong_size() = 0;
  // Forgets what the driver sent so far.
  virtual void drain() = 0;
};

// A real-time target behind a UDP bridge (the bridge's own tests' fake), on 127.0.0.1.
class UdpTarget final : public Equipment {
 public:
  [[nodiscard]] config::Site site() const override {
    config::Site s;
    s.set_name("lab");
    s.set_placement(config::REMOTE);
    auto* channel = s.add_channel();
    channel->set_stroke_limit_m(0.1);
    channel->set_velocity_limit_m_per_s(1.0);
    channel->set_force_limit_n(1e5);
    config::UdpBridge& bridge = *s.mutable_driver()->mutable_udp_bridge();
    bridge = target_.bridge();
    bridge.set_max_missed_replies(1000);
    return s;
  }
  void open(PlantDriver& driver, double displacement_m, double force_n, std::span<Measurement> measured) override {
    // open() blocks until its probe is answered: the target answers it from a thread.
    std::thread target([&] {
      BridgeChannel probe;
      (void)target_.next(probe);
      target_.reply(0, displacement_m, force_n);
    });
    driver.open(measured);
    target.join();
    target_.drain();
  }
  void answer(std::uint32_t step, double displacement_m, double force_n, double applied_m) override {
    target_.reply(step, displacement_m, force_n, 0, applied_m);
  }
  void answer_of_wrong_size() override {
    target_.send_raw(std::span<const std::byte>(short_.data(), target_.reply_bytes() - 4));
  }
  void drain() override { target_.drain(); }

 private:
  FakeTarget target_;
  std::array<std::byte, kMaxDatagramBytes> short_{};
};

// The fake equipment of each driver the oneof can hold, by member name.
inline const std::map<std::string, std::function<std::unique_ptr<Equipment>()>>& fakes() {
  static const std::map<std::string, std::function<std::unique_ptr<Equipment>()>> e{
      {"udp_bridge", [] { return std::make_unique<UdpTarget>(); }},
  };
  return e;
}

}  // namespace rths::test
