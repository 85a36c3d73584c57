#include "rths/common/gnuplot.hpp"

#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rths/common/child_process.hpp"

namespace rths {
namespace {

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
  for (const auto& s : scripts) {
    std::filesystem::remove(dir / (s + ".png"));
    int rc = 0;
    try {
      rc = run_gnuplot(*gnuplot, dir, s + ".gp", log);
    } catch (const std::system_error& e) {
      ++count.failed;
      spdlog::error("plot {}: cannot start {} in {} with its output to {}: {}", s, gnuplot->string(), dir.string(),
                    log.string(), e.code().message());
      continue;
    }
    if (rc == 0 && std::filesystem::exists(dir / (s + ".png"))) {
      ++count.made;
    } else {
      ++count.failed;
      const std::string said = last_line_of(log);
      spdlog::error("plot {}: gnuplot {}.gp in {} {}{}; see {}", s, s, dir.string(),
                    rc == 0 ? "made no PNG" : fmt::format("failed (exit {})", rc), said.empty() ? "" : ": " + said,
                    log.string());
    }
  }
  spdlog::info("plots: {} PNG of {} in {}", count.made, scripts.size(), dir.string());
  return count;
}

}  // namespace rths
