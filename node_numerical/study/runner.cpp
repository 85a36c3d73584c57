#include "node_numerical/study/runner.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace rths::study {

namespace {

// How often a waiting run looks at the stop flag, and how often progress is reported.
constexpr auto kPoll = std::chrono::milliseconds(200);

}  // namespace

bool MemoryBudget::acquire(double bytes, const std::atomic<bool>& stop) {
  std::unique_lock lock(mutex_);
  while (holders_ > 0 && held_bytes_ + bytes > budget_bytes_) {
    if (stop.load()) {
      return false;
    }
    released_.wait_for(lock, kPoll);
  }
  held_bytes_ += bytes;
  ++holders_;
  return true;
}

void MemoryBudget::release(double bytes) {
  {
    const std::scoped_lock lock(mutex_);
    held_bytes_ -= bytes;
    --holders_;
    if (holders_ == 0) {
      held_bytes_ = 0.0;  // no rounding left over from the sums
    }
  }
  released_.notify_all();
}

double MemoryBudget::held_bytes() const {
  const std::scoped_lock lock(mutex_);
  return held_bytes_;
}

unsigned run_pool(std::size_t count, const PoolJob& job, const PoolOptions& options, const std::atomic<bool>& stop,
                  const std::function<void(std::size_t done)>& progress) {
  MemoryBudget budget(options.memory_budget_bytes);
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  const auto worker = [&]() {
    for (std::size_t i = next++; i < count && !stop.load(); i = next++) {
      const double bytes = job.prepare(i);
      if (!budget.acquire(bytes, stop)) {
        return;
      }
      job.run(i);
      budget.release(bytes);
      ++done;
    }
  };
  const auto threads =
      static_cast<unsigned>(std::min<std::size_t>(std::max(options.threads, 1U), std::max<std::size_t>(count, 1)));
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  while (progress && done.load() < count && !stop.load()) {
    progress(done.load());
    std::this_thread::sleep_for(kPoll);
  }
  for (auto& t : pool) {
    t.join();
  }
  return threads;
}

}  // namespace rths::study
