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

// Every form the program may pair with these deletes is replaced (a nothrow new freed by a plain
// delete, as libstdc++'s temporary buffers are, must come from the same allocator). Aligned forms
// are left to the library: the decoders allocate none.
void* operator new(size_t size) { return fiber::testing::allocate(size); }
void* operator new[](size_t size) { return fiber::testing::allocate(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  try {
    return fiber::testing::allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  try {
    return fiber::testing::allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, size_t) noexcept { std::free(memory); }
void operator delete(void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
