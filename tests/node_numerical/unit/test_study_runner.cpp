// The study runner: a pool that runs every job once, on no more threads than jobs, stops starting
// jobs when asked, and keeps the memory its running jobs hold within the budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "node_numerical/study/run.hpp"
#include "node_numerical/study/runner.hpp"
#include "node_numerical/study/study_file.hpp"

namespace rths::study::test_study_runner {
namespace {

const std::atomic<bool> kGoOn{false};

TEST(StudyRunner, EveryJobRunsExactlyOnce) {
  constexpr std::size_t kJobs = 64;
  std::vector<std::atomic<int>> runs(kJobs);
  PoolJob job;
  job.prepare = [](std::size_t) { return 0.0; };
  job.run = [&](std::size_t i) { ++runs[i]; };
  EXPECT_EQ(run_pool(kJobs, job, {4, 1.0}, kGoOn), 4U);
  for (std::size_t i = 0; i < kJobs; ++i) {
    EXPECT_EQ(runs[i].load(), 1) << "job " << i;
  }
}

TEST(StudyRunner, NoMoreThreadsThanJobs) {
  PoolJob job;
  job.prepare = [](std::size_t) { return 0.0; };
  job.run = [](std::size_t) {};
  EXPECT_EQ(run_pool(2, job, {8, 1.0}, kGoOn), 2U);
  EXPECT_EQ(run_pool(0, job, {8, 1.0}, kGoOn), 1U);
}

TEST(StudyRunner, AStopStartsNoJob) {
  const std::atomic<bool> stop{true};
  std::atomic<int> runs{0};
  PoolJob job;
  job.prepare = [](std::size_t) { return 0.0; };
  job.run = [&](std::size_t) { ++runs; };
  run_pool(10, job, {2, 1.0}, stop);
  EXPECT_EQ(runs.load(), 0);
}

TEST(StudyRunner, JobsRunningAtOnceHoldNoMoreThanTheBudget) {
  // 40 bytes each in a budget of 100: at most two at once, whatever the threads.
  constexpr double kNeed = 40.0;
  constexpr double kBudget = 100.0;
  std::mutex mutex;
  double held = 0.0;
  double most = 0.0;
  PoolJob job;
  job.prepare = [](std::size_t) { return kNeed; };
  job.run = [&](std::size_t) {
    {
      const std::scoped_lock lock(mutex);
      held += kNeed;
      most = std::max(most, held);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // so that runs would overlap
    const std::scoped_lock lock(mutex);
    held -= kNeed;
  };
  run_pool(12, job, {6, kBudget}, kGoOn);
  EXPECT_LE(most, kBudget);
  EXPECT_GE(most, kNeed);
}

// Whether `bytes` fit now: an acquire with the stop flag set holds them if they fit and returns at
// once, holding nothing, where a run would have to wait.
bool fits_now(MemoryBudget& budget, double bytes) {
  const std::atomic<bool> stopped{true};
  if (!budget.acquire(bytes, stopped)) {
    return false;
  }
  budget.release(bytes);
  return true;
}

TEST(StudyRunner, ARunWaitsUntilItsMemoryFits) {
  MemoryBudget budget(100.0);
  ASSERT_TRUE(budget.acquire(60.0, kGoOn));
  EXPECT_FALSE(fits_now(budget, 60.0));  // 120 of 100
  EXPECT_TRUE(fits_now(budget, 40.0));   // 100 of 100
  EXPECT_EQ(budget.held_bytes(), 60.0);
  budget.release(60.0);
  EXPECT_TRUE(fits_now(budget, 60.0));
  EXPECT_EQ(budget.held_bytes(), 0.0);
}

TEST(StudyRunner, ARunLargerThanTheBudgetRunsAlone) {
  MemoryBudget budget(100.0);
  EXPECT_TRUE(fits_now(budget, 500.0));  // nothing else held: it starts
  ASSERT_TRUE(budget.acquire(500.0, kGoOn));
  EXPECT_FALSE(fits_now(budget, 1.0)) << "a run started beside one over the whole budget";
  budget.release(500.0);
  ASSERT_TRUE(budget.acquire(1.0, kGoOn));
  EXPECT_FALSE(fits_now(budget, 500.0)) << "it started beside another run";
  budget.release(1.0);
}

TEST(StudyRunner, AStopEndsTheWaitHoldingNothing) {
  MemoryBudget budget(100.0);
  ASSERT_TRUE(budget.acquire(100.0, kGoOn));
  const std::atomic<bool> stop{true};
  EXPECT_FALSE(budget.acquire(1.0, stop));
  EXPECT_EQ(budget.held_bytes(), 100.0);
  budget.release(100.0);
}

TEST(StudyRunner, TheBudgetIsTheStudyConfigsWithItsSets) {
  // The process's budget: output.memory_budget_mb of the config after the study's `set` overrides.
  const std::string config = std::string(RTHS_SOURCE_DIR) + "/examples/seed002/spring.textproto";
  const StudyFile study =
      parse_study("config: \"" + config + "\"\nset: \"output.memory_budget_mb=8\"\n", "/studies/budget.study");
  EXPECT_EQ(check_study(study, study.grid, {0}, false).memory_budget_bytes, 8.0 * 1024 * 1024);
}

}  // namespace
}  // namespace rths::study::test_study_runner
