#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "experiment.pb.h"

namespace rths {

// What the records of a run reserve before its first step. Every Recorder holds all its rows from
// the start (the step loop allocates nothing), so a run too long for the machine must be refused
// before anything starts, not die of std::bad_alloc halfway through (duration_s: 1e5 did, after
// 72 s). output.memory_budget_mb bounds what one process reserves (1 MB = 2^20 bytes).

constexpr double kBytesPerMb = 1024.0 * 1024.0;
constexpr double kBytesPerRecordedValue = 8.0;  // one double

// Steps of a run of duration_s at rate_hz: floor(duration_s rate_hz) + 1 (t = 0 included). A double,
// so that an absurd duration gives an absurd count instead of an integer overflow.
double run_steps(double duration_s, double rate_hz);
// A step count or size as a message shows it: in full below 1e15, else in three digits.
std::string count_text(double count);

// Columns of a site's record per channel: target, target_velocity, command, measured, force,
// model_error, status (after t and command_step).
inline constexpr std::size_t kSiteColumnsPerChannel = 7;
// A multi-axial site's record per actuator behind its setup: stroke target, command and reading.
inline constexpr std::size_t kColumnsPerActuator = 3;

// Columns of the numerical node's record, and of the reference's (the same): t, ag, per DOF x and v,
// per site channel u, f, e, fm and xm (NumericalNode). A test holds this to the recorders.
std::size_t numerical_record_columns(const config::Experiment& experiment);
// Columns of a site's record: t, command_step, per channel target, target_velocity, measured,
// force and model_error (PhysicalNode).
std::size_t site_record_columns(const config::Site& site);

// The records one process reserves for a run: rows x columns x 8 bytes, summed.
struct RecordBudget {
  double steps = 0;
  std::size_t columns = 0;
  std::string parts;  // which records, e.g. "numerical node 11, reference 11, site lab 7"

  [[nodiscard]] double bytes() const { return steps * static_cast<double>(columns) * kBytesPerRecordedValue; }
  [[nodiscard]] double megabytes() const { return bytes() / kBytesPerMb; }
};

// The records of rths-numerical: the numerical node and the reference and, with remote_sites_in_process
// (virtual time), every remote site's. In real time each site process checks its own.
RecordBudget numerical_process_records(const config::Experiment& experiment, double steps,
                                       bool remote_sites_in_process);

// "" when the records fit output.memory_budget_mb, else the second half of the error: what they
// need, of which records, and the budget.
std::string over_memory_budget(const config::Experiment& experiment, const RecordBudget& records);

// A site's answer to a start message announcing `steps` steps: "" when the site's record fits its
// output.memory_budget_mb, else the refusal to send back, naming the steps, the MB needed and the
// budget. Called before anything moves (rths-physical serve, after the handshake).
std::string site_start_refusal(const config::Experiment& experiment, const config::Site& site, std::int64_t steps);

}  // namespace rths
