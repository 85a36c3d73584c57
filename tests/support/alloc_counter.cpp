// Replaces the global operator new of the test program to count allocations, so that tests can
// prove the real-time step allocates nothing (STYLE: the step loop allocates nothing).
#include "support/alloc_counter.hpp"

#include "support/allocation_ceiling.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
// The replaced operator new must count into global state: there is no object to own it.
std::atomic<std::uint64_t> g_allocations{0};   // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
thread_local std::uint64_t t_allocations = 0;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
}  // namespace

std::uint64_t rths::test::allocations() {
  return g_allocations.load(std::memory_order_relaxed);
}

std::uint64_t rths::test::allocations_on_this_thread() {
  return t_allocations;
}

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  if (size > rths::test::t_allocation_ceiling) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) {  // NOLINT(cppcoreguidelines-no-malloc): this is operator new
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void operator delete(void* p) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with the malloc in operator new
}
void operator delete(void* p, std::size_t /*size*/) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with the malloc in operator new
}
void operator delete[](void* p) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with the malloc in operator new
}
void operator delete[](void* p, std::size_t /*size*/) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with the malloc in operator new
}
// The nothrow forms (std::stable_sort's temporary buffer uses one) must be replaced too: otherwise
// they come from the runtime's allocator and are freed by the operator delete above.
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept {
  try {
    return operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with the malloc in operator new
}
void operator delete[](void* p, const std::nothrow_t& /*tag*/) noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with the malloc in operator new
}
