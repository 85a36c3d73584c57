#pragma once

#include <cstdint>

namespace rths::test {
// Calls of malloc made by the calling thread from this test program's own code and the libraries
// linked into it statically (rths's, and the Eigen code compiled into them): Eigen allocates its
// temporaries with malloc, not operator new, so alloc_counter.hpp's count does not see them. The test
// program is linked with -Wl,--wrap=malloc (tests/CMakeLists.txt).
std::uint64_t mallocs_on_this_thread();
}  // namespace rths::test
