#include "common/dynamics/ground_motion.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/core/component_registry.hpp"
#include "common/core/input_file.hpp"
#include "common/core/text.hpp"
#include "experiment.pb.h"

namespace rths {

namespace {

// Relative tolerance on the time step of a two-column record: tighter than any real record's
// printing precision needs, loose enough for times printed with 7+ significant digits.
constexpr double kUniformStepTolerance = 1e-6;

// Error text `<path>:<line>: <what>` so an editor jumps to the offending line.
[[noreturn]] void fail_at(const std::filesystem::path& path, std::size_t line, const std::string& what) {
  throw std::runtime_error(path.string() + ":" + std::to_string(line) + ": " + what);
}

std::string shown(std::string_view text) {
  constexpr std::size_t kMaxShown = 60;
  std::string out(text.substr(0, kMaxShown));
  if (text.size() > kMaxShown) {
    out += "...";
  }
  return "'" + out + "'";
}

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == ',' || c == '\r';
}

void skip_separators(std::string_view& rest) {
  while (!rest.empty() && is_separator(rest.front())) {
    rest.remove_prefix(1);
  }
}

// Reads one number off the front of `rest` (Fortran-style `.0050`, `-1.4e-003` and a leading '+'
// accepted; nan/inf refused). std::from_chars, unlike strtod, ignores the locale, and it stops at
// the next sign, so fixed-width AT2 columns that run together (`.1E-02-.2E-02`) still split.
bool take_number(std::string_view& rest, double& value) {
  skip_separators(rest);
  if (rest.empty()) {
    return false;
  }
  std::string_view text = rest;
  if (text.front() == '+') {
    text.remove_prefix(1);
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || !std::isfinite(value)) {
    return false;
  }
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  // A number must end at a separator or where the next number's sign begins.
  return rest.empty() || is_separator(rest.front()) || rest.front() == '-' || rest.front() == '+';
}

// A value of the file times the unit and the scale must be a ground acceleration: beyond
// kMaxGroundAccelerationMPerS2 (or not finite after the multiplication) the file or the config is wrong.
double checked_acceleration(const std::filesystem::path& path, std::size_t line, double value, double unit_scale,
                            double scale) {
  const double acceleration = value * unit_scale * scale;
  if (!(std::abs(acceleration) <= kMaxGroundAccelerationMPerS2)) {
    fail_at(path, line,
            "acceleration " + format_number(value) + " is " + format_number(acceleration) +
                " m/s^2 after unit and scale (x " + format_number(unit_scale * scale) + "), beyond the " +
                format_number(kMaxGroundAccelerationMPerS2) +
                " m/s^2 (10.2 g) a ground motion may reach; expected a value in the record's unit (a unit "
                "mistake, a scale too large or a corrupt value?)");
  }
  return acceleration;
}

// Every sample past kMaxGroundMotionSamples is refused at its line: a record may not fill memory.
void check_sample_count(const std::filesystem::path& path, std::size_t line, std::size_t samples) {
  if (samples >= kMaxGroundMotionSamples) {
    fail_at(path, line,
            "more than " + std::to_string(kMaxGroundMotionSamples) +
                " samples; a ground motion holds at most that many (a 200 Hz record of 13.9 hours)");
  }
}

std::ifstream open_or_throw(const std::filesystem::path& path) {
  check_input_file(path);  // a regular file within its bound, before a byte is read
  std::ifstream in(path);
  if (!in) {
    const bool exists = std::filesystem::exists(path);
    throw std::runtime_error(path.string() + ": cannot open " +
                             (exists ? "(exists but is not readable)" : "(no such file)"));
  }
  return in;
}

}  // namespace

GroundMotion::GroundMotion(std::vector<double> acceleration_m_per_s2, double dt_s, std::string source, double start_s)
    : samples_(std::move(acceleration_m_per_s2)), dt_s_(dt_s), start_s_(start_s), source_(std::move(source)) {
  if (!(dt_s_ > 0.0) || !std::isfinite(dt_s_)) {
    throw std::invalid_argument("GroundMotion '" + source_ + "': time step is " + format_number(dt_s_) +
                                " s, expected a finite value > 0");
  }
  if (!std::isfinite(start_s_)) {
    throw std::invalid_argument("GroundMotion '" + source_ + "': start time is not finite");
  }
}

double GroundMotion::at(double t_s) const {
  const std::size_t count = samples_.size();
  if (count == 0) {
    return 0.0;
  }
  const double position = (t_s - start_s_) / dt_s_;
  const auto last = static_cast<double>(count - 1);
  // The negated form also sends NaN to 0 instead of into the index computation.
  if (!(position >= 0.0 && position <= last)) {
    return 0.0;
  }
  if (count == 1) {
    return samples_.front();
  }
  const auto index = std::min(static_cast<std::size_t>(position), count - 2);
  const double fraction = position - static_cast<double>(index);
  return samples_[index] + fraction * (samples_[index + 1] - samples_[index]);
}

