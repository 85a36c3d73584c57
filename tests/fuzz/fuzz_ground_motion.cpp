// libFuzzer target: both ground-motion readers (two-column time/acceleration and PEER NGA AT2,
// common/dynamics/ground_motion.cpp), each fed the whole input as the text of a record file.
//
// Findings: a crash or sanitizer report; an exception that is not the readers' documented
// std::runtime_error, or whose message does not start with the file's name (every malformed
// record must be one line naming the file and line); a motion returned with a time step or a
// sample that is not finite (it would enter the integration, where nothing checks it again).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/dynamics/ground_motion.hpp"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_ground_motion finding: %s\n", what.c_str());
  std::abort();
}

void check_motion(const rths::GroundMotion& motion, const char* reader) {
  if (!(motion.dt_s() > 0.0) || !std::isfinite(motion.dt_s()) || !std::isfinite(motion.start_s())) {
    finding(std::string(reader) + " returned a motion with time step " + std::to_string(motion.dt_s()) + " s, start " +
            std::to_string(motion.start_s()) + " s");
  }
  for (std::size_t i = 0; i < motion.samples().size(); ++i) {
    if (!std::isfinite(motion.samples()[i])) {
      finding(std::string(reader) + " returned a non-finite sample at index " + std::to_string(i));
    }
  }
}

template <typename Read>
void read_and_check(const std::string& text, const std::string& name, const char* reader, const Read& read) {
  std::istringstream in(text);
  try {
    check_motion(read(in, name), reader);
  } catch (const std::runtime_error& e) {
    if (!std::string_view(e.what()).starts_with(name + ":")) {
      finding(std::string(reader) + " error does not name the file first: " + e.what());
    }
  } catch (const std::exception& e) {
    finding(std::string(reader) + " threw something other than std::runtime_error: " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes, the readers read text
  const std::string text(reinterpret_cast<const char*>(data), size);
  read_and_check(text, "record.dat", "read_two_column (g)", [](std::istream& in, const std::string& name) {
    return rths::read_two_column(in, name, rths::kStandardGravity);
  });
  read_and_check(text, "record.dat", "read_two_column (m/s^2)",
                 [](std::istream& in, const std::string& name) { return rths::read_two_column(in, name, 1.0); });
  read_and_check(text, "record.AT2", "read_peer_at2",
                 [](std::istream& in, const std::string& name) { return rths::read_peer_at2(in, name); });
  return 0;
}
