#pragma once

// Starting the rths executables from tests as a lab engineer would, with their output in files.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "common/core/child_process.hpp"
#include "common/protocol/secret_key.hpp"
#include "common/records/results.hpp"
#include "node_numerical/study/csv.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_support.hpp"

namespace rths::test {

inline std::filesystem::path bin_dir() {
  return RTHS_BIN_DIR;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The last line of a text: a script's one-line reason for a skip (exit 77) at the end of its stderr.
inline std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  return text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
}

class Process {
 public:
  Process(const std::string& program, const std::vector<std::string>& args, const std::filesystem::path& log_prefix)
      : out_(log_prefix.string() + ".stdout"), err_(log_prefix.string() + ".stderr") {
    std::vector<std::string> all{(bin_dir() / program).string()};
    all.insert(all.end(), args.begin(), args.end());
    SpawnOptions options;
    options.stdout_file = out_;
    options.stderr_file = err_;
    try {
      child_.emplace(all, options);
    } catch (const std::system_error&) {
      // wait() answers -1: the program could not be started.
    }
  }

  // Exit code, or -1 when it did not end within timeout (it is then killed), 128+N for signal N.
  int wait(std::chrono::seconds timeout) {
    if (!child_ || !child_->running()) {
      return -1;
    }
    if (const auto code = child_->wait_for(timeout)) {
      return *code;
    }
    child_.reset();  // killed
    return -1;
  }
  void signal(int sig) const {
    if (child_) {
      child_->signal(sig);
    }
  }
  // Waits until stdout holds a line starting with prefix; returns the rest of it ("" on timeout).
  [[nodiscard]] std::string wait_for_line(const std::string& prefix, std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream in(slurp(out_));
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with(prefix)) {
          return line.substr(prefix.size());
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return {};
  }
  [[nodiscard]] std::string out() const { return slurp(out_); }
  [[nodiscard]] std::string err() const { return slurp(err_); }

 private:
  std::string out_;
  std::string err_;
  std::optional<ChildProcess> child_;
};

// Both NaN when a sample is: std::max would skip it, and a test bounding the result would pass.
inline double peak(const std::vector<double>& v) {
  double p = 0.0;
  for (const double x : v) {
    if (std::isnan(x)) {
      return x;
    }
    p = std::max(p, std::abs(x));
  }
  return p;
}

inline double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double diff = std::abs(a[i] - b[i]);
    if (std::isnan(diff)) {
      return diff;
    }
    d = std::max(d, diff);
  }
  return d;
}

// The summaries of a run folder, parsed against proto/results.proto with unknown fields refused: a
// field a writer emits that the schema lacks fails every test that reads the file. Throws (failing
// the test) with the file and protobuf's reason when the file is missing or does not parse.
inline results::RunSummary read_summary(const std::filesystem::path& file) {
  return read_results_json<results::RunSummary>(file);
}
inline results::SiteSummary read_site_summary(const std::filesystem::path& file) {
  return read_results_json<results::SiteSummary>(file);
}
inline results::RelaySummary read_relay_summary(const std::filesystem::path& file) {
  return read_results_json<results::RelaySummary>(file);
}

// A test with its own empty folder under the temporary folder, removed when the test passes (kept for
// a look, and named, when not).
class RunFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_folder("rths");
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { remove_unless_failed(dir_); }
  std::filesystem::path dir_;
};

// A test that runs deploy/netns-topology.sh under a namespace prefix of its own and takes the
// topology down after it (the script's trap removes it; this is the belt to its braces, and
// idempotent). tag tells the tests apart; the process id tells parallel ctest runs and a developer's
// own topology apart.
class NetnsTopologyTest : public RunFolderTest {
 protected:
  explicit NetnsTopologyTest(std::string tag) : tag_(std::move(tag)) {}
  void TearDown() override {
    Process down(script().string(), {"down", "--prefix", prefix()}, dir_ / "down");
    EXPECT_EQ(down.wait(std::chrono::seconds(30)), 0) << down.err();
    RunFolderTest::TearDown();
  }
  static std::filesystem::path script() { return source_dir() / "deploy" / "netns-topology.sh"; }
  [[nodiscard]] std::string prefix() const { return "rths" + tag_ + std::to_string(getpid()); }

 private:
  std::string tag_;
};

// The column names of an rths CSV's header.
inline std::vector<std::string> csv_header(const std::filesystem::path& file) {
  return study::parse_csv(slurp(file), true).header;
}

// Columns of an rths CSV by header name. A last line without its newline (cut by a kill) is not a
// row and is left out.
inline std::vector<double> csv_column(const std::filesystem::path& file, const std::string& name) {
  const study::CsvText csv = study::parse_csv(slurp(file), true);
  std::vector<double> out;
  const auto index = csv.column(name);
  if (!index) {
    return out;
  }
  for (const auto& row : csv.rows) {
    out.push_back(std::stod(row.at(*index)));
  }
  return out;
}

