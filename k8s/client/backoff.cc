#include "k8s/client/backoff.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace fiber::k8s {

Backoff::Backoff(BackoffOptions options)
    : options_(options), current_(options.initial), random_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::next() {
  std::uniform_real_distribution<double> stretch(0.0, std::max(0.0, options_.jitter));
  const auto delay = current_ * (1.0 + stretch(random_));
  const std::chrono::duration<double, std::milli> cap(options_.max);
  current_ = std::min(current_ * options_.factor, cap);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::min(delay, cap));
}

void Backoff::reset() { current_ = options_.initial; }

void sleep_unless_stopped(const std::stop_token& stop, std::chrono::milliseconds delay) {
  std::mutex mutex;
  std::condition_variable_any wakeup;
  std::unique_lock lock(mutex);
  // Nothing but the stop token wakes this wait: it ends at the deadline or on stop.
  wakeup.wait_for(lock, stop, delay, [] { return false; });
}

}  // namespace fiber::k8s
