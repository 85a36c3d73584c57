#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace rths::config {
class GroundMotion;
}  // namespace rths::config

namespace rths {

struct ComponentContext;

// A ground acceleration history on a uniform grid (m/s^2), read as a continuous signal by linear
// interpolation; zero before the start and after the end. Sample i is at start_s + i dt_s (a
// record whose first time is not 0 starts there).
class GroundMotion {
 public:
  GroundMotion() = default;
  // Throws std::invalid_argument unless dt_s > 0 and start_s are finite.
  GroundMotion(std::vector<double> acceleration_m_per_s2, double dt_s, std::string source, double start_s = 0.0);

  // O(1), allocation-free: the integrators call it at every stage of every step.
  [[nodiscard]] double at(double t_s) const;
  // Length of the record, (samples - 1) dt; the motion ends at end_s() = start_s() + duration_s().
  [[nodiscard]] double duration_s() const;
  [[nodiscard]] double start_s() const { return start_s_; }
  [[nodiscard]] double end_s() const { return start_s_ + duration_s(); }
  [[nodiscard]] double dt_s() const { return dt_s_; }
  [[nodiscard]] const std::vector<double>& samples() const { return samples_; }
  [[nodiscard]] double peak_m_per_s2() const;
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  std::vector<double> samples_;
  double dt_s_ = 0.0;
  double start_s_ = 0.0;
  std::string source_;
};

// Two-column text file: time (s), acceleration. The time step must be uniform (checked).
// unit_scale converts the file's unit to m/s^2 (9.80665 for g), scale multiplies after it. Throws
// std::runtime_error naming the file and line on anything malformed, on a value beyond
// kMaxGroundAccelerationMPerS2 after unit and scale, and past kMaxGroundMotionSamples samples.
GroundMotion load_two_column(const std::filesystem::path& path, double unit_scale, double scale = 1.0);
// PEER NGA .AT2 (acceleration in g, NPTS and DT on the fourth header line), times scale. NPTS must be a
// whole number up to kMaxGroundMotionSamples that the file has room for, DT > 0; the same value
// bound and file:line errors as load_two_column.
GroundMotion load_peer_at2(const std::filesystem::path& path, double scale = 1.0);
// The same readers on text already open (the loaders above call them; the fuzz targets feed them
// from memory). `path` names the text in messages and in source(), as if the text were that file.
GroundMotion read_two_column(std::istream& in, const std::filesystem::path& path, double unit_scale,
                             double scale = 1.0);
GroundMotion read_peer_at2(std::istream& in, const std::filesystem::path& path, double scale = 1.0);
// Whatever the config's ground_motion says, scaled; relative paths resolve against base_dir. Its
// source (record, synthetic) is the registered component its oneof names (common/ground_motions/).
GroundMotion load_ground_motion(const config::GroundMotion& spec, const std::filesystem::path& base_dir);
// What a ground-motion source multiplies its accelerations by: the scale of the ground motion that
// holds it (ComponentContext::holder, which the registry sets); 1 for a source made alone.
double ground_motion_scale(const ComponentContext& context);

constexpr double kStandardGravity = 9.80665;

// The largest ground acceleration a motion may reach after unit conversion and scale: 100 m/s^2, about
// 10.2 g. The strongest accelerations ever recorded are about 4 g (Iwate-Miyagi 2008, 4.36 g
// vertical), so any real record scaled for a test stays below it; beyond it lies a unit mistake (a
// record in cm/s^2 read as m/s^2 is 100x too large) or a corrupt value (1e308).
constexpr double kMaxGroundAccelerationMPerS2 = 100.0;
// The most samples a ground motion may hold: 10 million (80 MB), a 200 Hz record of 13.9 hours. A
// reader never reserves more than this, nor more than the file can hold, whatever its header says.
constexpr std::size_t kMaxGroundMotionSamples = 10'000'000;

}  // namespace rths
