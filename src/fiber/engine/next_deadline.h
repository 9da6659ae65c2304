// The earliest deadline of the waits a service holds, readable without the runtime's lock: the
// polling thread checks it on every pass and takes the lock only when a wait is due. Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace fiber::internal {

class NextDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// A wait with `deadline` (none: no limit) was added.
  void note(std::optional<Clock::time_point> deadline) {
    if (!deadline) return;
    const int64_t ns = deadline->time_since_epoch().count();
    int64_t current = next_ns_.load();
    while (ns < current && !next_ns_.compare_exchange_weak(current, ns)) {
    }
  }
  /// Whether some wait may be due at `now`.
  bool due(Clock::time_point now) const {
    return now.time_since_epoch().count() >= next_ns_.load(std::memory_order_relaxed);
  }
  /// The earliest deadline left after expiring (none: no wait has one).
  void reset(std::optional<Clock::time_point> next) {
    next_ns_.store(next ? next->time_since_epoch().count() : INT64_MAX);
  }

 private:
  std::atomic<int64_t> next_ns_{INT64_MAX};
};

}  // namespace fiber::internal
