// The controller's queue of object keys ("namespace/name") with client-go's guarantees: a key is
// queued once however often it is added, and no two workers ever process the same key at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "k8s/client/rate_limiter.h"

namespace fiber::k8s {

/// A rate-limited work queue. Thread-safe. Delayed adds need no thread of their own: get()
/// waits until the earliest one is due.
class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  /// A queue whose add_rate_limited() delays come from a RateLimiter with `limits`.
  explicit WorkQueue(RateLimiterOptions limits = {});
  /// Shuts down (waking every get()).
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  /// Queues `key` unless it is already queued. A key being processed is marked dirty and queued
  /// again when done() is called for it. Ignored after shut_down().
  void add(const std::string& key);
  /// Adds `key` once `delay` has passed (at once when delay <= 0). A key already waiting keeps
  /// the earlier of its two times.
  void add_after(const std::string& key, Clock::duration delay);
  /// Adds `key` after the rate limiter's delay for it (per-item exponential backoff, overall
  /// token bucket).
  void add_rate_limited(const std::string& key);
  /// Clears `key`'s backoff (call after it was processed successfully).
  void forget(const std::string& key);
  /// How many rate-limited adds `key` had since it was last forgotten.
  int num_requeues(const std::string& key) const;

  /// Blocks until a key is ready and hands it out, marking it as being processed; returns
  /// nullopt once the queue is shut down (keys still queued are dropped).
  std::optional<std::string> get();
  /// Like get(), but returns nullopt also when nothing is ready within `timeout`.
  std::optional<std::string> get_for(Clock::duration timeout);
  /// Ends the processing of `key`; if it was added meanwhile it is queued again.
  void done(const std::string& key);

  /// Number of keys ready to be handed out (not counting delayed or in-process keys).
  std::size_t depth() const;
  /// Number of keys waiting for an add_after() / add_rate_limited() delay.
  std::size_t waiting() const;
  /// Wakes all getters, which return nullopt; further adds are ignored.
  void shut_down();
  /// True after shut_down().
  bool shutting_down() const;

 private:
  struct Delayed {
    Clock::time_point ready_at;
    std::string key;
    friend bool operator>(const Delayed& a, const Delayed& b) { return a.ready_at > b.ready_at; }
  };

  void add_locked(const std::string& key);
  void move_due_locked(Clock::time_point now);
  std::optional<std::string> get_until(std::optional<Clock::time_point> deadline);

  RateLimiter limiter_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;       // queued or to be re-queued after done()
  std::set<std::string> processing_;  // handed out, done() not called yet
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;
  std::map<std::string, Clock::time_point> delayed_ready_at_;
  bool shutting_down_ = false;
};

}  // namespace fiber::k8s
