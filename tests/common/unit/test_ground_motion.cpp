// Ground-motion input: the records in examples/data, the text formats and their errors, and the synthetic
// Kanai-Tajimi motion.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <sys/stat.h>

#include "common/core/input_file.hpp"
#include "common/dynamics/ground_motion.hpp"
#include "common/ground_motions/synthetic_motion.hpp"
#include "experiment.pb.h"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test_ground_motion {
namespace {

std::filesystem::path data_record(const std::string& name) {
  return std::filesystem::path(RTHS_DATA_DIR) / "ground_motions" / name;
}

// A scratch folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("rths_gm_" + std::string(info->name()) + "_" + std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&&) = delete;
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  [[nodiscard]] std::filesystem::path write(const std::string& name, const std::string& text) const {
    auto file = path_ / name;
    std::ofstream(file) << text;
    return file;
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(GroundMotion, ElCentroLoadsWithPublishedPeak) {
  const GroundMotion motion = load_two_column(data_record("elcentro_1940_ns_g.dat"), kStandardGravity);
  EXPECT_EQ(motion.samples().size(), 2688U);
  // Times are printed with 8 significant digits: the mean step is 0.02 s to rounding.
  EXPECT_NEAR(motion.dt_s(), 0.02, 1e-12);
  EXPECT_DOUBLE_EQ(motion.start_s(), 0.0);
  EXPECT_NEAR(motion.duration_s(), 53.74, 1e-9);
  // ground_motions/README.md: PGA 0.3487 g; the file holds 0.34873739 g, so 1e-4 g is the
  // README's rounding, not slack in the loader.
  EXPECT_NEAR(motion.peak_m_per_s2() / kStandardGravity, 0.3487, 1e-4);
  EXPECT_EQ(motion.source(), "elcentro_1940_ns_g.dat");
}

TEST(GroundMotion, KobeInMetresPerSecondSquaredThroughTheConfig) {
  config::GroundMotion spec;
  spec.mutable_record()->set_path("kobe_1995_mps2.dat");
  spec.mutable_record()->set_unit(config::M_PER_S2);
  const GroundMotion motion = load_ground_motion(spec, data_record(""));
  // README: 0.02 s, 24.98 s, PGA 6.80 m/s^2 (rounded to 0.01 m/s^2, hence 0.005).
  EXPECT_NEAR(motion.dt_s(), 0.02, 1e-12);
  EXPECT_NEAR(motion.duration_s(), 24.98, 1e-9);
  EXPECT_NEAR(motion.peak_m_per_s2(), 6.80, 0.005);
}

TEST(GroundMotion, ConfigRecordIsConvertedScaledAndDescribed) {
  config::GroundMotion spec;
  spec.mutable_record()->set_path("elcentro_1940_ns_g.dat");  // unit defaults to g
  spec.set_scale(0.2);
  const GroundMotion scaled = load_ground_motion(spec, data_record(""));
  const GroundMotion raw = load_two_column(data_record("elcentro_1940_ns_g.dat"), 1.0);
  ASSERT_EQ(scaled.samples().size(), raw.samples().size());
  for (std::size_t i = 0; i < raw.samples().size(); i += 97) {
    // One multiplication by g and one by the scale: a few ulps.
    EXPECT_NEAR(scaled.samples()[i], raw.samples()[i] * kStandardGravity * 0.2, 1e-15);
  }
  EXPECT_NE(scaled.source().find("elcentro_1940_ns_g.dat"), std::string::npos) << scaled.source();
  EXPECT_NE(scaled.source().find("0.2"), std::string::npos) << scaled.source();
}

TEST(GroundMotion, InterpolatesLinearlyAndIsZeroOutsideTheRecord) {
  const GroundMotion motion = load_two_column(data_record("elcentro_1940_ns_g.dat"), kStandardGravity);
  const std::vector<double>& a = motion.samples();
  const double dt = motion.dt_s();
  // Linear interpolation is exact at the nodes and gives the mean at midpoints; only the rounding
  // of t / dt (a few ulps of the index) enters, times a sample difference below 1 m/s^2.
  constexpr double kRounding = 1e-12;
  for (std::size_t k = 0; k + 1 < a.size(); ++k) {
    const double t = static_cast<double>(k) * dt;
    ASSERT_NEAR(motion.at(t), a[k], kRounding) << "node " << k;
    ASSERT_NEAR(motion.at(t + 0.5 * dt), 0.5 * (a[k] + a[k + 1]), kRounding) << "midpoint after node " << k;
    ASSERT_NEAR(motion.at(t + 0.25 * dt), 0.75 * a[k] + 0.25 * a[k + 1], kRounding) << "quarter after node " << k;
  }
  EXPECT_NEAR(motion.at(motion.end_s()), a.back(), kRounding);
  EXPECT_EQ(motion.at(-1e-9), 0.0);
  EXPECT_EQ(motion.at(motion.end_s() + 1e-9), 0.0);
  EXPECT_EQ(motion.at(1e6), 0.0);
  EXPECT_EQ(GroundMotion().at(0.0), 0.0);
}

TEST(GroundMotion, RecordNotStartingAtZeroStartsThere) {
  const TempDir dir;
  const auto file = dir.write("late.dat", "# starts at 1.5 s\n\n1.5 2.0\n1.6 4.0\n1.7 -2.0\n");
  const GroundMotion motion = load_two_column(file, 1.0);
  EXPECT_DOUBLE_EQ(motion.start_s(), 1.5);
  EXPECT_NEAR(motion.end_s(), 1.7, 1e-12);
  EXPECT_EQ(motion.at(1.0), 0.0);
  EXPECT_NEAR(motion.at(1.5), 2.0, 1e-12);
  EXPECT_NEAR(motion.at(1.55), 3.0, 1e-12);
  EXPECT_NEAR(motion.at(1.65), 1.0, 1e-12);
  EXPECT_EQ(motion.at(1.71), 0.0);
}

TEST(GroundMotion, TwoColumnErrorsNameFileLineAndProblem) {
  const TempDir dir;
  const auto missing = dir.path() / "nowhere.dat";
  const std::string missing_error = test::error_of<std::runtime_error>([&] { (void)load_two_column(missing, 1.0); });
  EXPECT_NE(missing_error.find("cannot open"), std::string::npos) << missing_error;
  EXPECT_NE(missing_error.find("nowhere.dat"), std::string::npos) << missing_error;

  const auto malformed = dir.write("malformed.dat", "# header\n0.00 0.1\n0.01 0.2\n0.02 abc\n");
  const std::string malformed_error =
      test::error_of<std::runtime_error>([&] { (void)load_two_column(malformed, 1.0); });
  EXPECT_NE(malformed_error.find("malformed.dat:4:"), std::string::npos) << malformed_error;
  EXPECT_NE(malformed_error.find("two numbers"), std::string::npos) << malformed_error;

  const auto three = dir.write("three.dat", "0.00 0.1\n0.01 0.2 0.3\n");
  EXPECT_NE(test::error_of<std::runtime_error>([&] { (void)load_two_column(three, 1.0); }).find("three.dat:2:"),
            std::string::npos);

  const auto uneven = dir.write("uneven.dat", "0.00 0.1\n0.01 0.2\n0.02 0.3\n0.035 0.4\n");
  const std::string uneven_error = test::error_of<std::runtime_error>([&] { (void)load_two_column(uneven, 1.0); });
  EXPECT_NE(uneven_error.find("uneven.dat:4:"), std::string::npos) << uneven_error;
  EXPECT_NE(uneven_error.find("non-uniform"), std::string::npos) << uneven_error;

  // A step that differs by 1e-7 relative is within the 1e-6 tolerance.
  const auto almost = dir.write("almost.dat", "0.0 0.1\n1.0 0.2\n2.0000001 0.3\n");
  EXPECT_NO_THROW((void)load_two_column(almost, 1.0));

  const auto backwards = dir.write("backwards.dat", "0.00 0.1\n0.01 0.2\n0.01 0.3\n");
  const std::string backwards_error =
      test::error_of<std::runtime_error>([&] { (void)load_two_column(backwards, 1.0); });
  EXPECT_NE(backwards_error.find("backwards.dat:3:"), std::string::npos) << backwards_error;
  EXPECT_NE(backwards_error.find("does not increase"), std::string::npos) << backwards_error;

  const auto single = dir.write("single.dat", "# one sample\n0.0 0.1\n");
  const std::string single_error = test::error_of<std::runtime_error>([&] { (void)load_two_column(single, 1.0); });
  EXPECT_NE(single_error.find("single.dat:"), std::string::npos) << single_error;
  EXPECT_NE(single_error.find("at least 2"), std::string::npos) << single_error;
}

constexpr const char* kAt2Title =
    "PEER NGA STRONG MOTION DATABASE RECORD\n"
    "Imperial Valley 5/19/40, El Centro Array #9, 180\n"
    "ACCELERATION TIME SERIES IN UNITS OF G\n";

TEST(GroundMotion, PeerAt2ParsesBothHeaderVariants) {
  const TempDir dir;
  // Fortran E-format with the leading zero dropped, several values per line, last line short.
  const std::string values =
      "  .1000000E-01 -.2000000E-01  .3000000E-01 -.4000000E-01  .5000000E-01\n"
      "  .6000000E-01 -.7000000E-01\n";
  const auto keyed = dir.write("keyed.AT2", std::string(kAt2Title) + "NPTS=    7, DT=   .0050 SEC\n" + values);
  const auto positional =
      dir.write("positional.AT2", std::string(kAt2Title) + "    7    0.0050    NPTS, DT\n" + values);
  for (const auto& file : {keyed, positional}) {
    const GroundMotion motion = load_peer_at2(file);
    ASSERT_EQ(motion.samples().size(), 7U) << file;
    EXPECT_DOUBLE_EQ(motion.dt_s(), 0.005);
    // g converted with the standard gravity; one multiplication, so a relative 1e-15.
    EXPECT_NEAR(motion.samples()[1], -0.02 * kStandardGravity, 1e-15);
    EXPECT_NEAR(motion.samples()[6], -0.07 * kStandardGravity, 1e-15);
    EXPECT_NEAR(motion.peak_m_per_s2(), 0.07 * kStandardGravity, 1e-15);
  }
  // The same through the config, with the unit field ignored (AT2 is always in g) and a scale.
  config::GroundMotion spec;
  spec.mutable_record()->set_path("keyed.AT2");
  spec.mutable_record()->set_format(config::PEER_AT2);
  spec.set_scale(2.0);
  EXPECT_NEAR(load_ground_motion(spec, dir.path()).samples()[4], 0.1 * kStandardGravity, 1e-15);
}

TEST(GroundMotion, PeerAt2CountMismatchAndBadHeaderFail) {
  const TempDir dir;
  const auto short_file = dir.write("short.AT2", std::string(kAt2Title) +
                                                     "NPTS=    8, DT=   .0050 SEC\n"
                                                     "  .1E-01 -.2E-01  .3E-01\n");
  const std::string count_error = test::error_of<std::runtime_error>([&] { (void)load_peer_at2(short_file); });
  EXPECT_NE(count_error.find("short.AT2:"), std::string::npos) << count_error;
  EXPECT_NE(count_error.find("NPTS=8"), std::string::npos) << count_error;
  EXPECT_NE(count_error.find("found 3"), std::string::npos) << count_error;

  const auto no_header = dir.write("noheader.AT2", std::string(kAt2Title) + "SAMPLES FOLLOW\n .1 .2\n");
  const std::string header_error = test::error_of<std::runtime_error>([&] { (void)load_peer_at2(no_header); });
  EXPECT_NE(header_error.find("noheader.AT2:4:"), std::string::npos) << header_error;

  const auto bad_value = dir.write("badvalue.AT2", std::string(kAt2Title) + "NPTS= 3, DT= .01 SEC\n .1 x .3\n");
  EXPECT_NE(test::error_of<std::runtime_error>([&] { (void)load_peer_at2(bad_value); }).find("badvalue.AT2:5:"),
            std::string::npos);
}

// The NPTS/DT header of an AT2 file is untrusted input: 1e96 used to be cast to size_t (undefined
// behaviour) and 5e9 reserved 40 GB before a value was read.
TEST(GroundMotion, PeerAt2HeaderIsBoundedBeforeAnythingIsReserved) {
  const TempDir dir;
  const std::string values = "  .1E-01 -.2E-01  .3E-01\n";
  const auto header_error = [&](const std::string& name, const std::string& header) {
    const auto file = dir.write(name, std::string(kAt2Title) + header + "\n" + values);
    return test::error_of<std::runtime_error>([&] { (void)load_peer_at2(file); });
  };
  for (const auto& [name, header, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"huge.AT2", "NPTS= 1e96, DT= .01 SEC",
            "NPTS is 1e+96, expected a whole number of samples from 2 to 10000000"},
           {"over.AT2", "NPTS= 10000001, DT= .01 SEC", "NPTS is 10000001, expected a whole number"},
           {"negative.AT2", "NPTS= -5, DT= .01 SEC", "NPTS is -5, expected a whole number"},
           {"fraction.AT2", "NPTS= 3.5, DT= .01 SEC", "NPTS is 3.5, expected a whole number"},
           {"nan.AT2", "NPTS= nan, DT= .01 SEC", "expected NPTS and DT"},
           {"nandt.AT2", "NPTS= 3, DT= nan SEC", "expected NPTS and DT"},
           {"zerodt.AT2", "NPTS= 3, DT= 0 SEC", "DT is 0 s, expected > 0"},
           {"negdt.AT2", "NPTS= 3, DT= -.01 SEC", "DT is -0.01 s, expected > 0"},
           // Within the bound, but the 3 values after the header cannot be 5 million.
           {"roomless.AT2", "NPTS= 5000000, DT= .01 SEC", "has room for at most"},
       }) {
    const std::string error = header_error(name, header);
    EXPECT_NE(error.find(name + ":4: "), std::string::npos) << error;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
  // More values than NPTS stop at the first extra value's line: the file cannot fill memory.
  const auto extra = dir.write("extra.AT2", std::string(kAt2Title) + "NPTS= 2, DT= .01 SEC\n .1 .2\n .3 .4\n");
  const std::string extra_error = test::error_of<std::runtime_error>([&] { (void)load_peer_at2(extra); });
  EXPECT_NE(extra_error.find("extra.AT2:6: more values than line 4 says (NPTS=2)"), std::string::npos) << extra_error;
}

// After unit and scale no value may exceed 100 m/s^2 (10.2 g): a 1e308 in a file, a record in cm/s^2
// read as m/s^2, or a scale meant as a percentage is named by file and line instead of run.
TEST(GroundMotion, ValuesBeyondTenGAreNamedByFileAndLine) {
  const TempDir dir;
  const auto absurd = dir.write("absurd.dat", "0.00 0.1\n0.01 1e308\n0.02 0.1\n");
  const std::string absurd_error =
      test::error_of<std::runtime_error>([&] { (void)load_two_column(absurd, kStandardGravity); });
  EXPECT_NE(absurd_error.find("absurd.dat:2: acceleration 1e+308 is inf m/s^2 after unit and scale"), std::string::npos)
      << absurd_error;
  EXPECT_NE(absurd_error.find("beyond the 100 m/s^2"), std::string::npos) << absurd_error;

  // 0.5 g x 20 = 98 m/s^2 loads; x 21 = 103 m/s^2 does not, at the line of the 0.5 g value.
  const auto strong = dir.write("strong.dat", "0.00 0.1\n0.01 -0.5\n0.02 0.1\n");
  EXPECT_NEAR(load_two_column(strong, kStandardGravity, 20.0).peak_m_per_s2(), 98.0665, 1e-12);
  EXPECT_NE(test::error_of<std::runtime_error>([&] {
              (void)load_two_column(strong, kStandardGravity, 21.0);
            }).find("strong.dat:2: "),
            std::string::npos);

  // The same through the config: the scale is applied as the file is read.
  config::GroundMotion spec;
  spec.mutable_record()->set_path("strong.dat");
  spec.mutable_record()->set_unit(config::G);
  spec.set_scale(21.0);
  EXPECT_NE(
      test::error_of<std::runtime_error>([&] { (void)load_ground_motion(spec, dir.path()); }).find("strong.dat:2: "),
      std::string::npos);
  spec.set_scale(2.0);
  const GroundMotion scaled = load_ground_motion(spec, dir.path());
  EXPECT_EQ(scaled.source(), "strong.dat x 2");
  EXPECT_EQ(scaled.samples()[1], -0.5 * kStandardGravity * 2.0);  // the same two multiplications as before

  // Non-finite values in a file are refused at their line, in both formats.
  const auto nan_value = dir.write("nan.dat", "0.00 0.1\n0.01 nan\n");
  EXPECT_NE(test::error_of<std::runtime_error>([&] { (void)load_two_column(nan_value, 1.0); }).find("nan.dat:2: "),
            std::string::npos);
  const auto at2 = dir.write("absurd.AT2", std::string(kAt2Title) + "NPTS= 3, DT= .01 SEC\n .1 .2\n 1e308\n");
  const std::string at2_error = test::error_of<std::runtime_error>([&] { (void)load_peer_at2(at2); });
  EXPECT_NE(at2_error.find("absurd.AT2:6: acceleration 1e+308"), std::string::npos) << at2_error;
  const auto at2_inf = dir.write("inf.AT2", std::string(kAt2Title) + "NPTS= 3, DT= .01 SEC\n .1 .2 inf\n");
  EXPECT_NE(test::error_of<std::runtime_error>([&] { (void)load_peer_at2(at2_inf); }).find("inf.AT2:5: "),
            std::string::npos);
}

// A two-column record holds at most 10 million samples (80 MB); the next line is refused.
TEST(GroundMotion, TwoColumnRecordLengthIsBounded) {
  const TempDir dir;
  const auto file = dir.path() / "long.dat";
  {
    std::ofstream out(file);
    std::string chunk;
    for (std::size_t i = 0; i <= kMaxGroundMotionSamples; ++i) {
      chunk += std::to_string(i);
      chunk += " 0\n";
      if (chunk.size() > (1U << 20U)) {
        out << chunk;
        chunk.clear();
      }
    }
    out << chunk;
  }
  const std::string error = test::error_of<std::runtime_error>([&] { (void)load_two_column(file, 1.0); });
  EXPECT_NE(error.find("long.dat:10000001: more than 10000000 samples"), std::string::npos) << error;
}

TEST(GroundMotion, ValuesBeyondTheRangeOfADoubleAreRefusedWithTheirLine) {
  // Found by fuzzing: each gave an infinite sample or time step, which the integration would use.
  const auto two_column = [](const std::string& text, double unit_scale) {
    std::istringstream in(text);
    return test::error_of<std::runtime_error>([&] { (void)read_two_column(in, "range.dat", unit_scale); });
  };
  // 1e308 g is a finite number but not a finite acceleration in m/s^2.
  EXPECT_NE(two_column("0 0\n0.01 1e308\n", kStandardGravity).find("range.dat:2: acceleration 1e+308"),
            std::string::npos);
  // Uniform steps of 1e308 s: each is finite, the span of the record is not.
  EXPECT_NE(two_column("-1e308 0\n0 0\n1e308 0\n", 1.0).find("range.dat:3: time 1e+308 s is too far"),
            std::string::npos);

  std::istringstream at2(std::string(kAt2Title) + "NPTS= 2, DT= .01 SEC\n .5E+308 0\n");
  EXPECT_NE(test::error_of<std::runtime_error>([&] {
              (void)read_peer_at2(at2, "range.AT2");
            }).find("range.AT2:5: acceleration 5e+307"),
            std::string::npos);
}

config::SyntheticMotion synthetic_spec(std::uint64_t seed) {
  config::SyntheticMotion spec;
  spec.set_seed(seed);
  return spec;  // schema defaults: 30 s at 100 Hz, 2.5 Hz / 0.6 filter, PGA 0.7 m/s^2
}

// A record must be a regular file of bounded size, checked before a byte is read: /dev/zero (which
// never ends), a FIFO (whose open would block until a writer came) and a folder are refused at
// once, naming the file; so is a file beyond kMaxInputFileBytes and a line beyond kMaxInputLineBytes.
TEST(GroundMotion, ARecordThatIsNoRegularFileOrTooLargeIsRefusedBeforeItIsRead) {
  const test::ScratchFolder dir;
  const auto refusal = [](const std::filesystem::path& path, bool at2) {
    try {
      (void)(at2 ? load_peer_at2(path, 1.0) : load_two_column(path, kStandardGravity, 1.0));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  ASSERT_EQ(::mkfifo((dir.path() / "fifo.dat").c_str(), 0600), 0);
  const auto huge = dir.path() / "huge.dat";
  std::ofstream(huge) << "0 0.1\n";
  std::filesystem::resize_file(huge, kMaxInputFileBytes + 1);  // sparse: nothing is written
  const auto long_line = dir.path() / "long.dat";
  std::ofstream(long_line) << "0 0.1\n" << std::string(kMaxInputLineBytes + 1, '0') << "\n";
  for (const bool at2 : {false, true}) {
    EXPECT_EQ(refusal("/dev/zero", at2),
              "cannot open /dev/zero: it is a character device; expected a regular text file");
    EXPECT_EQ(refusal(dir.path() / "fifo.dat", at2),
              "cannot open " + (dir.path() / "fifo.dat").string() + ": it is a FIFO; expected a regular text file");
    EXPECT_EQ(refusal(dir.path(), at2), "cannot open " + dir.path().string() + ": Is a directory");
    EXPECT_EQ(refusal(huge, at2),
              huge.string() + ": holds 512.0 MiB (536870913 bytes); expected a text file of at most 512.0 MiB");
  }
  EXPECT_EQ(refusal(long_line, false),
            long_line.string() + ":2: a line longer than 1048576 bytes; expected a text file of shorter lines");
}

TEST(GroundMotion, SyntheticIsReproducibleAndSeedSensitive) {
  const GroundMotion first = make_synthetic(synthetic_spec(7));
  const GroundMotion again = make_synthetic(synthetic_spec(7));
  const GroundMotion other = make_synthetic(synthetic_spec(8));
  ASSERT_EQ(first.samples().size(), 3001U);  // 30 s at 100 Hz, both ends included
  EXPECT_DOUBLE_EQ(first.dt_s(), 0.01);
  // Bit-identical: the same seed must reproduce a run exactly.
  EXPECT_EQ(first.samples(), again.samples());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < first.samples().size(); ++i) {
    differing += first.samples()[i] != other.samples()[i] ? 1U : 0U;
  }
  // Apart from the zero start, independent noise differs essentially everywhere.
  EXPECT_GT(differing, first.samples().size() * 9 / 10);
  EXPECT_EQ(first.source(), "synthetic Kanai-Tajimi seed 7");
}

TEST(GroundMotion, SyntheticHasExactPeakZeroStartAndZeroMean) {
  for (const std::uint64_t seed : {1U, 2U, 3U}) {
    const GroundMotion motion = make_synthetic(synthetic_spec(seed));
    const std::vector<double>& a = motion.samples();
    // Scaled so that max |a| is the requested PGA: one division and multiplication, a few ulps.
    EXPECT_NEAR(motion.peak_m_per_s2(), 0.7, 1e-15);
    // The envelope is zero at t = 0 and the filter starts at rest.
    EXPECT_EQ(a.front(), 0.0);
    EXPECT_EQ(motion.at(0.0), 0.0);
    // Mean removed: the sum cancels to rounding (n ulps of the peak).
    const double sum = std::accumulate(a.begin(), a.end(), 0.0);
    EXPECT_LT(std::abs(sum), 1e-13 * static_cast<double>(a.size()));
    // Quadratic rise: the first 0.2 s (1 % of the rise intensity) stays far below the peak.
    double early_peak = 0.0;
    for (std::size_t i = 0; i <= 20; ++i) {
      early_peak = std::max(early_peak, std::abs(a[i]));
    }
    EXPECT_LT(early_peak, 0.1 * 0.7) << "seed " << seed;
  }
  config::GroundMotion spec;
  *spec.mutable_synthetic() = synthetic_spec(5);
  spec.set_scale(0.5);
  const GroundMotion scaled = load_ground_motion(spec, ".");
  EXPECT_NEAR(scaled.peak_m_per_s2(), 0.35, 1e-15);
  EXPECT_NE(scaled.source().find("synthetic Kanai-Tajimi seed 5"), std::string::npos) << scaled.source();
}

// Kanai-Tajimi power spectral density (up to a constant) at circular frequency omega.
double kanai_tajimi_psd(double omega, double omega_g, double zeta_g) {
  const double r2 = (omega / omega_g) * (omega / omega_g);
  const double damping_term = 4.0 * zeta_g * zeta_g * r2;
  return (1.0 + damping_term) / ((1.0 - r2) * (1.0 - r2) + damping_term);
}

TEST(GroundMotion, SyntheticSpectrumPeaksWhereKanaiTajimiDoes) {
  // A long stationary stretch (no rise or decay) so that a Welch average converges; damping 0.3
  // gives a peak sharp enough to locate (the default 0.6 is nearly flat from 1.5 to 2.5 Hz).
  constexpr double kDuration_s = 1200.0;
  config::SyntheticMotion spec;
  spec.set_seed(11);
  spec.set_duration_s(kDuration_s);
  spec.set_sample_rate_hz(50.0);
  spec.set_rise_s(0.0);
  spec.set_strong_s(kDuration_s);
  spec.set_ground_frequency_hz(2.5);
  spec.set_ground_damping(0.3);
  const GroundMotion motion = make_synthetic(spec);
  const std::vector<double>& a = motion.samples();

  // Welch: 1024-sample Hann segments (resolution 0.049 Hz), half overlap (116 segments), DFT up
  // to 8 Hz.
  constexpr std::size_t kSegment = 1024;
  const double fs = spec.sample_rate_hz();
  const double bin_hz = fs / kSegment;
  const auto bins = static_cast<std::size_t>(8.0 / bin_hz);
  std::vector<double> psd(bins, 0.0);
  std::vector<double> window(kSegment);
  for (std::size_t n = 0; n < kSegment; ++n) {
    window[n] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(n) / kSegment);
  }
  for (std::size_t start = 0; start + kSegment <= a.size(); start += kSegment / 2) {
    for (std::size_t bin = 1; bin < bins; ++bin) {
      std::complex<double> sum = 0.0;
      const double w = 2.0 * std::numbers::pi * static_cast<double>(bin) / kSegment;
      for (std::size_t n = 0; n < kSegment; ++n) {
        sum += window[n] * a[start + n] * std::polar(1.0, -w * static_cast<double>(n));
      }
      psd[bin] += std::norm(sum);
    }
  }
  // Smooth over 9 bins (0.44 Hz, well inside the 2 zeta f_g = 1.5 Hz half-power band) to quiet the
  // estimate; the theory below is smoothed the same way.
  constexpr std::size_t kHalfWidth = 4;
  const auto smoothed = [&](const auto& value_at_bin, std::size_t bin) {
    double sum = 0.0;
    for (std::size_t j = bin - kHalfWidth; j <= bin + kHalfWidth; ++j) {
      sum += value_at_bin(j);
    }
    return sum;
  };
  const auto measured = [&](std::size_t bin) { return psd[bin]; };
  std::vector<double> smooth(bins, 0.0);
  for (std::size_t bin = kHalfWidth + 1; bin + kHalfWidth < bins; ++bin) {
    smooth[bin] = smoothed(measured, bin);
  }
  const auto peak_bin = static_cast<std::size_t>(std::max_element(smooth.begin(), smooth.end()) - smooth.begin());
  const double peak_hz = static_cast<double>(peak_bin) * bin_hz;

  // Closed-form maximiser of the Kanai-Tajimi PSD: (omega/omega_g)^2 = (sqrt(1 + 8 zeta^2) - 1) / (4 zeta^2).
  const double zeta = spec.ground_damping();
  const double expected_hz =
      spec.ground_frequency_hz() * std::sqrt((std::sqrt(1.0 + 8.0 * zeta * zeta) - 1.0) / (4.0 * zeta * zeta));
  // Cross-check the closed form against the PSD itself (pure arithmetic, tight).
  const double omega_g = 2.0 * std::numbers::pi * spec.ground_frequency_hz();
  const double omega_p = 2.0 * std::numbers::pi * expected_hz;
  EXPECT_GT(kanai_tajimi_psd(omega_p, omega_g, zeta), kanai_tajimi_psd(omega_p * 1.001, omega_g, zeta));
  EXPECT_GT(kanai_tajimi_psd(omega_p, omega_g, zeta), kanai_tajimi_psd(omega_p * 0.999, omega_g, zeta));
  // The KT peak is flat (10 % of level spans ~0.3 Hz) and the estimate scatters by ~5 %; over
  // seeds 1-30 the located peak fell within 7.1 % of the closed form: allow 12 %.
  EXPECT_NEAR(peak_hz, expected_hz, 0.12 * expected_hz) << "peak at " << peak_hz << " Hz";

  // Shape away from the peak, where the spectrum has fallen by a factor of ~7: the smoothed
  // estimate at 2 f_g over the one at the peak follows the closed form, with the noise held over
  // each sample (sinc^2(f / fs)). Sampling folds the KT tail (it rolls off only as 1/f) back by a
  // further +4 % at 5 Hz; the ratio scatters by ~5 % (seeds 1-30: 0.97 to 1.13, one at 1.23):
  // allow 15 %.
  const auto theory = [&](std::size_t bin) {
    const double hz = static_cast<double>(bin) * bin_hz;
    const double x = std::numbers::pi * hz / fs;
    const double hold = (std::sin(x) / x) * (std::sin(x) / x);
    return kanai_tajimi_psd(2.0 * std::numbers::pi * hz, omega_g, zeta) * hold;
  };
  const auto bin_at = [&](double hz) { return static_cast<std::size_t>(std::lround(hz / bin_hz)); };
  const double measured_ratio = smooth[bin_at(5.0)] / smooth[bin_at(expected_hz)];
  const double expected_ratio = smoothed(theory, bin_at(5.0)) / smoothed(theory, bin_at(expected_hz));
  EXPECT_NEAR(measured_ratio / expected_ratio, 1.0, 0.15) << measured_ratio << " vs " << expected_ratio;
}

}  // namespace
}  // namespace rths::test_ground_motion
