#include "support/allocation_limit.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace fiber::testing {
namespace {

constexpr size_t kNoLimit = ~size_t{0};
std::atomic<size_t> limit{kNoLimit};
std::atomic<size_t> largest_refused_request{0};

void* allocate(size_t size) {
  if (size > limit.load(std::memory_order_relaxed)) {
    size_t seen = largest_refused_request.load();
    while (size > seen && !largest_refused_request.compare_exchange_weak(seen, size)) {
    }
    throw std::bad_alloc();
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}

}  // namespace

AllocationLimit::AllocationLimit(size_t bytes) {
  largest_refused_request.store(0);
  limit.store(bytes);
}

AllocationLimit::~AllocationLimit() { limit.store(kNoLimit); }

size_t AllocationLimit::largest_refused() const { return largest_refused_request.load(); }

}  // namespace fiber::testing

// Aligned forms (new of over-aligned types) are left to the library: the decoders allocate none.
void* operator new(size_t size) { return fiber::testing::allocate(size); }
void* operator new[](size_t size) { return fiber::testing::allocate(size); }
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, size_t) noexcept { std::free(memory); }
