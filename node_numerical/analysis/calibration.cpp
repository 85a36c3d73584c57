#include "node_numerical/analysis/calibration.hpp"

#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include "node_numerical/engine/experiment.hpp"
#include "node_physical/controllers/rls_compensator.hpp"
#include "node_physical/plants/actuator_plant.hpp"

namespace rths {

namespace {

// The measured displacement of one channel's plant driven open loop by the target history.
std::vector<double> open_loop_response(const config::Channel& channel, std::span<const double> target, double rate_hz) {
  const double dt = 1.0 / rate_hz;
  const std::unique_ptr<Plant> plant = make_plant(channel, rate_hz);
  std::vector<double> measured;
  measured.reserve(target.size());
  double previous = 0.0;
  for (const double x : target) {
    const InterfaceMotion command{x, (x - previous) / dt, 0.0};
    previous = x;
    measured.push_back(plant->step(command, dt).displacement_m);
  }
  return measured;
}

}  // namespace

config::RlsCalibration calibrate_rls(const LoadedConfig& loaded) {
  // The calibration is what the file will hold: build the reference without it.
  LoadedConfig open_loop = loaded;
  for (auto& site : *open_loop.experiment.mutable_site()) {
    for (auto& channel : *site.mutable_channel()) {
      if (channel.controller().has_rls()) channel.mutable_controller()->mutable_rls()->clear_calibration_path();
    }
  }
  const config::Experiment& cfg = open_loop.experiment;
  config::RlsCalibration calibration;
  Experiment experiment(open_loop, RunMode::kVirtualTime);
  const Recorder* reference = nullptr;
  for (const auto& site : cfg.site()) {
    for (int c = 0; c < site.channel_size(); ++c) {
      const config::Channel& channel = site.channel(c);
      if (!channel.controller().has_rls() || !channel.has_actuator()) continue;
      if (reference == nullptr) reference = &experiment.run_reference_only();
      const std::string column =
          "u_" + channel_label(site.name(), static_cast<std::size_t>(site.channel_size()), static_cast<std::size_t>(c));
      const std::vector<double> target = reference->column(reference->column_index(column));
      const std::vector<double> measured = open_loop_response(channel, target, cfg.rate_hz());
      RlsInitialisation init;
      try {
        init = rls_least_squares(target, measured, static_cast<int>(channel.controller().rls().taps()));
      } catch (const std::invalid_argument& e) {
        throw ConfigError(fmt::format("{}: site[{}].channel[{}]: cannot calibrate: {}", loaded.source.string(),
                                      site.name(), c, e.what()));
      }
      auto& entry = *calibration.add_entry();
      entry.set_site(site.name());
      entry.set_channel(static_cast<std::uint32_t>(c));
      entry.set_samples(static_cast<std::uint32_t>(init.samples));
      for (Eigen::Index i = 0; i < init.ff.size(); ++i) entry.add_ff(init.ff(i));
      for (Eigen::Index i = 0; i < init.covariance.rows(); ++i) {
        for (Eigen::Index j = 0; j < init.covariance.cols(); ++j) entry.add_covariance(init.covariance(i, j));
      }
    }
  }
  if (calibration.entry_size() == 0) {
    throw ConfigError(
        fmt::format("{}: no channel has both an actuator {{ ... }} and controller {{ rls {{ ... }} }}; "
                    "nothing to calibrate",
                    loaded.source.string()));
  }
  return calibration;
}

std::filesystem::path default_calibration_file(const LoadedConfig& loaded) {
  std::string named;
  for (const auto& site : loaded.experiment.site()) {
    for (const auto& channel : site.channel()) {
      if (!channel.controller().has_rls() || !channel.controller().rls().has_calibration_path()) continue;
      const std::string& path = channel.controller().rls().calibration_path();
      if (!named.empty() && named != path) return "calibration.textproto";
      named = path;
    }
  }
  if (named.empty()) return "calibration.textproto";
  const std::filesystem::path p = named;
  return p.is_relative() ? loaded.base_dir / p : p;
}

std::string calibration_text(const config::RlsCalibration& calibration, const std::string& source) {
  std::string body;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(calibration, &body);
  return fmt::format(
      "# RLS initial values (seed 001 Eqs. 15-18) written by `rths-numerical calibrate {}`:\n"
      "# ff = FF0, covariance = P0 (row-major) from the open-loop plant under the reference motion (metres).\n"
      "# Reference it from the config: controller {{ rls {{ calibration_path: \"<this file>\" }} }}\n{}",
      source, body);
}

}  // namespace rths
