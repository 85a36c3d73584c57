// Virtual-time throughput (docs/performance.md): the seed 002 MR-damper case over the whole El
// Centro record, with every command and feedback packet encoded, delayed and decoded.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/config/config.hpp"
#include "common/records/record_writer.hpp"
#include "node_numerical/engine/experiment.hpp"

namespace {

rths::LoadedConfig damper_config(const char* voltage) {
  return rths::load_experiment(std::filesystem::path(RTHS_SOURCE_DIR) / "examples/seed002/damper_3v.textproto",
                               {std::string("site[0].channel[0].specimen.bouc_wen.voltage_v=") + voltage});
}

// The hybrid run alone: numerical node + remote site + links, 55,030 steps.
void BM_Seed002DamperHybridRun(benchmark::State& state) {
  const auto cfg = damper_config("3");
  std::int64_t steps = 0;
  for (auto _ : state) {
    state.PauseTiming();
    rths::Experiment ex(cfg);
    state.ResumeTiming();
    ex.run_hybrid_only();
    steps += ex.steps();
  }
  state.counters["steps_per_s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Seed002DamperHybridRun)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// What `rths-numerical run` computes: hybrid run, monolithic reference and the evaluation.
void BM_Seed002DamperRunWithReference(benchmark::State& state) {
  const auto cfg = damper_config("3");
  for (auto _ : state) {
    state.PauseTiming();
    rths::Experiment ex(cfg);
    state.ResumeTiming();
    benchmark::DoNotOptimize(ex.run());
  }
}
BENCHMARK(BM_Seed002DamperRunWithReference)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Building a run (config already parsed): loading the record, models, links, buffers.
void BM_Seed002Setup(benchmark::State& state) {
  const auto cfg = damper_config("3");
  for (auto _ : state) {
    rths::Experiment ex(cfg);
    benchmark::DoNotOptimize(&ex);
  }
}
BENCHMARK(BM_Seed002Setup)->Unit(benchmark::kMillisecond);

// The record writer's throughput (docs/performance.md, "Records on disk"): one whole record of a
// run streamed to a CSV by RecordWriter, with its default flush and sync periods (the last
// fdatasync included). rows_per_s against the 1024 rows/s a real-time run produces says whether CSV
// keeps up; MB_per_min is what a minute of the run costs on disk.
void stream_csv(benchmark::State& state, const rths::Recorder& rec) {
  spdlog::set_level(spdlog::level::warn);  // not the writer's info line per iteration
  const auto file = std::filesystem::temp_directory_path() / fmt::format("rths_bench_{}.csv", getpid());
  double rows = 0.0;
  double bytes = 0.0;
  for (auto _ : state) {
    rths::RecordWriter writer(rec, file);
    writer.finish();
    rows += static_cast<double>(writer.stats().rows);
    bytes += static_cast<double>(writer.stats().bytes);
  }
  std::filesystem::remove(file);
  state.counters["columns"] = static_cast<double>(rec.columns());
  state.counters["rows_per_s"] = benchmark::Counter(rows, benchmark::Counter::kIsRate);
  state.counters["MB_per_min"] = bytes / rows * 1024.0 * 60.0 / 1e6;
}

// numerical.csv of the seed 002 damper case: 11 columns, 55,030 rows.
void BM_Seed002DamperNumericalCsv(benchmark::State& state) {
  rths::Experiment ex(damper_config("3"));
  ex.run_hybrid_only();
  stream_csv(state, ex.numerical());
}
BENCHMARK(BM_Seed002DamperNumericalCsv)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// numerical.csv of one numerical node with 32 remote sites (a spring of k_s / 32 each, as in
// deploy/bench-realtime.sh): 134 columns, 20 s of a synthetic record.
void BM_ThirtyTwoSitesNumericalCsv(benchmark::State& state) {
  std::string text = R"(name: "scale-32"
structure {
  dofs: 2
  mass_kg: [2701, 0, 0, 2701]
  stiffness_n_per_m: [558343, -279171, -279171, 279171]
  damping_ns_per_m { value: [3684, -1228, -1228, 2456] }
}
ground_motion { synthetic { seed: 5 duration_s: 20 pga_m_per_s2: 0.7 } }
)";
  for (int i = 1; i <= 32; ++i) {
    text += fmt::format(
        "site {{ name: \"s{}\" influence: [-1, 0] channel {{ specimen {{ spring {{ stiffness_n_per_m: {} }} }} }} }}\n",
        i, 55834.4 / 32.0);
  }
  rths::LoadedConfig loaded;
  loaded.experiment = rths::parse_experiment(text, "scale-32");
  loaded.source = "scale-32";
  loaded.base_dir = std::filesystem::current_path();
  rths::Experiment ex(loaded);
  ex.run_hybrid_only();
  stream_csv(state, ex.numerical());
}
BENCHMARK(BM_ThirtyTwoSitesNumericalCsv)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
