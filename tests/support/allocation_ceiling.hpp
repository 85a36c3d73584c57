#pragma once

#include <cstddef>
#include <cstdint>

namespace rths::test {

// The ceiling of this thread's allocations (SIZE_MAX: none). An inline variable, so that the counting
// operator new (alloc_counter.cpp) and the wrapped malloc (malloc_counter.cpp) read one ceiling in
// whichever program links either.
inline thread_local std::size_t t_allocation_ceiling =  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
    SIZE_MAX;

// While one is alive, an allocation on this thread of more than `bytes` fails as an exhausted heap
// fails: operator new throws std::bad_alloc, malloc (Eigen's) returns null, so Eigen throws it too.
// A test proves with it that an input whose header claims a huge size is refused before anything of
// that size is made, at once, where the allocation would otherwise take minutes and gigabytes.
class AllocationCeiling {
 public:
  explicit AllocationCeiling(std::size_t bytes) : previous_(t_allocation_ceiling) { t_allocation_ceiling = bytes; }
  ~AllocationCeiling() { t_allocation_ceiling = previous_; }
  AllocationCeiling(const AllocationCeiling&) = delete;
  AllocationCeiling& operator=(const AllocationCeiling&) = delete;
  AllocationCeiling(AllocationCeiling&&) = delete;
  AllocationCeiling& operator=(AllocationCeiling&&) = delete;

 private:
  std::size_t previous_;
};

}  // namespace rths::test