// Whether the record `csv` holds at least `rows` complete rows within `timeout` (a node's writer flushes
// every 0.25 s while its run goes on): to act a stated time into a test however late a loaded machine
// started it.
inline bool wait_for_rows(const std::filesystem::path& csv, std::size_t rows, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (std::filesystem::exists(csv) && csv_column(csv, "t_s").size() >= rows) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A fresh pre-shared key for site (dir/<site>.key, mode 0600) and the override that names it; both
// ends of a real-time test get it, as a lab gives both hosts the same key file.
inline std::string site_key_override(const std::filesystem::path& dir, const std::string& site) {
  const std::filesystem::path key = dir / (site + ".key");
  if (!std::filesystem::exists(key)) {
    write_key_file(key);
  }
  return "site[" + site + "].key_file=" + key.string();
}

// What a run through the relay ended with: every process's exit code (-1: it did not come up or did
// not end) and what the numerical node and the site printed on stderr.
struct RelayRun {
  int numerical = -1;
  int site = -1;
  int relay = -1;
  std::string numerical_err;
  std::string site_err;
};

// A real-time run through rths-relay on 127.0.0.1: `rths-physical serve` for site_name, the relay
// in front of it with the config's link impairments, and `rths-numerical run --realtime` aimed at
// the relay, all with the same overrides and a fresh site key. Leaves the files in
// dir/{site,relay,run}; the relay's report is printed. No expectation on the exit codes: for a test
// that decides what a run that ended otherwise means (a bridge that could not keep its target's time
// on a loaded machine); run_through_relay expects them.
inline RelayRun run_through_relay_outcome(const std::filesystem::path& dir, const std::string& config,
                                          const std::string& site_name, const std::vector<std::string>& overrides,
                                          double duration_s) {
  RelayRun out;
  std::vector<std::string> sets{"--set", site_key_override(dir, site_name)};
  for (const auto& o : overrides) {
    sets.insert(sets.end(), {"--set", o});
  }
  std::vector<std::string> site_args{
      "serve", config, "--site", site_name, "--listen", "127.0.0.1:0", "--out", (dir / "site").string(), "--quiet"};
  site_args.insert(site_args.end(), sets.begin(), sets.end());
  Process site("rths-physical", site_args, dir / "site");
  const std::string site_at = site.wait_for_line("listening on ", std::chrono::seconds(10));
  EXPECT_FALSE(site_at.empty()) << site.err();
  std::vector<std::string> relay_args{
      config, "--site", site_name, "--listen", "127.0.0.1:0", "--to", site_at, "--out", (dir / "relay").string()};
  relay_args.insert(relay_args.end(), sets.begin(), sets.end());
  Process relay("rths-relay", relay_args, dir / "relay");
  const std::string relay_at = relay.wait_for_line("relaying on ", std::chrono::seconds(10));
  EXPECT_FALSE(relay_at.empty()) << relay.err();
  if (site_at.empty() || relay_at.empty()) {
    return out;
  }
  std::vector<std::string> numerical_args{"run",
                                          config,
                                          "--realtime",
                                          "--set",
                                          "site[" + site_name + "].address=" + relay_at,
                                          "--set",
                                          "duration_s=" + std::to_string(duration_s),
                                          "--out",
                                          (dir / "run").string(),
                                          "--quiet"};
  numerical_args.insert(numerical_args.end(), sets.begin(), sets.end());
  Process numerical("rths-numerical", numerical_args, dir / "numerical");
  out.numerical = numerical.wait(std::chrono::seconds(static_cast<int>(duration_s) + 40));
  out.numerical_err = numerical.err();
  out.site = site.wait(std::chrono::seconds(20));
  out.site_err = site.err();
  // Idle for its default 2 s after the run: it ends by itself and reports.
  out.relay = relay.wait(std::chrono::seconds(20));
  EXPECT_EQ(out.relay, 0) << relay.err();
  std::printf("%s", relay.out().c_str());
  return out;
}

// run_through_relay_outcome expecting the numerical node's and the site's exit codes (a run the
// numerical node aborts ends the site with kExitPeerAborted). Returns the numerical node's exit code,
// -1 when a process did not come up.
inline int run_through_relay(const std::filesystem::path& dir, const std::string& config, const std::string& site_name,
                             const std::vector<std::string>& overrides, double duration_s, int expected_numerical = 0,
                             int expected_site = 0) {
  const RelayRun run = run_through_relay_outcome(dir, config, site_name, overrides, duration_s);
  if (run.numerical == -1 && run.site == -1) return -1;
  EXPECT_EQ(run.numerical, expected_numerical) << run.numerical_err;
  EXPECT_EQ(run.site, expected_site) << run.site_err;
  return run.numerical;
}

}  // namespace rths::test
