#include "common/records/gnuplot.hpp"

#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/core/child_process.hpp"

namespace rths {
namespace {

constexpr const char* kAllScripts = "all_plots.gp";

// The last line of a file with words on it (what gnuplot said last; not its "^" marker), or "".
std::string last_line_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r^") != std::string::npos) {
      last = line;
    }
  }
  return last;
}

// gnuplot SCRIPT run in dir (its names are relative), its output appended to log: the exit code.
// Throws std::system_error when it cannot be started.
int run_gnuplot(const std::filesystem::path& gnuplot, const std::filesystem::path& dir, const std::string& script,
                const std::filesystem::path& log) {
  SpawnOptions options;
  options.working_dir = dir;
  options.stdout_file = log;
  options.append = true;
  options.stderr_to_stdout = true;
  ChildProcess child({gnuplot.string(), script}, options);
  return child.wait();
}

// NAME.gp alone: true when it drew NAME.png; a failure is logged, naming the script and what gnuplot
// said last.
bool draw_alone(const std::filesystem::path& gnuplot, const std::filesystem::path& dir, const std::string& s,
                const std::filesystem::path& log) {
  int rc = 0;
  try {
    rc = run_gnuplot(gnuplot, dir, s + ".gp", log);
  } catch (const std::system_error& e) {
    spdlog::error("plot {}: cannot start {} in {} with its output to {}: {}", s, gnuplot.string(), dir.string(),
                  log.string(), e.code().message());
    return false;
  }
  if (rc == 0 && std::filesystem::exists(dir / (s + ".png"))) return true;
  std::filesystem::remove(dir / (s + ".png"));  // gnuplot opens it before it fails: no half-drawn PNG
  const std::string said = last_line_of(log);
  spdlog::error("plot {}: gnuplot {}.gp in {} {}{}; see {}", s, s, dir.string(),
                rc == 0 ? "made no PNG" : fmt::format("failed (exit {})", rc), said.empty() ? "" : ": " + said,
                log.string());
  return false;
}

}  // namespace

std::string gp_quote(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    q += c == '"' ? std::string("\\\"") : std::string(1, c);
  }
  return q + "\"";
}

std::string gp_png_header(const std::string& name) {
  return fmt::format(
      "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {{ set terminal pngcairo size 1000,650 noenhanced }} "
      "else {{ set terminal png size 1000,650 }}\n"
      "set termoption noenhanced\n"
      "set output {}\n"
      "set datafile missing \"NaN\"\n",
      gp_quote(name + ".png"));
}

PlotCount render_plots(const std::filesystem::path& dir, const std::vector<std::string>& scripts) {
  const auto gnuplot = find_program("gnuplot");
  if (!gnuplot) {
    spdlog::warn(
        "gnuplot is not installed: wrote {} plot scripts (.gp) in {} but no PNG; install gnuplot (Debian: "
        "gnuplot-nox, see deploy/setup.sh) and run `gnuplot NAME.gp` there",
        scripts.size(), dir.string());
    return {};
  }
  PlotCount count;
  const std::filesystem::path log = dir / "gnuplot.log";
  std::filesystem::remove(log);
  for (const auto& s : scripts) std::filesystem::remove(dir / (s + ".png"));
  // Every script in one gnuplot: starting one costs more than drawing a decimated figure. Each
  // starts from gnuplot's defaults (reset session) and closes its PNG (unset output).
  {
    std::ofstream all(dir / kAllScripts);
    all << "# Every plot of this folder in one gnuplot: gnuplot " << kAllScripts << "\n";
    for (const auto& s : scripts) all << "reset session\nload " << gp_quote(s + ".gp") << "\nunset output\n";
  }
  int rc = 0;
  try {
    rc = scripts.empty() ? 0 : run_gnuplot(*gnuplot, dir, kAllScripts, log);
  } catch (const std::system_error& e) {
    spdlog::error("plots: cannot start {} in {} with its output to {}: {}", gnuplot->string(), dir.string(),
                  log.string(), e.code().message());
    count.failed = scripts.size();
    return count;
  }
  if (rc == 0) {
    for (const auto& s : scripts) {
      if (std::filesystem::exists(dir / (s + ".png"))) {
        ++count.made;
      } else {
        ++count.failed;
        spdlog::error("plot {}: gnuplot {}.gp in {} made no PNG; see {}", s, s, dir.string(), log.string());
      }
    }
  } else {
    // A script failed and gnuplot stopped there: each again alone, so that each failure is named.
    spdlog::warn("plots: gnuplot {} in {} failed (exit {}); drawing each plot alone", kAllScripts, dir.string(), rc);
    for (const auto& s : scripts) {
      std::filesystem::remove(dir / (s + ".png"));
      if (draw_alone(*gnuplot, dir, s, log)) {
        ++count.made;
      } else {
        ++count.failed;
      }
    }
  }
  spdlog::info("plots: {} PNG of {} in {}", count.made, scripts.size(), dir.string());
  return count;
}

}  // namespace rths