double GroundMotion::duration_s() const {
  return samples_.empty() ? 0.0 : static_cast<double>(samples_.size() - 1) * dt_s_;
}

double GroundMotion::peak_m_per_s2() const {
  double peak = 0.0;
  for (const double a : samples_) {
    // std::max(peak, NaN) would keep peak: a NaN sample must show as a NaN peak.
    peak = std::isnan(a) ? a : std::max(peak, std::abs(a));
    if (std::isnan(peak)) {
      break;
    }
  }
  return peak;
}

GroundMotion load_two_column(const std::filesystem::path& path, double unit_scale, double scale) {
  std::ifstream in = open_or_throw(path);
  return read_two_column(in, path, unit_scale, scale);
}

GroundMotion load_peer_at2(const std::filesystem::path& path, double scale) {
  std::ifstream in = open_or_throw(path);
  return read_peer_at2(in, path, scale);
}

GroundMotion read_two_column(std::istream& in, const std::filesystem::path& path, double unit_scale, double scale) {
  std::vector<double> acceleration;
  double first_time_s = 0.0;
  double previous_time_s = 0.0;
  double first_step_s = 0.0;
  std::size_t first_step_line = 0;
  std::size_t line_number = 0;
  std::string line;
  while (read_input_line(in, line, path, line_number + 1)) {
    ++line_number;
    const std::string_view content = trim_blanks(line);
    if (content.empty() || content.front() == '#') {
      continue;
    }
    std::string_view rest = content;
    double time_s = 0.0;
    double value = 0.0;
    const bool two = take_number(rest, time_s) && take_number(rest, value);
    skip_separators(rest);
    if (!two || !rest.empty()) {
      fail_at(path, line_number, "expected two numbers (time in s, acceleration), found " + shown(content));
    }
    if (acceleration.empty()) {
      first_time_s = time_s;
    } else {
      const double step_s = time_s - previous_time_s;
      if (!(step_s > 0.0)) {
        fail_at(path, line_number,
                "time " + format_number(time_s) + " s does not increase (previous sample at " +
                    format_number(previous_time_s) + " s)");
      }
      // The time step is the span over the sample count: a span beyond a double would make it infinite.
      if (!std::isfinite(time_s - first_time_s)) {
        fail_at(path, line_number,
                "time " + format_number(time_s) + " s is too far from the first sample at " +
                    format_number(first_time_s) + " s");
      }
      if (acceleration.size() == 1) {
        first_step_s = step_s;
        first_step_line = line_number;
      } else if (!(std::abs(step_s - first_step_s) <= kUniformStepTolerance * first_step_s)) {
        fail_at(path, line_number,
                "non-uniform time step: " + format_number(step_s) + " s since the previous sample, expected " +
                    format_number(first_step_s) + " s as on line " + std::to_string(first_step_line));
      }
    }
    previous_time_s = time_s;
    check_sample_count(path, line_number, acceleration.size());
    acceleration.push_back(checked_acceleration(path, line_number, value, unit_scale, scale));
  }
  if (acceleration.size() < 2) {
    fail_at(path, line_number,
            "found " + std::to_string(acceleration.size()) +
                " sample(s); a record needs at least 2 lines of (time, acceleration)");
  }
  // The mean step over the whole record is the best estimate when times are printed rounded.
  const double dt_s = (previous_time_s - first_time_s) / static_cast<double>(acceleration.size() - 1);
  return {std::move(acceleration), dt_s, path.filename().string(), first_time_s};
}

