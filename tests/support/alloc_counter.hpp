#pragma once

#include <cstdint>

namespace rths::test {
// Heap allocations made by this test program so far (operator new is replaced in alloc_counter.cpp).
std::uint64_t allocations();
// Heap allocations made by the calling thread so far: what a step makes while other threads (a
// record writer, a logger) allocate as they please.
std::uint64_t allocations_on_this_thread();
}  // namespace rths::test
