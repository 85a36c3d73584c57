// Virtual-time throughput (docs/performance.md): the seed 002 MR-damper case over the whole El
// Centro record, with every command and feedback packet encoded, delayed and decoded.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "rths/common/config.hpp"
#include "rths/node_numerical/experiment.hpp"

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

}  // namespace

BENCHMARK_MAIN();
