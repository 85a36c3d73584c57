#pragma once

#include <cstdint>

namespace rths::test {
// Heap allocations made by this test program so far (operator new is replaced in alloc_counter.cpp).
std::uint64_t allocations();
}  // namespace rths::test
