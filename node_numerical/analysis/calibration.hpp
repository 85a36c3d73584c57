#pragma once

#include <filesystem>
#include <string>

#include "common/config/config.hpp"
#include "experiment.pb.h"

namespace rths {

// Offline initialisation of every RLS compensator of an experiment (seed 001 §4.1, Eqs. 15-18):
// the monolithic reference is run under the experiment's ground motion, and each channel's interface
// motion is imposed open loop (command = target, no compensator) on that channel's actuator plant
// with its specimen and sensor noise; FF0 and P0 are the least-squares fit of the command on the
// measured taps. Throws ConfigError when no channel has an rls controller and an actuator.
config::RlsCalibration calibrate_rls(const LoadedConfig& loaded);

// Where `calibrate` writes by default: the calibration_path every rls channel names (resolved from
// the config's folder) when they all name one, else calibration.textproto in the current folder.
std::filesystem::path default_calibration_file(const LoadedConfig& loaded);

// The calibration in the text format the config's calibration_path reads, with a header comment.
std::string calibration_text(const config::RlsCalibration& calibration, const std::string& source);

}  // namespace rths
