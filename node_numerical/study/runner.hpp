#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace rths::study {

// The records of the runs a study holds at once in its process, within output.memory_budget_mb: the
// budget bounds what one process reserves (common/config/memory_budget.hpp), and a study's process holds a
// run per thread. A run asks for its bytes before it starts and gives them back when it ends.
class MemoryBudget {
 public:
  explicit MemoryBudget(double bytes) : budget_bytes_(bytes) {}

  // Waits until `bytes` more fit, then holds them; a run larger than the whole budget waits until
  // nothing else is held and then runs alone (its own check refuses it if it is over its own budget).
  // False, holding nothing, when stop was set while it waited.
  bool acquire(double bytes, const std::atomic<bool>& stop);
  void release(double bytes);
  [[nodiscard]] double held_bytes() const;
  [[nodiscard]] double budget_bytes() const { return budget_bytes_; }

 private:
  double budget_bytes_;
  double held_bytes_ = 0.0;
  std::size_t holders_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable released_;
};

// One job of a pool: prepare returns the bytes it will hold (read before it may start: a config
// loaded, its records sized), run does it. Both catch what they throw themselves.
struct PoolJob {
  std::function<double(std::size_t job)> prepare;
  std::function<void(std::size_t job)> run;
};

struct PoolOptions {
  unsigned threads = 1;
  double memory_budget_bytes = 0.0;
};

// Runs jobs 0 .. count-1 on min(threads, count) threads, each taking the next job not taken, each job
// within the memory budget. Once stop is set no job starts; the jobs running finish. progress, when
// given, is called on the calling thread with the count of jobs done about every 200 ms while they
// run. Returns the threads it started.
unsigned run_pool(std::size_t count, const PoolJob& job, const PoolOptions& options, const std::atomic<bool>& stop,
                  const std::function<void(std::size_t done)>& progress = {});

}  // namespace rths::study
