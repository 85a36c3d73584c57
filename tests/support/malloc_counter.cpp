// Counts malloc through the linker's --wrap=malloc: every call of malloc in the objects linked into
// the test program reaches __wrap_malloc, which counts it and calls the real one (malloc_counter.hpp).
#include "support/malloc_counter.hpp"

#include "support/allocation_ceiling.hpp"

#include <cstddef>

namespace {
thread_local std::uint64_t t_mallocs = 0;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
}  // namespace

extern "C" {
void* __real_malloc(std::size_t size);   // NOLINT(bugprone-reserved-identifier): the linker's name
void* __wrap_malloc(std::size_t size) {  // NOLINT(bugprone-reserved-identifier): the linker's name
  ++t_mallocs;
  if (size > rths::test::t_allocation_ceiling) return nullptr;  // as an exhausted heap
  return __real_malloc(size);
}
}

std::uint64_t rths::test::mallocs_on_this_thread() {
  return t_mallocs;
}
