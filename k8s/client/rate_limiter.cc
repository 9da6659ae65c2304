#include "k8s/client/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace fiber::k8s {

RateLimiter::RateLimiter(RateLimiterOptions options, std::function<Clock::time_point()> now)
    : options_(options),
      now_(now ? std::move(now) : [] { return Clock::now(); }),
      tokens_(options.burst),
      last_refill_(now_()) {}

std::chrono::nanoseconds RateLimiter::when(const std::string& item) {
  std::lock_guard lock(mutex_);
  return std::max(item_delay(item), bucket_delay());
}

std::chrono::nanoseconds RateLimiter::item_delay(const std::string& item) {
  const int previous_failures = failures_[item]++;
  // Doubling in floating point and comparing before converting avoids overflow on long streaks.
  const double delay = static_cast<double>(options_.base_delay.count()) *
                       std::pow(2.0, std::min(previous_failures, 1000));
  const double cap = static_cast<double>(options_.max_delay.count());
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::min(delay, cap)));
}

std::chrono::nanoseconds RateLimiter::bucket_delay() {
  if (options_.tokens_per_second <= 0) return std::chrono::nanoseconds(0);
  const Clock::time_point now = now_();
  const double elapsed = std::chrono::duration<double>(now - last_refill_).count();
  last_refill_ = now;
  tokens_ = std::min<double>(options_.burst, tokens_ + elapsed * options_.tokens_per_second);
  // Taking a token may leave the bucket in debt: the debt is the wait for this reservation,
  // so later callers queue up behind it at the bucket's rate.
  tokens_ -= 1.0;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(
      static_cast<std::int64_t>(-tokens_ / options_.tokens_per_second * 1e9));
}

void RateLimiter::forget(const std::string& item) {
  std::lock_guard lock(mutex_);
  failures_.erase(item);
}

int RateLimiter::num_requeues(const std::string& item) const {
  std::lock_guard lock(mutex_);
  const auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace fiber::k8s
