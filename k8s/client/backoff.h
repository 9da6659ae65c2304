// Exponential backoff with jitter, for retrying a failed watch or election step.
#pragma once

#include <chrono>
#include <random>
#include <stop_token>

namespace fiber::k8s {

/// Delays of an exponential backoff: initial, then multiplied by `factor` after each failure,
/// at most `max`; each delay is stretched by a random fraction in [0, jitter].
struct BackoffOptions {
  std::chrono::milliseconds initial{800};
  double factor = 2.0;
  double jitter = 0.5;
  std::chrono::milliseconds max{30'000};
};

/// Hands out growing delays until reset() (after a success). Not thread-safe.
class Backoff {
 public:
  explicit Backoff(BackoffOptions options = {});
  /// The delay to wait before the next attempt; grows after each call.
  std::chrono::milliseconds next();
  /// Back to the initial delay.
  void reset();

 private:
  BackoffOptions options_;
  std::chrono::duration<double, std::milli> current_;
  std::mt19937_64 random_;
};

/// Waits `delay`, or less when `stop` is requested meanwhile (from any thread).
void sleep_unless_stopped(const std::stop_token& stop, std::chrono::milliseconds delay);

}  // namespace fiber::k8s
