// How long a work-queue item waits before it is retried: the larger of a per-item exponential
// backoff and an overall token bucket, as client-go's default controller rate limiter.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace fiber::k8s {

/// Settings of RateLimiter.
struct RateLimiterOptions {
  /// First retry delay of an item; doubles with each further retry of the same item.
  std::chrono::nanoseconds base_delay = std::chrono::milliseconds(5);
  /// Cap of an item's delay (client-go's default, 1000 s).
  std::chrono::nanoseconds max_delay = std::chrono::seconds(1000);
  /// Overall rate of the token bucket (retries per second, all items together).
  double tokens_per_second = 10.0;
  /// Bucket size: this many retries pass at once before the rate applies.
  int burst = 100;
};

/// Computes retry delays. Thread-safe.
class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  /// `now` defaults to the steady clock; tests pass a fake one.
  explicit RateLimiter(RateLimiterOptions options = {},
                       std::function<Clock::time_point()> now = {});

  /// The delay before `item` is retried: max(base_delay * 2^(retries so far), capped at
  /// max_delay; the wait for a bucket token). Counts one retry of `item` and takes one token.
  std::chrono::nanoseconds when(const std::string& item);
  /// Forgets `item`'s retries: its next delay starts again at base_delay.
  void forget(const std::string& item);
  /// How many times when() was called for `item` since it was last forgotten.
  int num_requeues(const std::string& item) const;

 private:
  std::chrono::nanoseconds item_delay(const std::string& item);
  std::chrono::nanoseconds bucket_delay();

  RateLimiterOptions options_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mutex_;
  std::map<std::string, int> failures_;
  double tokens_;
  Clock::time_point last_refill_;
};

}  // namespace fiber::k8s