GroundMotion read_peer_at2(std::istream& in, const std::filesystem::path& path, double scale) {
  std::string line;
  std::size_t line_number = 0;
  // PEER NGA: title, event/station, units line, then the NPTS/DT line.
  constexpr std::size_t kHeaderLines = 4;
  while (line_number < kHeaderLines) {
    ++line_number;
    if (!read_input_line(in, line, path, line_number)) {
      fail_at(path, line_number, "file ends inside the 4-line PEER AT2 header (NPTS and DT are on line 4)");
    }
  }
  const std::size_t header_line = line_number;
  const std::string_view header = trim_blanks(line);

  // Both variants: `NPTS=  4000, DT=   .0050 SEC` (keyed) and `4000   .0050   NPTS, DT` (values
  // first). Keyed values are taken after their '='; otherwise the first two numbers are NPTS, DT.
  std::string upper(header);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  const auto keyed = [&](std::string_view key, double& value) {
    const std::size_t at = upper.find(key);
    if (at == std::string::npos) {
      return false;
    }
    std::string_view rest = std::string_view(upper).substr(at + key.size());
    skip_separators(rest);
    if (rest.empty() || rest.front() != '=') {
      return false;
    }
    rest.remove_prefix(1);
    return take_number(rest, value);
  };
  double npts_value = 0.0;
  double dt_s = 0.0;
  if (!(keyed("NPTS", npts_value) && keyed("DT", dt_s))) {
    std::string_view rest = header;
    if (!(take_number(rest, npts_value) && take_number(rest, dt_s))) {
      fail_at(path, header_line,
              "expected NPTS and DT (e.g. 'NPTS=  4000, DT=   .0050 SEC' or '4000  .0050  NPTS, DT'), found " +
                  shown(header));
    }
  }
  // Checked before the count becomes an integer: 1e96 cast to size_t is undefined behaviour.
  if (!(npts_value >= 1.0) || npts_value != std::floor(npts_value) ||
      npts_value > static_cast<double>(kMaxGroundMotionSamples)) {
    fail_at(path, header_line,
            "NPTS is " + format_number(npts_value) + ", expected a whole number of samples from 2 to " +
                std::to_string(kMaxGroundMotionSamples));
  }
  if (!(dt_s > 0.0)) {
    fail_at(path, header_line, "DT is " + format_number(dt_s) + " s, expected > 0");
  }
  const auto npts = static_cast<std::size_t>(npts_value);
  // The header is not trusted with memory: every value takes at least two bytes (a digit and a
  // separator, the last one a digit), so the rest of the file bounds what it can hold.
  std::error_code size_error;
  const auto file_bytes = std::filesystem::file_size(path, size_error);
  const std::streamoff consumed = in.tellg();
  if (!size_error && consumed >= 0 && file_bytes >= static_cast<std::uintmax_t>(consumed)) {
    const std::uintmax_t room = (file_bytes - static_cast<std::uintmax_t>(consumed) + 1) / 2;
    if (npts > room) {
      fail_at(path, header_line,
              "NPTS=" + std::to_string(npts) + ", but the " + std::to_string(file_bytes) +
                  "-byte file has room for at most " + std::to_string(room) + " values after its header");
    }
  }

  // NPTS only claims how many values follow: reserving more than a long record needs would let a
  // wrong header exhaust memory before the count check below could name it.
  constexpr std::size_t kMaxReservedSamples = std::size_t{1} << 20;  // 8 MiB, 17 min at 1 kHz
  std::vector<double> acceleration;
  acceleration.reserve(std::min(npts, kMaxReservedSamples));
  while (read_input_line(in, line, path, line_number + 1)) {
    ++line_number;
    std::string_view rest = trim_blanks(line);
    skip_separators(rest);
    while (!rest.empty()) {
      double value_g = 0.0;
      if (!take_number(rest, value_g)) {
        fail_at(path, line_number, "expected acceleration values in g, found " + shown(rest));
      }
      if (acceleration.size() == npts) {
        fail_at(path, line_number,
                "more values than line " + std::to_string(header_line) + " says (NPTS=" + std::to_string(npts) + ")");
      }
      acceleration.push_back(checked_acceleration(path, line_number, value_g, kStandardGravity, scale));
      skip_separators(rest);
    }
  }
  if (acceleration.size() != npts) {
    fail_at(path, line_number,
            "found " + std::to_string(acceleration.size()) + " values, but line " + std::to_string(header_line) +
                " says NPTS=" + std::to_string(npts));
  }
  if (npts < 2) {
    fail_at(path, header_line, "NPTS=1; a record needs at least 2 samples");
  }
  return {std::move(acceleration), dt_s, path.filename().string()};
}

double ground_motion_scale(const ComponentContext& context) {
  const auto* motion = dynamic_cast<const config::GroundMotion*>(context.holder);
  return motion == nullptr ? 1.0 : motion->scale();
}

GroundMotion load_ground_motion(const config::GroundMotion& spec, const std::filesystem::path& base_dir) {
  const double scale = spec.scale();
  if (!std::isfinite(scale)) {
    throw std::invalid_argument("ground_motion.scale: is not finite");
  }
  // The source the oneof names, scaled (common/ground_motions/, docs/architecture.md §9).
  const std::unique_ptr<GroundMotion> scaled =
      ComponentFactories<GroundMotion>::make_member(spec, "source", ComponentContext{.base_dir = base_dir});
  if (scaled == nullptr) {
    throw std::invalid_argument("ground_motion: neither 'record' nor 'synthetic' is given");
  }
  if (scale == 1.0) {
    return std::move(*scaled);
  }
  std::vector<double> samples = scaled->samples();
  return {std::move(samples), scaled->dt_s(), scaled->source() + " x " + format_number(scale), scaled->start_s()};
}

}  // namespace rths
