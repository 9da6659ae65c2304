// Lets a unit test refuse, and notice, any single allocation above a limit while a scope runs: a
// decoder handed a corrupt length must fail before it allocates, not after. Linking
// allocation_limit.cc replaces the program's global operator new.
#pragma once

#include <cstddef>

namespace fiber::testing {

/// While alive, any `operator new` of more than `limit` bytes on any thread throws std::bad_alloc
/// and is remembered; largest_refused() tells the largest such request (0 if none).
class AllocationLimit {
 public:
  explicit AllocationLimit(size_t limit);
  ~AllocationLimit();
  AllocationLimit(const AllocationLimit&) = delete;
  AllocationLimit& operator=(const AllocationLimit&) = delete;

  size_t largest_refused() const;
};

}  // namespace fiber::testing
